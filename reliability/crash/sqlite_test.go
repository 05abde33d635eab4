package crash

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/sessionmedic/sessionmedic/heal/fsio"
	"github.com/sessionmedic/sessionmedic/heal/sqlitedb"
	"github.com/sessionmedic/sessionmedic/internal/sqlitetest"
)

// A SQLite store's heal killed at each of its steps, and at random moments (inside SQLite's
// own transactions too): the store is left as it was or healed, never anything else, its 6
// events intact wherever its tables were; the next heal finishes the work, and no private
// copy of the crashed run is left behind.
func TestSQLiteHealCrashes(t *testing.T) {
	damages := []struct {
		name, kind string
		restore    bool // the rule opts in to restore-snapshot (its snapshot taken first)
		edit       func(page []byte)
		page       int
	}{
		{"stale named index", "stale-index", false, func(b []byte) { b[3842] = 7 }, 86},
		{"stale automatic index", "stale-index", false, func(b []byte) { b[3882] = 7 }, 64},
		{"broken named index", "broken-index", false, func(b []byte) { clear(b) }, 86},
		{"table root destroyed", "corrupt-table", true, func(b []byte) { clear(b) }, 63},
		{"page 1 destroyed", "not-a-database", true, func(b []byte) { clear(b) }, 1},
	}
	// The steps a live heal reaches, and those of the file replace of a destroyed store.
	points := []string{"locked", "quarantined", "written", "done"}
	offline := []string{"locked", "journaled", "quarantined", "temp-written", "renamed", "done"}
	_, seeAll := fsio.OpenBy(nil) // a store is replaced as a file only where no holder can hide
	rng := rand.New(rand.NewPCG(*seedBase, 23))
	runs := 0
	for _, d := range damages {
		if d.kind == "not-a-database" && !seeAll {
			t.Logf("%s: skipped (other users' processes cannot be seen here: needs root)", d.name)
			continue
		}
		var kills []string
		if d.kind == "not-a-database" {
			kills = append(kills, offline...)
		} else {
			kills = append(kills, points...)
		}
		for i := 0; i < 6; i++ {
			kills = append(kills, fmt.Sprintf("after %dms", rng.IntN(80)))
		}
		for _, kill := range kills {
			runs++
			t.Run(d.name+"/"+kill, func(t *testing.T) {
				dir := t.TempDir()
				db := filepath.Join(dir, "home", ".openclaw", "agents", "main", "agent", "openclaw-agent.sqlite")
				sqlitetest.Place(t, sqlitetest.OpenClaw, db)
				strategies := ""
				if d.restore {
					strategies = "\n    strategies: [salvage, backup, last-good, normalize, reindex, restore-snapshot]"
				}
				e := env{dir: dir, stateDir: filepath.Join(dir, "state"), policy: filepath.Join(dir, "policy.yaml")}
				policy := fmt.Sprintf("version: 1\nstate_dir: %s\nrules:\n  - name: oc\n    preset: openclaw\n    paths: [%s]%s\n",
					e.stateDir, filepath.Join(dir, "home", ".openclaw"), strategies)
				if err := os.WriteFile(e.policy, []byte(policy), 0o600); err != nil {
					t.Fatal(err)
				}
				if d.restore {
					if r := runHeal(e, "", time.Minute); r.code != 0 || r.err != nil {
						t.Fatalf("first look: %+v", r)
					}
				}
				sqlitetest.EditPage(t, db, d.page, d.edit)
				var wal []byte
				if d.kind == "not-a-database" {
					// A -wal left beside it: quarantined with the store, then removed.
					wal = bytes.Repeat([]byte{0x5a}, 3*4096+100)
					if err := os.WriteFile(db+"-wal", wal, 0o600); err != nil {
						t.Fatal(err)
					}
				}

				var r result
				if at, ok := strings.CutPrefix(kill, "after "); ok {
					delay, _ := time.ParseDuration(at)
					cmd, so, se := healCmd(e, "")
					if err := cmd.Start(); err != nil {
						t.Fatal(err)
					}
					time.AfterFunc(delay, func() { cmd.Process.Signal(syscall.SIGKILL) })
					killed, code, err := wait(cmd, time.Minute)
					r = result{killed: killed, code: code, err: err, stdout: so.String(), stderr: se.String()}
				} else {
					r = runHeal(e, kill, time.Minute)
					if !r.killed {
						t.Fatalf("not killed at %s: %+v", kill, r)
					}
				}
				if r.err != nil {
					t.Fatal(r.err)
				}
				// Left as it was, or healed.
				if d.kind == "not-a-database" {
					// (Judged by the binary alone: any SQLite open of the destroyed store
					// would read its -wal.)
					// The old -wal is where it was, or (removed once quarantined) gone: then
					// beside the destroyed store nothing, beside the restored one at most what
					// SQLite's own open of it made.
					got, err := os.ReadFile(db + "-wal")
					if err != nil || !bytes.Equal(got, wal) {
						assertQuarantined(t, e.stateDir, wal)
						head, _ := os.ReadFile(db)
						restored := len(head) >= 16 && string(head[:16]) == "SQLite format 3\x00"
						if err == nil && !restored {
							t.Fatalf("after the kill (%s) a -wal of other bytes is beside the destroyed store", kill)
						}
					}
					if r := runHeal(e, "", time.Minute); r.code != 0 || r.err != nil {
						t.Fatalf("heal after the kill: %+v", r)
					}
					if n := storeEvents(t, db); n != 6 {
						t.Fatalf("after the second heal the store holds %d events", n)
					}
					if _, err := os.Lstat(db + "-wal"); err == nil {
						if b, _ := os.ReadFile(db + "-wal"); bytes.Equal(b, wal) {
							t.Fatal("the old -wal is beside the restored store")
						}
					}
					assertNoTemps(t, filepath.Dir(db), e.stateDir)
					assertQuarantined(t, e.stateDir, wal)
					return
				}
				j := storeJudged(t, db)
				switch {
				case j.OK():
				case d.kind == "stale-index" && len(j.Stale) == 1 && j.IndexOnly():
				case d.kind == "broken-index" && j.IndexOnly():
				case d.kind == "corrupt-table" && !j.IndexOnly() && !j.NotDB:
				default:
					t.Fatalf("after the kill (%s) the store is judged %+v", kill, j)
				}
				if d.kind != "corrupt-table" || j.OK() {
					if n := storeEvents(t, db); n != 6 {
						t.Fatalf("after the kill the store holds %d events, want 6", n)
					}
				}
				// The next heal finishes.
				if r := runHeal(e, "", time.Minute); r.code != 0 || r.err != nil {
					t.Fatalf("heal after the kill: %+v", r)
				}
				if j := storeJudged(t, db); !j.OK() {
					t.Fatalf("after the second heal the store is judged %+v", j)
				}
				if n := storeEvents(t, db); n != 6 {
					t.Fatalf("healed store holds %d events, want 6", n)
				}
				if ents, _ := os.ReadDir(filepath.Join(e.stateDir, "sqlite", "tmp")); len(ents) != 0 {
					t.Fatalf("private copies left: %v", ents)
				}
			})
		}
	}
	t.Logf("%d SQLite crash runs", runs)
}

// storeJudged is the gate's judgement of the store at p, on a copy taken through SQLite.
func storeJudged(t *testing.T, p string) sqlitedb.Judgement {
	t.Helper()
	snap := filepath.Join(t.TempDir(), "judged.sqlite")
	if _, err := sqlitedb.Snapshot(p, snap, nil); err != nil {
		t.Fatalf("copy of the store: %v", err)
	}
	j, err := sqlitedb.Judge(snap)
	if err != nil {
		t.Fatal(err)
	}
	return j
}

// storeEvents counts the store's transcript events through SQLite (-1: unreadable).
func storeEvents(t *testing.T, p string) int {
	return int(sqlitetest.Count(t, p, "SELECT count(*) FROM transcript_events"))
}

// assertNoTemps fails if an own temp is left beside the store or a private copy in the state
// dir.
func assertNoTemps(t *testing.T, dir, stateDir string) {
	t.Helper()
	ents, _ := os.ReadDir(dir)
	for _, e := range ents {
		if strings.Contains(e.Name(), ".sessionmedic-") {
			t.Fatalf("a temp is left beside the store: %s", e.Name())
		}
	}
	if ents, _ := os.ReadDir(filepath.Join(stateDir, "sqlite", "tmp")); len(ents) != 0 {
		t.Fatalf("private copies left: %v", ents)
	}
	if ents, _ := os.ReadDir(filepath.Join(stateDir, "journal")); len(ents) != 0 {
		t.Fatalf("journal entries left: %v", ents)
	}
}

// assertQuarantined fails unless some quarantine entry holds exactly b.
func assertQuarantined(t *testing.T, stateDir string, b []byte) {
	t.Helper()
	found := false
	filepath.WalkDir(filepath.Join(stateDir, "quarantine"), func(p string, d os.DirEntry, err error) error {
		if err == nil && !d.IsDir() && d.Name() != "manifest.json" {
			if got, _ := os.ReadFile(p); bytes.Equal(got, b) {
				found = true
			}
		}
		return nil
	})
	if !found {
		t.Fatal("no quarantine entry holds the -wal's bytes")
	}
}
