// Package sqlitetest holds what the tests of SQLite stores share: the stores the apps' own code
// made (heal/sqlitedb/testdata), a writer in the apps' style, a process that holds a file
// open. Only tests import it.
package sqlitetest

import (
	"bytes"
	"compress/gzip"
	"context"
	"database/sql/driver"
	"fmt"
	"io"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"modernc.org/sqlite"
)

// The stores the apps' own code made (see heal/sqlitedb/testdata and samples/opencode).
const (
	OpenClaw = "openclaw-agent-2026.9.6.sqlite.gz" // OpenClaw 2026.9.6: one session, 6 transcript events
	OpenCode = "opencode-1.18.33.db.gz"            // OpenCode 1.18.33: one project, 5 sessions
)

// Fixture is the store name as its app made it.
func Fixture(t testing.TB, name string) []byte {
	t.Helper()
	_, here, _, _ := runtime.Caller(0)
	f, err := os.Open(filepath.Join(filepath.Dir(here), "..", "..", "heal", "sqlitedb", "testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	z, err := gzip.NewReader(f)
	if err != nil {
		t.Fatal(err)
	}
	var b bytes.Buffer
	if _, err := io.Copy(&b, z); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

// Place writes the store name at path (its directories made), as its app left it.
func Place(t testing.TB, name, path string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, Fixture(t, name), 0o600); err != nil {
		t.Fatal(err)
	}
}

// EditPage rewrites page n (of 4096 bytes, the apps' page size) of the closed store at path.
func EditPage(t testing.TB, path string, n int, edit func(page []byte)) {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	edit(data[(n-1)*4096 : n*4096])
	if err := os.WriteFile(path, data, 0o600); err != nil {
		t.Fatal(err)
	}
}

// StaleOpenClawEntry makes one entry of idx_agent_transcript_event_sequence (page 86) of the
// live OpenClaw store at path stale, through SQLite (sqlite_dbpage), whoever else writes to it.
func StaleOpenClawEntry(t testing.TB, path string) {
	t.Helper()
	c := Open(t, path, "mode=rw&_pragma=busy_timeout(5000)")
	defer c.Close()
	row, err := Row(c, "SELECT data FROM sqlite_dbpage WHERE pgno=86")
	if err != nil {
		t.Fatal(err)
	}
	page := append([]byte(nil), row[0].([]byte)...)
	page[3842] = 7
	if err := Exec(c, "UPDATE sqlite_dbpage SET data=? WHERE pgno=86", driver.NamedValue{Ordinal: 1, Value: page}); err != nil {
		t.Fatal(err)
	}
}

// Open is a connection to the store at path with SQLite's URI parameters q.
func Open(t testing.TB, path, q string) driver.Conn {
	t.Helper()
	c, err := (&sqlite.Driver{}).Open((&url.URL{Scheme: "file", Path: path, RawQuery: q}).String())
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// Exec runs q on c.
func Exec(c driver.Conn, q string, args ...driver.NamedValue) error {
	_, err := c.(driver.ExecerContext).ExecContext(context.Background(), q, args)
	return err
}

// Row is the first row of q on c (nil: none, or an error, said in err).
func Row(c driver.Conn, q string) ([]driver.Value, error) {
	rs, err := c.(driver.QueryerContext).QueryContext(context.Background(), q, nil)
	if err != nil {
		return nil, err
	}
	defer rs.Close()
	row := make([]driver.Value, len(rs.Columns()))
	if err := rs.Next(row); err != nil {
		return nil, err
	}
	return row, nil
}

// Count is the integer q returns (-1 when the store cannot answer it).
func Count(t testing.TB, path, q string) int64 {
	t.Helper()
	c, err := (&sqlite.Driver{}).Open((&url.URL{Scheme: "file", Path: path, RawQuery: "mode=rw&_pragma=query_only(1)"}).String())
	if err != nil {
		return -1
	}
	defer c.Close()
	row, err := Row(c, q)
	if err != nil {
		return -1
	}
	n, _ := row[0].(int64)
	return n
}

// Writer commits into a store as the apps do: one connection, busy_timeout 5000,
// synchronous NORMAL, each commit a short BEGIN IMMEDIATE transaction inserting the next
// number into its table.
type Writer struct {
	Conn          driver.Conn
	table         string
	wrote, failed atomic.Int64
	last          atomic.Int64
	stop          chan struct{}
	wg            sync.WaitGroup
}

// StartWriter creates table (i INTEGER PRIMARY KEY) in the store at path when from is 1, and
// commits i = from, from+1, ... every pace (0: as fast as it can) until Stop.
func StartWriter(t testing.TB, path, table string, from int64, pace time.Duration) *Writer {
	t.Helper()
	w := &Writer{Conn: Open(t, path, "mode=rw&_pragma=busy_timeout(5000)&_pragma=synchronous(NORMAL)"), table: table, stop: make(chan struct{})}
	if err := Exec(w.Conn, "CREATE TABLE IF NOT EXISTS "+table+" (i INTEGER PRIMARY KEY)"); err != nil {
		t.Fatal(err)
	}
	w.wg.Add(1)
	go func() {
		defer w.wg.Done()
		for i := from; ; i++ {
			select {
			case <-w.stop:
				return
			case <-time.After(pace):
			}
			err := Exec(w.Conn, "BEGIN IMMEDIATE")
			if err == nil {
				err = Exec(w.Conn, fmt.Sprintf("INSERT INTO %s VALUES (%d)", table, i))
			}
			if err == nil {
				err = Exec(w.Conn, "COMMIT")
			}
			if err != nil {
				Exec(w.Conn, "ROLLBACK")
				w.failed.Add(1)
				continue
			}
			w.last.Store(i)
			w.wrote.Add(1)
		}
	}()
	t.Cleanup(func() { w.Stop(); w.Conn.Close() })
	return w
}

// Wrote is how many commits succeeded so far.
func (w *Writer) Wrote() int64 { return w.wrote.Load() }

// Last is the number of the last commit that succeeded.
func (w *Writer) Last() int64 { return w.last.Load() }

// WaitFor waits until n more commits than now succeeded.
func (w *Writer) WaitFor(n int64) {
	at := w.wrote.Load()
	for w.wrote.Load() < at+n {
		runtime.Gosched()
		time.Sleep(time.Millisecond)
	}
}

// Stop ends the writer and returns how many commits failed.
func (w *Writer) Stop() (failed int64) {
	select {
	case <-w.stop:
	default:
		close(w.stop)
	}
	w.wg.Wait()
	return w.failed.Load()
}

// Hold starts a process that holds path open (for reading) until release is called (or the
// test ends).
func Hold(t testing.TB, path string) (release func()) {
	t.Helper()
	holder := exec.Command("sh", "-c", "exec 3<\"$1\"; echo held; exec sleep 600", "sh", path)
	out, err := holder.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := holder.Start(); err != nil {
		t.Fatal(err)
	}
	var once sync.Once
	release = func() { once.Do(func() { holder.Process.Kill(); holder.Wait() }) }
	t.Cleanup(release)
	if _, err := io.ReadFull(out, make([]byte, 5)); err != nil {
		t.Fatal(err)
	}
	return release
}
