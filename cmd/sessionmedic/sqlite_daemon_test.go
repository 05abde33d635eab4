package main

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/sessionmedic/sessionmedic/heal/sqlitedb"
	"github.com/sessionmedic/sessionmedic/internal/sqlitetest"
)

// The daemon guards an OpenClaw agent database while a writer in OpenClaw's style commits
// into it at a chat's pace: damage made live through SQLite (a stale index entry,
// sqlite_dbpage) is found from the commits' -wal events (the store file itself changes only
// at checkpoints, which this pace does not reach) and healed by reindex, and the writer loses
// no commit and fails none.
func TestDaemonHealsAnOpenClawStoreBesideItsWriter(t *testing.T) {
	home := t.TempDir()
	db := filepath.Join(home, ".openclaw", "agents", "main", "agent", "openclaw-agent.sqlite")
	sqlitetest.Place(t, sqlitetest.OpenClaw, db)
	c := sqlitetest.Open(t, db, "mode=rw")
	if err := sqlitetest.Exec(c, "CREATE TABLE writer_log (i INTEGER PRIMARY KEY)"); err != nil {
		t.Fatal(err)
	}
	c.Close()

	policyFile := filepath.Join(home, "policy.yaml")
	os.WriteFile(policyFile, []byte(fmt.Sprintf("version: 1\nstate_dir: %s\nrules:\n  - {name: oc, preset: openclaw, paths: [%s], settle: 100ms, max_wait: 1s}\n",
		filepath.Join(home, "state"), filepath.Join(home, ".openclaw"))), 0o644)
	d := startDaemon(t, home, "-config", policyFile)
	eventually(t, 20*time.Second, "first scan", func() bool { return len(d.events("scan.finished")) == 1 })

	// A chat's pace: no checkpoint during the test.
	w := sqlitetest.StartWriter(t, db, "writer_log", 1, 250*time.Millisecond)
	w.WaitFor(2)
	sqlitetest.StaleOpenClawEntry(t, db)

	// (Judged again once its spacing since the first scan's judgement has passed: 10 s, or 30
	// times that judgement's time on a loaded machine.)
	eventually(t, 150*time.Second, "the store healed", func() bool { return len(d.events("file.healed")) == 1 })
	h := d.events("file.healed")[0]
	if h["kind"] != "stale-index" || h["strategy"] != "reindex" {
		t.Fatalf("file.healed: %v", h)
	}
	w.WaitFor(2)
	if failed := w.Stop(); failed != 0 {
		t.Fatalf("%d of the writer's commits failed", failed)
	}
	if n := sqlitetest.Count(t, db, "SELECT count(*) FROM writer_log"); n != w.Wrote() {
		t.Fatalf("the store holds %d of the writer's %d commits", n, w.Wrote())
	}
	snap := filepath.Join(t.TempDir(), "judged.sqlite")
	if _, err := sqlitedb.Snapshot(db, snap, nil); err != nil {
		t.Fatal(err)
	}
	if j, err := sqlitedb.Judge(snap); err != nil || !j.OK() {
		t.Fatalf("the store after the run: %+v %v", j, err)
	}
}
