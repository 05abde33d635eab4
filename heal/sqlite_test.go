package heal

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/sessionmedic/sessionmedic/heal/format"
	"github.com/sessionmedic/sessionmedic/heal/fsio"
	"github.com/sessionmedic/sessionmedic/heal/sqlitedb"
	"github.com/sessionmedic/sessionmedic/internal/sqlitetest"
	"github.com/sessionmedic/sessionmedic/policy"
)

// openclawStoreCase is an OpenClaw home whose agent database is OpenClaw 2026.9.6's own
// (see heal/sqlitedb's fixture), under the openclaw preset's rule, and its engine.
func openclawStoreCase(t *testing.T, tweak func(r *policy.Rule)) (e *Engine, home, db string) {
	t.Helper()
	dir := t.TempDir()
	home = filepath.Join(dir, ".openclaw")
	db = filepath.Join(home, "agents", "main", "agent", "openclaw-agent.sqlite")
	sqlitetest.Place(t, sqlitetest.OpenClaw, db)
	r, ok := policy.PresetRule("openclaw", policy.Env{Home: dir, Getenv: func(string) string { return "" }, Exists: func(string) bool { return false }})
	if !ok {
		t.Fatal("no openclaw preset")
	}
	r.Paths = []string{home}
	if tweak != nil {
		tweak(&r)
	}
	cfg := &policy.Config{Version: 1, StateDir: filepath.Join(dir, "state"), Rules: []policy.Rule{r}}
	cfg.LastGood.MaxFileBytes = 64 << 20
	// Each look at the clock is an hour after the one before: every heal judges the store
	// anew, past the spacing of a daemon's judgements (TestOpenClawStoreJudgementsAreSpaced).
	var hours atomic.Int64
	e = New(cfg, Options{Now: func() time.Time { return time.Now().Add(time.Duration(hours.Add(1)) * time.Hour) }})
	return e, home, db
}

// storeEdit rewrites page n (4096 bytes) of the closed store at p.
func storeEdit(t *testing.T, p string, n int, edit func(page []byte)) {
	t.Helper()
	sqlitetest.EditPage(t, p, n, edit)
}

// storeEvents is how many transcript events the store at p holds, read through SQLite (-1:
// it cannot be read).
func storeEvents(t *testing.T, p string) int {
	t.Helper()
	return int(sqlitetest.Count(t, p, "SELECT count(*) FROM transcript_events"))
}

func oneTarget(t *testing.T, e *Engine, home, db string) Target {
	t.Helper()
	ts, errs := e.Targets([]string{home}, nil)
	if len(errs) > 0 {
		t.Fatal(errs)
	}
	var found []Target
	for _, tg := range ts {
		if strings.Contains(tg.Path, "sqlite") {
			found = append(found, tg)
		}
	}
	if len(found) != 1 || found[0].Path != db {
		t.Fatalf("targets %+v, want the store alone of its family", ts)
	}
	return found[0]
}

func TestOpenClawStoreHealedThroughSQLite(t *testing.T) {
	cases := []struct {
		name     string
		damage   func(t *testing.T, p string)
		kind     string
		action   string
		strategy string
	}{
		{"healthy", func(*testing.T, string) {}, "", ActionNone, ""},
		{"stale entry in a named index", func(t *testing.T, p string) {
			storeEdit(t, p, 86, func(b []byte) { b[3842] = 7 })
		}, format.KindStaleIndex, ActionHealed, "reindex"},
		{"stale entry in the primary key's automatic index", func(t *testing.T, p string) {
			storeEdit(t, p, 64, func(b []byte) { b[3882] = 7 })
		}, format.KindStaleIndex, ActionHealed, "reindex"},
		{"a named index's page zeroed", func(t *testing.T, p string) {
			storeEdit(t, p, 86, func(b []byte) { clear(b) })
		}, format.KindBrokenIndex, ActionHealed, "reindex"},
		{"the events table's root zeroed", func(t *testing.T, p string) {
			storeEdit(t, p, 63, func(b []byte) { clear(b) })
		}, format.KindCorruptTable, ActionRefused, ""},
		{"page 1 zeroed", func(t *testing.T, p string) {
			storeEdit(t, p, 1, func(b []byte) { clear(b) })
		}, format.KindNotADatabase, ActionRefused, ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			e, home, db := openclawStoreCase(t, nil)
			tc.damage(t, db)
			before, _ := os.ReadFile(db)
			tg := oneTarget(t, e, home, db)
			c := e.Check(tg)
			if c.Format != "openclaw-agent-db" || c.Kind != tc.kind || (tc.kind == "") != (c.Verdict == Healthy) {
				t.Fatalf("check: %+v", c)
			}
			if after, _ := os.ReadFile(db); !bytes.Equal(before, after) {
				t.Fatal("check changed the store")
			}
			dry := e.Heal(context.Background(), tg, true)
			if after, _ := os.ReadFile(db); !bytes.Equal(before, after) {
				t.Fatalf("a dry run changed the store: %+v", dry)
			}
			r := e.Heal(context.Background(), tg, false)
			if r.Kind != tc.kind || r.Action != tc.action || r.Strategy != tc.strategy {
				t.Fatalf("heal: %+v", r)
			}
			switch tc.action {
			case ActionHealed:
				if n := storeEvents(t, db); n != 6 {
					t.Fatalf("healed store holds %d events, want 6", n)
				}
				m, err := e.Quarantine.Get(filepath.Base(r.Quarantine))
				if err != nil {
					t.Fatal(err)
				}
				// The entry is the damaged store, as SQLite read it: judged as it was.
				j, err := sqlitedb.Judge(filepath.Join(m.Dir, m.File))
				if err != nil || j.OK() || m.Kind != tc.kind || m.Strategy != "reindex" {
					t.Fatalf("quarantine entry %+v judged %+v %v", m, j, err)
				}
				if _, complete := fsio.OpenBy(nil); complete {
					// No process held it: the store's own bytes are kept too.
					ms, _ := e.Quarantine.List()
					raw := false
					for _, m := range ms {
						b, _ := os.ReadFile(filepath.Join(m.Dir, m.File))
						raw = raw || bytes.Equal(b, before)
					}
					if !raw {
						t.Fatalf("no quarantine entry holds the store's file as it was (%d entries)", len(ms))
					}
				}
				again := e.Heal(context.Background(), tg, false)
				if again.Verdict != Healthy || again.Action != ActionNone {
					t.Fatalf("healed twice: %+v", again)
				}
			case ActionRefused:
				if !strings.Contains(r.Reason, "openclaw doctor") {
					t.Fatalf("refusal says nothing of the app's own tool: %q", r.Reason)
				}
				if after, _ := os.ReadFile(db); !bytes.Equal(before, after) {
					t.Fatal("a refused heal changed the store")
				}
			default:
				if n := len(e.snapshots(db)); n != 1 {
					t.Fatalf("healthy store: %d snapshots kept, want 1", n)
				}
				if after, _ := os.ReadFile(db); !bytes.Equal(before, after) {
					t.Fatal("a healthy store was written")
				}
			}
			if ents, _ := os.ReadDir(filepath.Join(e.StateDir, "sqlite", "tmp")); len(ents) != 0 {
				t.Fatalf("copies left in the state dir: %v", ents)
			}
			for _, side := range []string{"-wal", "-shm", "-journal"} {
				if _, err := os.Lstat(db + side); err == nil {
					t.Fatalf("%s left beside a store that had none", side)
				}
			}
		})
	}
}

// A rule without reindex, or in observe mode, reports index damage and leaves the store.
func TestOpenClawStoreReindexOnlyWhereTheRuleSays(t *testing.T) {
	for _, tweak := range []func(r *policy.Rule){
		func(r *policy.Rule) { r.Strategies = []policy.Strategy{policy.Salvage, policy.LastGoodCopy} },
		func(r *policy.Rule) { r.Mode = policy.ModeObserve },
	} {
		e, home, db := openclawStoreCase(t, tweak)
		storeEdit(t, db, 86, func(b []byte) { b[3842] = 7 })
		before, _ := os.ReadFile(db)
		r := e.Heal(context.Background(), oneTarget(t, e, home, db), false)
		if r.Kind != format.KindStaleIndex || r.Action != ActionRefused || r.Reason == "" {
			t.Fatalf("heal: %+v", r)
		}
		if after, _ := os.ReadFile(db); !bytes.Equal(before, after) {
			t.Fatal("the store was written")
		}
	}
}

// A quarantine entry of a store is never put back by a file replace.
func TestOpenClawStoreEntryIsNotRestoredByReplace(t *testing.T) {
	e, home, db := openclawStoreCase(t, nil)
	storeEdit(t, db, 86, func(b []byte) { b[3842] = 7 })
	tg := oneTarget(t, e, home, db)
	r := e.Heal(context.Background(), tg, false)
	if r.Action != ActionHealed {
		t.Fatalf("heal: %+v", r)
	}
	before, _ := os.ReadFile(db)
	m, err := e.Quarantine.Get(filepath.Base(r.Quarantine))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := e.Restore(context.Background(), m, tg); err == nil || !strings.Contains(err.Error(), "SQLite store") {
		t.Fatalf("restore of a store's entry: %v", err)
	}
	if after, _ := os.ReadFile(db); !bytes.Equal(before, after) {
		t.Fatal("the store was written")
	}
}

// restore-snapshot, where a rule opts in: a store whose table is damaged gets back its
// newest snapshot that passed the gate, through the backup API, and the report says what was
// discarded; without a snapshot it is left as it is (page 1 destroyed: see
// TestOpenClawStorePageOneRestoredOnlyWhileNoOneHoldsIt).
func TestOpenClawStoreRestoreSnapshotWhereTheRuleOptsIn(t *testing.T) {
	optIn := func(r *policy.Rule) { r.Strategies = append(r.Strategies, policy.RestoreSnapshot) }

	e, home, db := openclawStoreCase(t, optIn)
	tg := oneTarget(t, e, home, db)
	if r := e.Heal(context.Background(), tg, false); r.Verdict != Healthy || len(e.snapshots(db)) != 1 {
		t.Fatalf("first look: %+v, %d snapshots", r, len(e.snapshots(db)))
	}
	storeEdit(t, db, 63, func(b []byte) { clear(b) })
	if r := e.Heal(context.Background(), tg, true); r.Action != ActionWouldHeal || r.Strategy != "restore-snapshot" {
		t.Fatalf("dry run: %+v", r)
	}
	r := e.Heal(context.Background(), tg, false)
	if r.Kind != format.KindCorruptTable || r.Action != ActionHealed || r.Strategy != "restore-snapshot" || !strings.Contains(r.Discarded, "committed after") {
		t.Fatalf("heal: %+v", r)
	}
	if n := storeEvents(t, db); n != 6 {
		t.Fatalf("restored store holds %d events", n)
	}
	m, err := e.Quarantine.Get(filepath.Base(r.Quarantine))
	if err != nil {
		t.Fatal(err)
	}
	if j, err := sqlitedb.Judge(filepath.Join(m.Dir, m.File)); err != nil || j.OK() {
		t.Fatalf("quarantine entry judged %+v %v", j, err)
	}

	// No snapshot kept: left as it is, and said.
	e, home, db = openclawStoreCase(t, optIn)
	storeEdit(t, db, 63, func(b []byte) { clear(b) })
	before, _ := os.ReadFile(db)
	r = e.Heal(context.Background(), oneTarget(t, e, home, db), false)
	if r.Action != ActionRefused || !strings.Contains(r.Reason, "no snapshot") {
		t.Fatalf("heal without a snapshot: %+v", r)
	}
	if after, _ := os.ReadFile(db); !bytes.Equal(before, after) {
		t.Fatal("the store was written")
	}
}

// A store of 0 bytes beside a -wal that holds its transactions is never opened (SQLite would
// delete the -wal): reported, and both files left as they are.
func TestOpenClawStoreEmptyBesideItsWALIsNeverOpened(t *testing.T) {
	e, home, db := openclawStoreCase(t, nil)
	wal := bytes.Repeat([]byte{0x37}, 4096)
	if err := os.WriteFile(db, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(db+"-wal", wal, 0o600); err != nil {
		t.Fatal(err)
	}
	tg := oneTarget(t, e, home, db)
	for _, r := range []Report{e.Check(tg), e.Heal(context.Background(), tg, false)} {
		if r.Kind != format.KindOrphanedWAL {
			t.Fatalf("judged %+v", r)
		}
	}
	if got, _ := os.ReadFile(db + "-wal"); !bytes.Equal(got, wal) {
		t.Fatal("the -wal was changed")
	}
	if fi, _ := os.Stat(db); fi.Size() != 0 {
		t.Fatal("the store was written")
	}
	if _, err := os.Lstat(db + "-shm"); err == nil {
		t.Fatal("a -shm was made beside it")
	}
}

// A store healed while a writer in OpenClaw's style (short BEGIN IMMEDIATE transactions,
// busy_timeout 5000, WAL) commits into it: the damage, made live through SQLite
// (sqlite_dbpage), is judged and healed; none of the writer's commits fails and none is lost.
func TestOpenClawStoreHealedBesideALiveWriter(t *testing.T) {
	e, home, db := openclawStoreCase(t, nil)
	// The writer is this process, which the look at /proc passes over: said as the app.
	e.openBy = func([]Identity) ([]int, bool) { return []int{os.Getpid()}, true }
	w := sqlitetest.StartWriter(t, db, "writer_log", 1, 0)
	w.WaitFor(10)
	// The damage, made through SQLite while the writer runs: one entry of
	// idx_agent_transcript_event_sequence made stale (page 86).
	sqlitetest.StaleOpenClawEntry(t, db)

	tg := oneTarget(t, e, home, db)
	r := e.Heal(context.Background(), tg, false)
	if r.Kind != format.KindStaleIndex || r.Action != ActionHealed {
		t.Fatalf("heal beside the writer: %+v", r)
	}
	w.WaitFor(10)
	if failed := w.Stop(); failed != 0 {
		t.Fatalf("%d of the writer's commits failed", failed)
	}
	row, err := sqlitetest.Row(w.Conn, "SELECT count(*), max(i) FROM writer_log")
	if err != nil {
		t.Fatal(err)
	}
	if row[0].(int64) != w.Wrote() || row[1].(int64) != w.Last() {
		t.Fatalf("the store holds %v commits (last %v), the writer made %d (last %d)", row[0], row[1], w.Wrote(), w.Last())
	}
	if n := storeEvents(t, db); n != 6 {
		t.Fatalf("healed store holds %d events", n)
	}
	if c := e.Check(tg); c.Verdict != Healthy {
		t.Fatalf("after the run: %+v", c)
	}
}

// healHeld is the heal of tg while another process holds its file open; it fails the test
// if the file was written.
func healHeld(t *testing.T, e *Engine, tg Target) Report {
	t.Helper()
	release := sqlitetest.Hold(t, tg.Path)
	before, _ := os.ReadFile(tg.Path)
	r := e.Heal(context.Background(), tg, false)
	release()
	if after, _ := os.ReadFile(tg.Path); !bytes.Equal(before, after) {
		t.Fatal("a held store was written")
	}
	return r
}

// A store whose page 1 is destroyed cannot be written through SQLite: with restore-snapshot,
// its newest verified snapshot is put in place of the file, but only while no process holds
// the store or a sidecar open (a process that does keeps it busy), and the family's bytes are
// quarantined first.
func TestOpenClawStorePageOneRestoredOnlyWhileNoOneHoldsIt(t *testing.T) {
	optIn := func(r *policy.Rule) { r.Strategies = append(r.Strategies, policy.RestoreSnapshot) }
	e, home, db := openclawStoreCase(t, optIn)
	tg := oneTarget(t, e, home, db)
	if r := e.Heal(context.Background(), tg, false); r.Verdict != Healthy || len(e.snapshots(db)) != 1 {
		t.Fatalf("first look: %+v", r)
	}
	storeEdit(t, db, 1, func(b []byte) { clear(b) })
	wal := bytes.Repeat([]byte{0x5a}, 8192) // a -wal beside it: its bytes go to quarantine
	if err := os.WriteFile(db+"-wal", wal, 0o600); err != nil {
		t.Fatal(err)
	}
	if _, complete := fsio.OpenBy(nil); !complete {
		r := e.Heal(context.Background(), tg, false)
		if r.Action != ActionRefused || !strings.Contains(r.Reason, "cannot be proven") {
			t.Fatalf("heal where other processes cannot be seen: %+v", r)
		}
		t.Skip("other users' processes cannot be seen here: the rest needs root")
	}

	// A process holds the store open: busy, nothing written.
	before, _ := os.ReadFile(db)
	r := healHeld(t, e, tg)
	if r.Kind != format.KindNotADatabase || r.Action == ActionHealed || !strings.Contains(r.Reason, "holds the store") {
		t.Fatalf("heal while a process holds the store: %+v", r)
	}

	// No one: restored, the family quarantined, the -wal gone from beside the new file.
	if d := e.Heal(context.Background(), tg, true); d.Action != ActionWouldHeal || d.Strategy != "restore-snapshot" {
		t.Fatalf("dry run: %+v", d)
	}
	r = e.Heal(context.Background(), tg, false)
	if r.Kind != format.KindNotADatabase || r.Action != ActionHealed || r.Strategy != "restore-snapshot" || r.Discarded == "" {
		t.Fatalf("heal: %+v", r)
	}
	if n := storeEvents(t, db); n != 6 {
		t.Fatalf("restored store holds %d events", n)
	}
	if _, err := os.Lstat(db + "-wal"); err == nil {
		if fi, _ := os.Stat(db + "-wal"); fi.Size() > 0 {
			t.Fatal("the old -wal was left beside the restored store")
		}
	}
	ms, err := e.Quarantine.List()
	if err != nil {
		t.Fatal(err)
	}
	kept := map[string][]byte{}
	for _, m := range ms {
		b, _ := os.ReadFile(filepath.Join(m.Dir, m.File))
		kept[filepath.Base(m.Path)] = b
	}
	if !bytes.Equal(kept["openclaw-agent.sqlite-wal"], wal) || !bytes.Equal(kept["openclaw-agent.sqlite"], before) {
		t.Fatalf("quarantine holds %d entries, not the family's bytes", len(ms))
	}
	if fi, _ := os.Stat(db); fi.Mode().Perm() != 0o600 {
		t.Fatalf("restored store's mode %v", fi.Mode())
	}
}

// OpenCode's store, as OpenCode 1.18.33 made it (samples/opencode/README.md), under the
// opencode preset: a stale key of session_project_idx (OpenCode silently leaves that session
// out of its list) and that index's page zeroed (OpenCode exits at start) are judged and
// healed by reindex; its 5 sessions are all there after.
func TestOpenCodeStoreHealedThroughSQLite(t *testing.T) {
	for _, tc := range []struct {
		name, kind string
		edit       func(page []byte)
	}{
		{"stale key", format.KindStaleIndex, func(b []byte) {
			i := bytes.Index(b, []byte("global"))
			if i < 0 {
				t.Fatal("no key global on the index's page")
			}
			b[i+5] = 'L'
		}},
		{"page zeroed", format.KindBrokenIndex, func(b []byte) { clear(b) }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			data := filepath.Join(dir, "xdg")
			db := filepath.Join(data, "opencode", "opencode.db")
			sqlitetest.Place(t, sqlitetest.OpenCode, db)
			r, ok := policy.PresetRule("opencode", policy.Env{Home: dir, Getenv: func(k string) string {
				if k == "XDG_DATA_HOME" {
					return data
				}
				return ""
			}, Exists: func(string) bool { return false }})
			if !ok || len(r.Paths) != 1 || r.Paths[0] != filepath.Join(data, "opencode") {
				t.Fatalf("opencode preset: %+v", r)
			}
			e := New(&policy.Config{Version: 1, StateDir: filepath.Join(dir, "state"), Rules: []policy.Rule{r}}, Options{})
			storeEdit(t, db, 56, tc.edit)
			ts, errs := e.Targets(nil, nil)
			if len(errs) > 0 || len(ts) != 1 || ts[0].Path != db {
				t.Fatalf("targets %+v %v", ts, errs)
			}
			if c := e.Check(ts[0]); c.Format != "opencode-db" || c.Kind != tc.kind {
				t.Fatalf("check: %+v", c)
			}
			h := e.Heal(context.Background(), ts[0], false)
			if h.Action != ActionHealed || h.Strategy != "reindex" {
				t.Fatalf("heal: %+v", h)
			}
			if c := e.Check(ts[0]); c.Verdict != Healthy {
				t.Fatalf("after: %+v", c)
			}
			n := sqlitetest.Count(t, db, "SELECT count(*) FROM session WHERE project_id='global'")
			if n != 3 {
				t.Fatalf("sessions of the project found through the index: %d, want 3", n)
			}
		})
	}
}

// A store deleted with its -wal left (OpenClaw's case S6): the -wal holds the transactions of
// no store, reported, and nothing is created or opened.
func TestOpenClawStoreMissingBesideItsWAL(t *testing.T) {
	e, home, db := openclawStoreCase(t, nil)
	wal := bytes.Repeat([]byte{0x37}, 4096)
	if err := os.Remove(db); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(db+"-wal", wal, 0o600); err != nil {
		t.Fatal(err)
	}
	ts, errs := e.Targets([]string{home}, nil)
	if len(errs) > 0 || len(ts) != 1 || ts[0].Path != db || !ts[0].Missing {
		t.Fatalf("targets %+v %v", ts, errs)
	}
	for _, r := range []Report{e.Check(ts[0]), e.Heal(context.Background(), ts[0], false)} {
		if r.Kind != format.KindOrphanedWAL || r.Action == ActionHealed {
			t.Fatalf("judged %+v", r)
		}
	}
	if _, err := os.Lstat(db); err == nil {
		t.Fatal("a store was made beside the -wal")
	}
	if got, _ := os.ReadFile(db + "-wal"); !bytes.Equal(got, wal) {
		t.Fatal("the -wal was changed")
	}
}

// The daemon's engine judges a store again when it changes, but no sooner than its spacing
// after the last judgement (a busy app's store changes at every commit), and an unchanged
// one only after sqliteRejudge; a one-shot engine judges it every time.
func TestOpenClawStoreJudgementsAreSpaced(t *testing.T) {
	e, home, db := openclawStoreCase(t, nil)
	now := time.Unix(1_800_000_000, 0)
	e.Now = func() time.Time { return now }
	tg := oneTarget(t, e, home, db)
	judged := func() bool {
		r := e.Heal(context.Background(), tg, false)
		if r.Verdict != Healthy {
			t.Fatalf("heal: %+v", r)
		}
		// Each judgement keeps its copy as the newest snapshot, named by the clock.
		names := e.snapshots(db)
		return len(names) > 0 && strings.HasSuffix(names[len(names)-1], fmt.Sprintf("%020d.sqlite", now.UnixNano()))
	}
	if !judged() {
		t.Fatal("first look: not judged")
	}
	now = now.Add(time.Second)
	if judged() {
		t.Fatal("unchanged a second later: judged again")
	}
	// A commit: the store changed. Within the spacing, not judged; after it, judged.
	touch := func() {
		c := sqlitetest.Open(t, db, "mode=rw")
		defer c.Close()
		if err := sqlitetest.Exec(c, "CREATE TABLE IF NOT EXISTS t (x); INSERT INTO t VALUES (1)"); err != nil {
			t.Fatal(err)
		}
	}
	touch()
	// The spacing: at least sqliteMinGap, more where the judgement took long (a loaded machine).
	e.sqlite.mu.Lock()
	gap := max(sqliteMinGap, sqliteSpacing*e.sqlite.seen[db].cost)
	e.sqlite.mu.Unlock()
	now = now.Add(gap / 2)
	if judged() {
		t.Fatal("changed within the spacing after its judgement: judged again")
	}
	now = now.Add(gap)
	if !judged() {
		t.Fatal("changed, past the spacing: not judged")
	}
	now = now.Add(sqliteRejudge + time.Second)
	if !judged() {
		t.Fatal("unchanged past sqliteRejudge: not judged")
	}
	// A one-shot engine (the CLI) judges every time.
	e.oneShot = true
	now = now.Add(time.Second)
	if !judged() {
		t.Fatal("one-shot: not judged")
	}
}

// A broken index of a store over the live-VACUUM size is rebuilt only while no process holds
// the store (the VACUUM would hold its write lock past the app's busy timeout).
func TestOpenClawStoreBigRebuildOnlyWhileNoOneHoldsIt(t *testing.T) {
	e, home, db := openclawStoreCase(t, nil)
	e.sqlite.liveVacuum = 64 << 10
	storeEdit(t, db, 86, func(b []byte) { clear(b) })
	tg := oneTarget(t, e, home, db)
	if _, complete := fsio.OpenBy(nil); !complete {
		t.Skip("other users' processes cannot be seen here: needs root")
	}
	if r := healHeld(t, e, tg); r.Kind != format.KindBrokenIndex || r.Action == ActionHealed || !strings.Contains(r.Reason, "VACUUM") {
		t.Fatalf("heal while a process holds the store: %+v", r)
	}
	if r := e.Heal(context.Background(), tg, false); r.Action != ActionHealed || storeEvents(t, db) != 6 {
		t.Fatalf("heal with no one holding it: %+v", r)
	}
}

// The snapshots kept are two per store, and all of them within last_good.max_total_bytes,
// the oldest pruned first.
func TestOpenClawStoreSnapshotsBounded(t *testing.T) {
	e, home, db := openclawStoreCase(t, nil)
	e.oneShot = true // every heal judges the store anew
	tg := oneTarget(t, e, home, db)
	for i := 0; i < 4; i++ {
		if r := e.Heal(context.Background(), tg, false); r.Verdict != Healthy {
			t.Fatalf("heal: %+v", r)
		}
	}
	snaps := e.snapshots(db)
	if len(snaps) != sqliteSnapshots {
		t.Fatalf("%d snapshots kept, want %d", len(snaps), sqliteSnapshots)
	}
	fi, err := os.Stat(snaps[0])
	if err != nil {
		t.Fatal(err)
	}
	e.Policy.LastGood.MaxTotalBytes = fi.Size() + 1
	if _, err := e.PruneStats(); err != nil {
		t.Fatal(err)
	}
	if got := e.snapshots(db); len(got) != 1 || got[0] != snaps[1] {
		t.Fatalf("after the prune: %v, want the newest of %v", got, snaps)
	}
}

// A store found sound again once the heal holds the path's lock (another process healed it
// between the judgement and the lock) gets no snapshot written over it.
func TestOpenClawStoreRestoredMeanwhileIsNotRestoredAgain(t *testing.T) {
	optIn := func(r *policy.Rule) { r.Strategies = append(r.Strategies, policy.RestoreSnapshot) }
	e, home, db := openclawStoreCase(t, optIn)
	tg := oneTarget(t, e, home, db)
	good, _ := os.ReadFile(db)
	e.Heal(context.Background(), tg, false) // its snapshot
	storeEdit(t, db, 63, func(b []byte) { clear(b) })
	e.onStep = func(step, path string) {
		if step == "judged" {
			// Healed by someone else, and written to since: the newer store is the app's.
			if err := os.WriteFile(db, good, 0o600); err != nil {
				t.Error(err)
			}
			c := sqlitetest.Open(t, db, "mode=rw")
			if err := sqlitetest.Exec(c, "CREATE TABLE newer (x)"); err != nil {
				t.Error(err)
			}
			c.Close()
		}
	}
	r := e.Heal(context.Background(), tg, false)
	if r.Action == ActionHealed || r.Verdict != Healthy {
		t.Fatalf("heal: %+v", r)
	}
	e.onStep = nil
	if n := sqlitetest.Count(t, db, "SELECT count(*) FROM newer"); n != 0 {
		t.Fatalf("the app's newer store was replaced (%d)", n)
	}
}

// A dry run of a damaged store judges the store itself and writes nothing anywhere, the state
// directory included.
func TestOpenClawStoreDryRunWritesNothing(t *testing.T) {
	e, home, db := openclawStoreCase(t, nil)
	storeEdit(t, db, 86, func(b []byte) { b[3842] = 7 })
	before, _ := os.ReadFile(db)
	r := e.Heal(context.Background(), oneTarget(t, e, home, db), true)
	if r.Kind != format.KindStaleIndex || r.Action != ActionWouldHeal || r.Strategy != "reindex" {
		t.Fatalf("dry run: %+v", r)
	}
	if _, err := os.Stat(e.StateDir); !os.IsNotExist(err) {
		t.Fatalf("a dry run made the state dir: %v", err)
	}
	if after, _ := os.ReadFile(db); !bytes.Equal(before, after) {
		t.Fatal("a dry run changed the store")
	}
	ents, _ := os.ReadDir(filepath.Dir(db))
	if len(ents) != 1 {
		t.Fatalf("a dry run left files beside the store: %v", ents)
	}
}

// A store that cannot be judged (here its copy cannot be synced in the state dir) is busy,
// not skipped: looked at again, and said while it lasts; nothing is written to it.
func TestOpenClawStoreNotJudgedIsBusy(t *testing.T) {
	e, home, db := openclawStoreCase(t, nil)
	e.fs.Faults = func(op, path string) error {
		if op == "fsync" && strings.Contains(path, filepath.Join("sqlite", "tmp")) {
			return syscall.EIO
		}
		return nil
	}
	storeEdit(t, db, 86, func(b []byte) { b[3842] = 7 })
	before, _ := os.ReadFile(db)
	r := e.Heal(context.Background(), oneTarget(t, e, home, db), false)
	if r.Verdict != Busy || !strings.Contains(r.Kind+r.Detail, "not judged") {
		t.Fatalf("heal with the copy failing: %+v", r)
	}
	if after, _ := os.ReadFile(db); !bytes.Equal(before, after) {
		t.Fatal("the store was written")
	}
	if ents, _ := os.ReadDir(filepath.Join(e.StateDir, "sqlite", "tmp")); len(ents) != 0 {
		t.Fatalf("copies left: %v", ents)
	}
}

// A store over last_good.max_file_bytes is judged on itself, never copied into the state dir
// while it is healthy (its copy would outgrow the state dir's budget); a heal copies it then,
// for its quarantine entry.
func TestOpenClawStoreOverTheCopySizeJudgedLive(t *testing.T) {
	e, home, db := openclawStoreCase(t, nil)
	e.Policy.LastGood.MaxFileBytes = 64 << 10
	tg := oneTarget(t, e, home, db)
	if r := e.Heal(context.Background(), tg, false); r.Verdict != Healthy {
		t.Fatalf("heal: %+v", r)
	}
	if n := len(e.snapshots(db)); n != 0 {
		t.Fatalf("%d snapshots of a store over the copy size", n)
	}
	if ents, _ := os.ReadDir(filepath.Join(e.StateDir, "sqlite", "tmp")); len(ents) != 0 {
		t.Fatalf("copies left: %v", ents)
	}
	storeEdit(t, db, 86, func(b []byte) { b[3842] = 7 })
	r := e.Heal(context.Background(), tg, false)
	if r.Kind != format.KindStaleIndex || r.Action != ActionHealed || r.Quarantine == "" {
		t.Fatalf("heal: %+v", r)
	}
	m, err := e.Quarantine.Get(filepath.Base(r.Quarantine))
	if err != nil {
		t.Fatal(err)
	}
	if j, err := sqlitedb.Judge(filepath.Join(m.Dir, m.File)); err != nil || j.OK() {
		t.Fatalf("its quarantine entry judged %+v %v", j, err)
	}
	if n := storeEvents(t, db); n != 6 {
		t.Fatalf("healed store holds %d events", n)
	}
}

// Run as root over a tree another user owns, every SQLite open of the store is that user's:
// the sidecars SQLite makes while it judges and heals, and a destroyed store's replacement,
// belong to them, and nothing in their tree is left root's.
func TestOpenClawStoreOfAnotherUserHealedAsThatUser(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root to give the tree away")
	}
	if _, complete := fsio.OpenBy(nil); !complete {
		t.Skip("other users' processes cannot be seen here")
	}
	const uid = 4242
	optIn := func(r *policy.Rule) { r.Strategies = append(r.Strategies, policy.RestoreSnapshot) }
	e0, home, db := openclawStoreCase(t, optIn)
	filepath.WalkDir(home, func(p string, d os.DirEntry, err error) error {
		if err == nil {
			os.Chown(p, uid, uid)
			if d.IsDir() {
				os.Chmod(p, 0o700)
			}
		}
		return err
	})
	e := New(e0.Policy, Options{Now: e0.Now}) // the rule root resolved with its new owner
	tg := oneTarget(t, e, home, db)
	// The directories above the tree are root's, 0700 (t.TempDir's): SQLite's open by path,
	// as the tree's owner, cannot pass them; the store is then busy and said, never skipped.
	if r := e.Heal(context.Background(), tg, false); r.Verdict != Busy || !strings.Contains(r.Detail, "every directory above it must let its owner through") {
		t.Fatalf("a store its owner cannot reach by its path: %+v", r)
	}
	for d := filepath.Dir(home); d != "/" && d != os.TempDir(); d = filepath.Dir(d) {
		os.Chmod(d, 0o755) // as a home's parents are
	}
	owned := func(what string) {
		t.Helper()
		filepath.WalkDir(home, func(p string, d os.DirEntry, err error) error {
			if err != nil {
				return err
			}
			fi, _ := d.Info()
			if st, ok := fi.Sys().(*syscall.Stat_t); ok && st.Uid != uid {
				t.Errorf("%s: %s belongs to uid %d", what, p, st.Uid)
			}
			return nil
		})
	}
	if r := e.Heal(context.Background(), tg, false); r.Verdict != Healthy || len(e.snapshots(db)) != 1 {
		t.Fatalf("first look: %+v", r)
	}
	owned("after the first look")
	storeEdit(t, db, 86, func(b []byte) { b[3842] = 7 })
	if r := e.Heal(context.Background(), tg, false); r.Action != ActionHealed || r.Strategy != "reindex" {
		t.Fatalf("reindex: %+v", r)
	}
	owned("after the reindex")
	storeEdit(t, db, 1, func(b []byte) { clear(b) })
	if r := e.Heal(context.Background(), tg, false); r.Action != ActionHealed || r.Strategy != "restore-snapshot" {
		t.Fatalf("restore of a destroyed store: %+v", r)
	}
	owned("after the destroyed store's restore")
	if fi, _ := os.Stat(db); fi.Mode().Perm() != 0o600 {
		t.Fatalf("the restored store's mode is %v", fi.Mode())
	}
	if n := storeEvents(t, db); n != 6 {
		t.Fatalf("the store holds %d events", n)
	}
}
