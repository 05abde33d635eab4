package sqlitedb

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/sessionmedic/sessionmedic/internal/sqlitetest"
)

// mkStore makes a store in the shape of OpenClaw's transcripts: a parent table, a child
// table with a foreign key, a named index and an automatic one (a UNIQUE constraint), n
// events; closed, in rollback mode (so its pages are all in the main file), or in WAL mode.
func mkStore(t testing.TB, dir string, n int, wal bool) string {
	t.Helper()
	p := filepath.Join(dir, "store.sqlite")
	c, err := open(uri(p, "mode=rwc"))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	for _, q := range []string{
		"PRAGMA foreign_keys=ON",
		"CREATE TABLE session_windows (session_id TEXT PRIMARY KEY, created INTEGER NOT NULL) STRICT",
		"CREATE TABLE transcript_events (session_id TEXT NOT NULL REFERENCES session_windows(session_id) ON DELETE CASCADE, seq INTEGER NOT NULL, event_json TEXT NOT NULL CHECK (json_valid(event_json)), PRIMARY KEY (session_id, seq)) STRICT",
		"CREATE INDEX idx_events_json ON transcript_events(event_json)",
		"INSERT INTO session_windows VALUES ('s1', 1)",
	} {
		if err := c.exec(q); err != nil {
			t.Fatal(q, err)
		}
	}
	if err := c.exec("BEGIN"); err != nil {
		t.Fatal(err)
	}
	for i := 0; i < n; i++ {
		if err := c.exec(fmt.Sprintf(`INSERT INTO transcript_events VALUES ('s1', %d, '{"type":"message","text":"message %d %s"}')`, i, i, strings.Repeat("x", i%50))); err != nil {
			t.Fatal(err)
		}
	}
	if err := c.exec("COMMIT"); err != nil {
		t.Fatal(err)
	}
	if wal {
		if err := c.exec("PRAGMA journal_mode=WAL"); err != nil {
			t.Fatal(err)
		}
	}
	return p
}

// root is the root page of the schema object name.
func root(t testing.TB, p, name string) int {
	t.Helper()
	c, err := open(uri(p, "mode=ro"))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	rows, err := c.strings("SELECT rootpage FROM sqlite_schema WHERE name='"+name+"'", 1)
	if err != nil || len(rows) != 1 {
		t.Fatalf("root of %s: %v %v", name, rows, err)
	}
	var n int
	fmt.Sscan(rows[0], &n)
	return n
}

// editPage rewrites page n of the closed store at p.
func editPage(t testing.TB, p string, n int, edit func(page []byte)) {
	t.Helper()
	data, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	size := int(binary.BigEndian.Uint16(data[16:18]))
	if size == 1 {
		size = 65536
	}
	edit(data[(n-1)*size : n*size])
	if err := os.WriteFile(p, data, 0o600); err != nil {
		t.Fatal(err)
	}
}

// flip replaces the first from in page by to (as long): a stale index entry when the page
// is an index's (the entry no longer matches its row; quick_check says ok).
func flip(page []byte, from, to string) {
	i := strings.Index(string(page), from)
	if i < 0 || len(from) != len(to) {
		panic(fmt.Sprintf("%q not in the page", from))
	}
	copy(page[i:], to)
}

func zero(page []byte) { clear(page) }

// staleNamed makes one entry of idx_events_json stale: its text no longer its row's (it
// still sorts in its place).
func staleNamed(t testing.TB, p string) {
	editPage(t, p, root(t, p, "idx_events_json"), func(b []byte) { flip(b, `message 10 xxxxxxxxxx"`, `message 10 xxxxxxxxxy"`) })
}

// staleAuto makes the last entry of the primary key's automatic index stale: its session
// no longer its row's (still the greatest key: the first cell written at the page's end).
func staleAuto(t testing.TB, p string) {
	editPage(t, p, root(t, p, "sqlite_autoindex_transcript_events_1"), func(b []byte) {
		h := 8 + 2*int(binary.BigEndian.Uint16(b[3:])) // past the leaf header and the cell pointers
		flip(b[h:], "s1", "s2")
	})
}

func judge(t testing.TB, p string) Judgement {
	t.Helper()
	snap := p + ".snap"
	os.Remove(snap)
	if _, err := Snapshot(p, snap, nil); err != nil {
		t.Fatalf("snapshot: %v", err)
	}
	defer os.Remove(snap)
	j, err := Judge(snap)
	if err != nil {
		t.Fatalf("judge: %v", err)
	}
	return j
}

func TestJudgeTellsEachDamage(t *testing.T) {
	cases := []struct {
		name   string
		damage func(t *testing.T, p string)
		check  func(t *testing.T, j Judgement)
	}{
		{"healthy", func(*testing.T, string) {}, func(t *testing.T, j Judgement) {
			if !j.OK() {
				t.Fatalf("healthy store judged %+v", j)
			}
		}},
		{"stale named index", func(t *testing.T, p string) {
			staleNamed(t, p)
		}, func(t *testing.T, j Judgement) {
			if j.OK() || !j.IndexOnly() || fmt.Sprint(j.Stale) != "[idx_events_json]" || len(j.Broken) != 0 {
				t.Fatalf("stale named index judged %+v", j)
			}
		}},
		{"stale automatic index", func(t *testing.T, p string) {
			staleAuto(t, p)
		}, func(t *testing.T, j Judgement) {
			if !j.IndexOnly() || fmt.Sprint(j.Stale) != "[sqlite_autoindex_transcript_events_1]" {
				t.Fatalf("stale automatic index judged %+v", j)
			}
		}},
		{"index page zeroed", func(t *testing.T, p string) {
			editPage(t, p, root(t, p, "idx_events_json"), zero)
		}, func(t *testing.T, j Judgement) {
			if !j.IndexOnly() || fmt.Sprint(j.Broken) != "[idx_events_json]" || len(j.Stale) != 0 {
				t.Fatalf("broken index judged %+v", j)
			}
		}},
		{"table root zeroed", func(t *testing.T, p string) {
			editPage(t, p, root(t, p, "transcript_events"), zero)
		}, func(t *testing.T, j Judgement) {
			if j.OK() || j.IndexOnly() || len(j.Tables) == 0 {
				t.Fatalf("table damage judged %+v", j)
			}
		}},
		{"foreign key broken", func(t *testing.T, p string) {
			c, err := open(uri(p, "mode=rw"))
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			if err := c.exec("INSERT INTO transcript_events VALUES ('ghost', 1, '{}')"); err != nil {
				t.Fatal(err)
			}
		}, func(t *testing.T, j Judgement) {
			if j.OK() || j.IndexOnly() || len(j.Foreign) != 1 || !strings.Contains(j.Foreign[0], "transcript_events") {
				t.Fatalf("foreign key damage judged %+v", j)
			}
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			p := mkStore(t, t.TempDir(), 20, false)
			tc.damage(t, p)
			tc.check(t, judge(t, p))
		})
	}
}

func TestPageOneDestroyedIsNotADatabase(t *testing.T) {
	p := mkStore(t, t.TempDir(), 20, false)
	editPage(t, p, 1, zero)
	_, err := Snapshot(p, p+".snap", nil)
	if err == nil {
		// The backup API may copy the pages as they are; the copy is then judged.
		j, jerr := Judge(p + ".snap")
		if jerr != nil || !j.NotDB {
			t.Fatalf("page 1 zeroed: snapshot taken, judged %+v, %v", j, jerr)
		}
		return
	}
	if !strings.Contains(err.Error(), "not a database") {
		t.Fatalf("page 1 zeroed: snapshot error %v, want not a database", err)
	}
	if _, serr := os.Stat(p + ".snap"); !os.IsNotExist(serr) {
		t.Fatalf("a failed snapshot left its file: %v", serr)
	}
}

func TestReindexHealsStaleEntries(t *testing.T) {
	for _, ix := range []string{"idx_events_json", "sqlite_autoindex_transcript_events_1"} {
		t.Run(ix, func(t *testing.T) {
			p := mkStore(t, t.TempDir(), 20, false)
			map[string]func(testing.TB, string){"idx_events_json": staleNamed, "sqlite_autoindex_transcript_events_1": staleAuto}[ix](t, p)
			j := judge(t, p)
			if !j.IndexOnly() || len(j.Stale) != 1 {
				t.Fatalf("judged %+v", j)
			}
			if err := Reindex(p, j.Stale); err != nil {
				t.Fatal(err)
			}
			if j := judge(t, p); !j.OK() {
				t.Fatalf("after REINDEX: %+v", j)
			}
		})
	}
}

// A snapshot and a REINDEX taken while a writer in the apps' style (short BEGIN IMMEDIATE
// transactions, busy_timeout 5000, WAL) commits: no commit fails, none is lost, the store
// stays sound.
func TestLiveWriterLosesNothing(t *testing.T) {
	dir := t.TempDir()
	p := mkStore(t, dir, 200, true)
	w := sqlitetest.StartWriter(t, p, "writer_log", 1, 0)
	w.WaitFor(20)
	for i := 0; i < 3; i++ {
		snap := filepath.Join(dir, fmt.Sprintf("snap%d", i))
		if _, err := Snapshot(p, snap, nil); err != nil {
			t.Fatal(err)
		}
		if j, err := Judge(snap); err != nil || !j.OK() {
			t.Fatalf("snapshot of a live store: %+v %v", j, err)
		}
		if err := Reindex(p, []string{"idx_events_json", "sqlite_autoindex_transcript_events_1"}); err != nil {
			t.Fatal(err)
		}
	}
	w.WaitFor(20)
	if failed := w.Stop(); failed != 0 {
		t.Fatalf("%d of the writer's commits failed", failed)
	}
	if n := sqlitetest.Count(t, p, "SELECT count(*) FROM writer_log"); n != w.Wrote() {
		t.Fatalf("%d commits in the store, the writer made %d", n, w.Wrote())
	}
	if j := judge(t, p); !j.OK() {
		t.Fatalf("store after the run: %+v", j)
	}
}

// A restore while a writer in the apps' style commits: none of its commits fails, it goes on
// from the restored store, and the store holds the snapshot's rows and every commit made after
// the restore, a run without a gap (those made between the snapshot and the restore are the
// announced loss).
func TestRestoreBesideALiveWriter(t *testing.T) {
	dir := t.TempDir()
	p := mkStore(t, dir, 200, true)
	c := sqlitetest.Open(t, p, "mode=rw")
	if err := sqlitetest.Exec(c, "CREATE TABLE writer_log (i INTEGER PRIMARY KEY)"); err != nil {
		t.Fatal(err)
	}
	c.Close()
	snap := filepath.Join(dir, "good")
	if _, err := Snapshot(p, snap, nil); err != nil {
		t.Fatal(err)
	}
	w := sqlitetest.StartWriter(t, p, "writer_log", 1000, 0)
	w.WaitFor(20)
	if err := Restore(snap, p, nil); err != nil {
		t.Fatal(err)
	}
	w.WaitFor(20)
	if failed := w.Stop(); failed != 0 {
		t.Fatalf("%d of the writer's commits failed", failed)
	}
	old := sqlitetest.Count(t, p, "SELECT count(*) FROM transcript_events")
	lo := sqlitetest.Count(t, p, "SELECT min(i) FROM writer_log")
	hi := sqlitetest.Count(t, p, "SELECT max(i) FROM writer_log")
	n := sqlitetest.Count(t, p, "SELECT count(*) FROM writer_log")
	if old != 200 || hi != w.Last() || n != hi-lo+1 || n < 19 {
		t.Fatalf("after the restore: %d of the snapshot's rows, the writer's %d..%d (%d rows), its last commit %d", old, lo, hi, n, w.Last())
	}
	if j := judge(t, p); !j.OK() {
		t.Fatalf("store after the run: %+v", j)
	}
}

// A store reached through a symlink on the way (a directory swapped for a link to another
// tree) is not the store named: nothing is read from it or written to it.
func TestSymlinkOnTheWayIsRefused(t *testing.T) {
	dir := t.TempDir()
	elsewhere := filepath.Join(dir, "elsewhere")
	if err := os.MkdirAll(elsewhere, 0o700); err != nil {
		t.Fatal(err)
	}
	p := mkStore(t, elsewhere, 20, false)
	staleNamed(t, p)
	if err := os.Symlink(elsewhere, filepath.Join(dir, "agent")); err != nil {
		t.Fatal(err)
	}
	named := filepath.Join(dir, "agent", "store.sqlite")
	before, _ := os.ReadFile(p)
	if _, err := Snapshot(named, filepath.Join(dir, "snap"), nil); !errors.Is(err, ErrMoved) {
		t.Fatalf("snapshot through a link: %v", err)
	}
	if _, err := JudgeLive(named, nil); !errors.Is(err, ErrMoved) {
		t.Fatalf("live judgement through a link: %v", err)
	}
	for _, heal := range []func() error{
		func() error { return Reindex(named, []string{"idx_events_json"}) },
		func() error { return Rebuild(named, []string{"idx_events_json"}) },
	} {
		if err := heal(); !errors.Is(err, ErrMoved) {
			t.Fatalf("heal through a link: %v", err)
		}
	}
	if after, _ := os.ReadFile(p); !bytes.Equal(before, after) {
		t.Fatal("the store behind the link was written")
	}
	if _, err := os.Lstat(filepath.Join(dir, "snap")); err == nil {
		t.Fatal("a copy was left")
	}
	for _, side := range []string{"-wal", "-shm", "-journal"} {
		if _, err := os.Lstat(p + side); err == nil {
			t.Fatalf("%s made beside the store behind the link", side)
		}
	}
}

// A store whose path holds what a URI gives meaning to (#, ?, %, a space) or bytes that are
// not UTF-8 is opened at that path, not at a part of it.
func TestStoreNamesAreTakenAsTheyAre(t *testing.T) {
	for _, name := range []string{"a#b", "a?mode=ro", "100%25 done", "caf\xe9"} {
		dir := filepath.Join(t.TempDir(), name)
		if err := os.MkdirAll(dir, 0o700); err != nil {
			t.Fatal(err)
		}
		p := mkStore(t, dir, 20, false)
		staleNamed(t, p)
		j := judge(t, p)
		if !j.IndexOnly() || len(j.Stale) != 1 {
			t.Fatalf("%q: judged %+v", name, j)
		}
		if err := Reindex(p, j.Stale); err != nil {
			t.Fatalf("%q: %v", name, err)
		}
		if j := judge(t, p); !j.OK() {
			t.Fatalf("%q: after REINDEX %+v", name, j)
		}
		ents, _ := os.ReadDir(filepath.Dir(dir))
		if len(ents) != 1 {
			t.Fatalf("%q: files made beside the store's directory: %v", name, ents)
		}
	}
}

// A store whose transactions are in its -wal, with no process holding it (OpenCode between
// runs; a crashed app): judging it and copying it read those transactions and leave the
// store and its -wal byte for byte as they were (no checkpoint, no -wal deleted).
func TestReadingLeavesTheWALWhereItIs(t *testing.T) {
	dir := t.TempDir()
	p := mkStore(t, dir, 20, true)
	w, err := open(uri(p, "mode=rw", "_pragma=wal_autocheckpoint(0)"))
	if err != nil {
		t.Fatal(err)
	}
	for i := 100; i < 130; i++ {
		if err := w.exec(fmt.Sprintf(`INSERT INTO transcript_events VALUES ('s1', %d, '{}')`, i)); err != nil {
			t.Fatal(err)
		}
	}
	// The family as a crash leaves it: copied while the writer holds it, between commits.
	other := filepath.Join(t.TempDir(), "store.sqlite")
	for _, side := range []string{"", "-wal"} {
		b, err := os.ReadFile(p + side)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(other+side, b, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	w.Close()
	db0, _ := os.ReadFile(other)
	wal0, _ := os.ReadFile(other + "-wal")
	if len(wal0) == 0 {
		t.Fatal("no transaction in the -wal")
	}
	snap := filepath.Join(t.TempDir(), "snap")
	if _, err := Snapshot(other, snap, nil); err != nil {
		t.Fatal(err)
	}
	j, err := JudgeLive(other, nil)
	if err != nil || !j.OK() {
		t.Fatalf("live judgement: %+v %v", j, err)
	}
	c, err := open(uri(snap, "mode=ro", "immutable=1"))
	if err != nil {
		t.Fatal(err)
	}
	rows, _ := c.strings("SELECT count(*) FROM transcript_events", 1)
	c.Close()
	if len(rows) != 1 || rows[0] != "50" {
		t.Fatalf("the copy holds %v rows, want the store's 20 and the -wal's 30", rows)
	}
	db1, _ := os.ReadFile(other)
	wal1, err := os.ReadFile(other + "-wal")
	if err != nil || !bytes.Equal(db0, db1) || !bytes.Equal(wal0, wal1) {
		t.Fatalf("the family changed: store same %v, -wal same %v (%v)", bytes.Equal(db0, db1), bytes.Equal(wal0, wal1), err)
	}
}

// A damaged leaf deep in an index (not its root page) is placed in that index through
// dbstat: an entry cut from it ("Fragmentation … on page P") is index damage, healed by
// REINDEX.
func TestDamageInAnIndexLeafIsPlacedThroughDbstat(t *testing.T) {
	p := mkStore(t, t.TempDir(), 2000, false)
	c, err := open(uri(p, "mode=ro"))
	if err != nil {
		t.Fatal(err)
	}
	leaf, err := c.strings("SELECT pageno FROM dbstat WHERE name='idx_events_json' AND pagetype='leaf' ORDER BY path LIMIT 1", 1)
	root, _ := c.strings("SELECT rootpage FROM sqlite_schema WHERE name='idx_events_json'", 1)
	c.Close()
	if err != nil || len(leaf) != 1 || leaf[0] == root[0] {
		t.Fatalf("no leaf of the index below its root: %v %v %v", leaf, root, err)
	}
	var n int
	fmt.Sscan(leaf[0], &n)
	editPage(t, p, n, dropCell)
	j := judge(t, p)
	if !j.IndexOnly() || strings.Join(j.Stale, ",") != "idx_events_json" {
		t.Fatalf("judged %+v", j)
	}
	if err := Reindex(p, j.Stale); err != nil {
		t.Fatal(err)
	}
	if j := judge(t, p); !j.OK() {
		t.Fatalf("after REINDEX: %+v", j)
	}
}
