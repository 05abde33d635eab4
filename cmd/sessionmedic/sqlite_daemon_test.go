package main

import (
	"compress/gzip"
	"context"
	"database/sql/driver"
	"fmt"
	"io"
	"net/url"
	"os"
	"path/filepath"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/sessionmedic/sessionmedic/heal/sqlitedb"
	"modernc.org/sqlite"
)

// The daemon guards an OpenClaw agent database while a writer in OpenClaw's style commits
// into it at a chat's pace: damage made live through SQLite (a stale index entry,
// sqlite_dbpage) is found from the commits' -wal events (the store file itself changes only
// at checkpoints, which this pace does not reach) and healed by reindex, and the writer loses
// no commit and fails none.
func TestDaemonHealsAnOpenClawStoreBesideItsWriter(t *testing.T) {
	home := t.TempDir()
	db := filepath.Join(home, ".openclaw", "agents", "main", "agent", "openclaw-agent.sqlite")
	f, err := os.Open("../../heal/sqlitedb/testdata/openclaw-agent-2026.9.6.sqlite.gz")
	if err != nil {
		t.Fatal(err)
	}
	z, err := gzip.NewReader(f)
	if err != nil {
		t.Fatal(err)
	}
	data, err := io.ReadAll(z)
	f.Close()
	if err != nil {
		t.Fatal(err)
	}
	os.MkdirAll(filepath.Dir(db), 0o700)
	if err := os.WriteFile(db, data, 0o600); err != nil {
		t.Fatal(err)
	}
	open := func(q string) driver.Conn {
		c, err := (&sqlite.Driver{}).Open((&url.URL{Scheme: "file", Path: db, RawQuery: q}).String())
		if err != nil {
			t.Fatal(err)
		}
		return c
	}
	exec := func(c driver.Conn, q string, args ...driver.NamedValue) error {
		_, err := c.(driver.ExecerContext).ExecContext(context.Background(), q, args)
		return err
	}
	w := open("mode=rw&_pragma=busy_timeout(5000)&_pragma=synchronous(NORMAL)")
	defer w.Close()
	if err := exec(w, "CREATE TABLE writer_log (i INTEGER PRIMARY KEY)"); err != nil {
		t.Fatal(err)
	}

	policyFile := filepath.Join(home, "policy.yaml")
	os.WriteFile(policyFile, []byte(fmt.Sprintf("version: 1\nstate_dir: %s\nrules:\n  - {name: oc, preset: openclaw, paths: [%s], settle: 100ms, max_wait: 1s}\n",
		filepath.Join(home, "state"), filepath.Join(home, ".openclaw"))), 0o644)
	d := startDaemon(t, home, "-config", policyFile)
	eventually(t, 20*time.Second, "first scan", func() bool { return len(d.events("scan.finished")) == 1 })

	var wrote, failed atomic.Int64
	stop := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		for i := 1; ; i++ {
			select {
			case <-stop:
				return
			case <-time.After(250 * time.Millisecond): // a chat's pace: no checkpoint during the test
			}
			err := exec(w, "BEGIN IMMEDIATE")
			if err == nil {
				err = exec(w, fmt.Sprintf("INSERT INTO writer_log VALUES (%d)", i))
			}
			if err == nil {
				err = exec(w, "COMMIT")
			}
			if err != nil {
				exec(w, "ROLLBACK")
				failed.Add(1)
				continue
			}
			wrote.Add(1)
		}
	}()
	for wrote.Load() < 2 {
		runtime.Gosched()
	}
	// One entry of idx_agent_transcript_event_sequence made stale, through SQLite.
	c := open("mode=rw&_pragma=busy_timeout(5000)")
	rs, err := c.(driver.QueryerContext).QueryContext(context.Background(), "SELECT data FROM sqlite_dbpage WHERE pgno=86", nil)
	if err != nil {
		t.Fatal(err)
	}
	row := []driver.Value{nil}
	if err := rs.Next(row); err != nil {
		t.Fatal(err)
	}
	rs.Close()
	page := append([]byte(nil), row[0].([]byte)...)
	page[3842] = 7
	if err := exec(c, "UPDATE sqlite_dbpage SET data=? WHERE pgno=86", driver.NamedValue{Ordinal: 1, Value: page}); err != nil {
		t.Fatal(err)
	}
	c.Close()

	// Judged again once its spacing since the first scan's judgement has passed (10 s).
	eventually(t, 60*time.Second, "the store healed", func() bool { return len(d.events("file.healed")) == 1 })
	h := d.events("file.healed")[0]
	if h["kind"] != "stale-index" || h["strategy"] != "reindex" {
		t.Fatalf("file.healed: %v", h)
	}
	at := wrote.Load()
	for wrote.Load() < at+2 {
		runtime.Gosched()
	}
	close(stop)
	wg.Wait()
	if failed.Load() != 0 {
		t.Fatalf("%d of the writer's commits failed", failed.Load())
	}
	rs, err = w.(driver.QueryerContext).QueryContext(context.Background(), "SELECT count(*) FROM writer_log", nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := rs.Next(row); err != nil {
		t.Fatal(err)
	}
	rs.Close()
	if row[0].(int64) != wrote.Load() {
		t.Fatalf("the store holds %v of the writer's %d commits", row[0], wrote.Load())
	}
	snap := filepath.Join(t.TempDir(), "judged.sqlite")
	if _, err := sqlitedb.Snapshot(db, snap, nil); err != nil {
		t.Fatal(err)
	}
	if j, err := sqlitedb.Judge(snap); err != nil || !j.OK() {
		t.Fatalf("the store after the run: %+v %v", j, err)
	}
}
