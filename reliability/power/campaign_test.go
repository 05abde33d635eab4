package power

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"flag"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/sessionmedic/sessionmedic/heal"
	"github.com/sessionmedic/sessionmedic/heal/state"
	"github.com/sessionmedic/sessionmedic/policy"
	"github.com/sessionmedic/sessionmedic/reliability/figures"
	"github.com/sessionmedic/sessionmedic/reliability/fixtures"
)

var (
	long     = flag.Bool("long", false, "run the long campaign: at least 1,000,000 crash states")
	seedBase = flag.Uint64("seed", 1, "seed of the generated inputs and of the sampled states")
	workersN = flag.Int("workers", 0, "states checked at once (default GOMAXPROCS)")
)

// Campaign sizes: states per crash point (all of them where there are no more), and the
// states generated in all.
func perPoint() int {
	if *long {
		return 512
	}
	return 24
}

// bigStates is the share of the big-file target.
func bigStates() int64 {
	if *long {
		return 3000
	}
	return 60
}

// goal: the default campaign (the README's test command) stays well inside go test's
// default 10-minute limit on a loaded 2-core machine (30,000 states took 380 s on a quiet
// one under -race, over 600 s beside other builds; 8,000 took 171 s quiet and 480 s beside
// two CPU hogs and other tests, load 9 to 13); -long runs the million.
func goal() int64 {
	if *long {
		return 1_000_000
	}
	return 5_000
}

// stats are the campaign's figures.
type stats struct {
	states, distinct, probes, violations atomic.Int64
	targets, changed, ops, points        atomic.Int64
	stateTemps, reordered, scattered     atomic.Int64
}

// TestPowerCut cuts the power at every point of the heal of each target, in every state the
// model allows (sampled where there are too many), and runs the next start on each.
func TestPowerCut(t *testing.T) {
	started := time.Now()
	var st stats
	base := tempBase(t)
	workers := *workersN
	if workers <= 0 {
		workers = max(runtime.GOMAXPROCS(0), 1)
	}
	inputs, err := sampleInputs()
	if err != nil {
		t.Fatal(err)
	}
	var tgs []target
	for _, in := range inputs {
		ts, err := sampleTargets(in)
		if err != nil {
			t.Fatal(err)
		}
		tgs = append(tgs, ts...)
	}
	for i := range 4 {
		tgs = append(tgs, genTarget(*seedBase+uint64(i)))
	}
	tgs = append(tgs, bigTarget(*seedBase))
	ba, err := bigAppTarget(*seedBase)
	if err != nil {
		t.Fatal(err)
	}
	tgs = append(tgs, ba)
	tgs = append(tgs, sqliteStoreTarget(t))
	for round := 0; st.states.Load() < goal(); round++ {
		for i, tg := range tgs {
			if st.states.Load() >= goal() {
				break
			}
			if round > 0 && tg.gen != nil {
				tgs[i] = tg.gen(*seedBase + uint64(round*len(tgs)+i))
				tg = tgs[i]
			}
			budget := max((goal()-st.states.Load())/int64(len(tgs)-i), 1)
			if round > 0 {
				budget = goal() - st.states.Load()
			}
			t.Run(fmt.Sprintf("%s/round%d", tg.name, round), func(t *testing.T) {
				campaign(t, &st, tg, base, workers, budget, *seedBase+uint64(round))
			})
		}
	}
	secs := time.Since(started).Seconds()
	fmt.Printf("power suite: %d targets (%d whose heal changed a session file), %d operations recorded, %d crash points; %d crash states (%d distinct) checked, %d last-good probes (%d states with data landed out of order, %d with a write's blocks landed apart), %d violations in %.1fs (observed: %d temps left in the state dir)\n",
		st.targets.Load(), st.changed.Load(), st.ops.Load(), st.points.Load(), st.states.Load(), st.distinct.Load(), st.probes.Load(), st.reordered.Load(), st.scattered.Load(), st.violations.Load(), secs, st.stateTemps.Load())
	mode := "ci"
	if *long {
		mode = "long"
	}
	if err := figures.Write("power", map[string]any{"mode": mode, "targets": st.targets.Load(), "targets_changed": st.changed.Load(), "operations": st.ops.Load(),
		"crash_points": st.points.Load(), "states": st.states.Load(), "distinct_states": st.distinct.Load(),
		"last_good_probes": st.probes.Load(), "reordered_states": st.reordered.Load(), "scattered_states": st.scattered.Load(), "violations": st.violations.Load(), "seconds": secs, "seed": *seedBase,
		"workers": workers, "state_dir_temps_left": st.stateTemps.Load()}); err != nil {
		t.Errorf("RELIABILITY_OUT: %v", err)
	}
}

// tempBase is where runs are laid out: tmpfs where there is one (fsync costs nothing there,
// and the model, not the disk, decides what survives).
func tempBase(t *testing.T) string {
	if fi, err := os.Stat("/dev/shm"); err == nil && fi.IsDir() {
		if d, err := os.MkdirTemp("/dev/shm", "sessionmedic-power-"); err == nil {
			t.Cleanup(func() { os.RemoveAll(d) })
			return d
		}
	}
	return t.TempDir()
}

// campaign records one target and checks up to budget of its crash states.
func campaign(t *testing.T, st *stats, tg target, base string, workers int, budget int64, seed uint64) {
	runDir := filepath.Join(base, tg.name)
	slot := func(i int) string { return filepath.Join(runDir, fmt.Sprintf("w%02d", i)) }
	if err := os.MkdirAll(slot(0), 0o755); err != nil {
		t.Fatal(err)
	}
	defer os.RemoveAll(runDir)
	rc := record(t, tg, slot(0))
	st.targets.Add(1)
	if rc.changed > 0 {
		st.changed.Add(1)
	}
	st.ops.Add(int64(len(rc.ops) - rc.from))
	st.points.Add(int64(len(rc.ops) - rc.from + 1))
	// Spread the budget over the crash points: all states where they fit.
	limit := perPoint()
	if strings.HasPrefix(tg.name, "big#") {
		budget = min(budget, bigStates()) // each state lays out some 50 MB
	}
	if n := int64(len(rc.ops)-rc.from+1) * int64(limit); n > budget {
		limit = max(int(budget/int64(len(rc.ops)-rc.from+1)), 2)
	}
	jobs := make(chan State, workers)
	var seen sync.Map
	var bad atomic.Int64
	var wg sync.WaitGroup
	for w := 1; w <= workers; w++ {
		wg.Add(1)
		go func(dir string) {
			defer wg.Done()
			for s := range jobs {
				tr := Build(rc.init, rc.ops, s)
				if _, dup := seen.LoadOrStore(tr.Digest(), true); dup {
					continue
				}
				st.distinct.Add(1)
				for _, v := range check(rc, tr, dir, st) {
					st.violations.Add(1)
					if bad.Add(1) <= 10 {
						t.Errorf("VIOLATION %s: %s\n\tstate: %s", tg.name, v, s.Describe(rc.ops))
					}
				}
			}
		}(slot(w))
	}
	r := rand.New(rand.NewPCG(seed, 0x63757473))
	var sent int64
	States(rc.ops, rc.from, limit, r, func(s State) bool {
		if s.Order != nil {
			st.reordered.Add(1)
		}
		for _, a := range s.Alts {
			if a.Mask != 0 {
				st.scattered.Add(1)
				break
			}
		}
		jobs <- s
		sent++
		return st.states.Add(1) < goal() && sent < budget
	})
	close(jobs)
	wg.Wait()
	if n := bad.Load(); n > 10 {
		t.Errorf("%d violations in all (the first 10 are above)", n)
	}
}

// check lays the state out in dir, runs the next start on it and returns the broken
// invariants.
func check(rc *recording, tr Tree, dir string, st *stats) []string {
	if err := layout(rc, tr, dir); err != nil {
		return []string{fmt.Sprintf("lay out: %v", err)}
	}
	caseDir, stateDir := filepath.Join(dir, "case"), filepath.Join(dir, "state")
	var bad []string
	// The power came back: every file holds its old or its healed bytes, and a changed one
	// has its original in quarantine.
	crashed, attrs := caseFiles(tr), caseAttrs(tr)
	for _, rel := range fixtures.Keys(rc.orig, rc.healed, crashed) {
		cur, ok := crashed[rel]
		o, inO := rc.orig[rel]
		h, inH := rc.healed[rel]
		if (ok != inO || !bytes.Equal(cur, o)) && (ok != inH || !bytes.Equal(cur, h)) {
			bad = append(bad, fmt.Sprintf("after the power cut %s holds neither its old nor its healed bytes: %s", rel, describe(cur, ok)))
		}
		if inO && (!ok || !bytes.Equal(cur, o)) && !quarantined(stateDir, filepath.Join(caseDir, rel), o, cur) {
			bad = append(bad, fmt.Sprintf("after the power cut %s changed but the quarantine does not hold its original with a valid manifest", rel))
		}
		if a, want := attrs[rel], rc.attrs[rel]; ok && want.mode != 0 && a != want {
			bad = append(bad, fmt.Sprintf("after the power cut %s has mode %o and owner %v, want %o and %v", rel, a.mode, a.own, want.mode, want.own))
		}
	}
	for _, l := range ovLocks(tr) {
		bad = append(bad, "after the power cut an OpenViking lock blocks the app: "+l)
	}
	probe := badLastGood(rc, tr, dir)
	e, err := newEngine(rc.tg, dir, nil, true)
	if err != nil {
		return append(bad, err.Error())
	}
	reports, err := healAll(e)
	if err != nil {
		return append(bad, "second start: "+err.Error())
	}
	now, temps, err := readCase(caseDir)
	if err != nil {
		return append(bad, err.Error())
	}
	lost := lostLastGood(rc, tr)
	for _, rel := range fixtures.Keys(rc.healed, now) {
		cur, ok := now[rel]
		h, inH := rc.healed[rel]
		// Where the cut took a last-good copy away (they are written without fsync), the
		// next start heals as with no copy: the file is healed some other way, or kept as
		// it was and reported.
		healed := ok == inH && bytes.Equal(cur, h)
		if !healed && !(ok && lost && (bytes.Equal(cur, rc.orig[rel]) || judgedHealthy(rc, dir, rel))) {
			bad = append(bad, fmt.Sprintf("after the second start %s is not healed: %s, want %s; reports %s", rel, describe(cur, ok), describe(h, inH), brief(reports)))
		}
		if o, inO := rc.orig[rel]; inO && (!ok || !bytes.Equal(cur, o)) && !quarantined(stateDir, filepath.Join(caseDir, rel), o, cur) {
			bad = append(bad, fmt.Sprintf("after the second start %s changed but the quarantine does not hold its original", rel))
		}
	}
	for _, tmp := range temps {
		bad = append(bad, "after the second start a temp survives: "+tmp)
	}
	for rel, want := range rc.attrs {
		if a, err := attrOf(filepath.Join(caseDir, rel)); err == nil && a != want {
			bad = append(bad, fmt.Sprintf("after the second start %s has mode %o and owner %v, want %o and %v", rel, a.mode, a.own, want.mode, want.own))
		}
	}
	for _, l := range locksOnDisk(caseDir) {
		bad = append(bad, "after the second start an OpenViking lock blocks the app: "+l)
	}
	if ents, _ := os.ReadDir(filepath.Join(stateDir, "journal")); len(ents) > 0 {
		bad = append(bad, fmt.Sprintf("after the second start the journal holds %d entries", len(ents)))
	}
	st.stateTemps.Add(int64(len(ownTemps(stateDir))))
	if len(probe) > 0 {
		st.probes.Add(1)
		bad = append(bad, probeLastGood(rc, tr, dir, probe)...)
	}
	return bad
}

func layout(rc *recording, tr Tree, dir string) error {
	if err := os.RemoveAll(dir); err != nil {
		return err
	}
	if err := os.Mkdir(dir, 0o755); err != nil {
		return err
	}
	from, to := []byte(rc.dir), []byte(dir)
	if err := tr.Materialise(dir, func(b []byte) []byte {
		if bytes.Contains(b, from) {
			return bytes.ReplaceAll(b, from, to)
		}
		return b
	}); err != nil {
		return err
	}
	// Last-good copies, and the directories of SQLite stores' snapshots, are named by a hash
	// of the file's path: rename them to the new path's.
	for _, sub := range []string{"last-good", filepath.Join("sqlite", "snapshots")} {
		lg := filepath.Join(dir, "state", sub)
		for _, rel := range fixtures.Keys(rc.orig, rc.healed) {
			old := filepath.Join(lg, lastGoodName(filepath.Join(rc.dir, "case", rel)))
			if _, err := os.Lstat(old); err == nil {
				if err := os.Rename(old, filepath.Join(lg, lastGoodName(filepath.Join(dir, "case", rel)))); err != nil {
					return err
				}
			}
		}
	}
	return nil
}

func describe(b []byte, ok bool) string {
	if !ok {
		return "absent"
	}
	nul := ""
	if i := bytes.Index(b, make([]byte, 8)); i >= 0 {
		nul = fmt.Sprintf(", NULs from %d", i)
	}
	s := sha256.Sum256(b)
	return fmt.Sprintf("%d bytes sha256 %s%s", len(b), hex.EncodeToString(s[:6]), nul)
}

// readCase reads the session files under caseDir and lists own temps.
func readCase(caseDir string) (map[string][]byte, []string, error) {
	files := map[string][]byte{}
	var temps []string
	err := filepath.WalkDir(caseDir, func(p string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		rel, _ := filepath.Rel(caseDir, p)
		switch {
		case policy.IsOwnTemp(d.Name()):
			temps = append(temps, rel)
		case isAppLock(rel):
		default:
			var b []byte
			if b, err = os.ReadFile(p); err == nil && !sqliteScratch(rel, b) {
				files[rel] = b
			}
		}
		return err
	})
	return files, temps, err
}

// sqliteScratch: a SQLite store's -shm (its shared-memory index: no data, rebuilt by SQLite)
// or an empty -wal (no transaction in it), which any SQLite open makes beside a store and its
// close removes — SQLite's own, not session content. A -wal that holds transactions is
// session content: it is checked as every session file is.
func sqliteScratch(rel string, data []byte) bool {
	return strings.HasSuffix(rel, ".sqlite-shm") || (strings.HasSuffix(rel, ".sqlite-wal") && len(data) == 0)
}

// locksOnDisk is ovLocks of the files under root.
func locksOnDisk(root string) []string {
	var out []string
	filepath.WalkDir(root, func(p string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() || !isTokenName(d.Name()) {
			return nil
		}
		if b, err := os.ReadFile(p); err == nil && unusableToken(d.Name(), b) {
			out = append(out, fmt.Sprintf("%s holds %q", p, b))
		}
		return nil
	})
	return out
}

func ownTemps(root string) []string {
	var out []string
	filepath.WalkDir(root, func(p string, d os.DirEntry, err error) error {
		if err == nil && !d.IsDir() && policy.IsOwnTemp(d.Name()) {
			out = append(out, p)
		}
		return nil
	})
	return out
}

// quarantined reports whether the quarantine holds orig for path with a manifest that
// names it and its sha256.
//
// A tail cut's entry holds the bytes the cut removed, from its prefix on: it holds the
// original where the file, cur, still starts with the rest (every byte of the original is
// then in the file, untouched, or in the entry).
func quarantined(stateDir, path string, orig, cur []byte) bool {
	sum := sha256.Sum256(orig)
	want := hex.EncodeToString(sum[:])
	dirs, _ := filepath.Glob(filepath.Join(stateDir, "quarantine", "*", "*"))
	for _, d := range dirs {
		b, err := os.ReadFile(filepath.Join(d, "manifest.json"))
		if err != nil {
			continue
		}
		var m struct {
			Path, File, SHA256 string
			Prefix             int64
		}
		if json.Unmarshal(b, &m) != nil || m.Path != path || m.File != filepath.Base(path) || m.SHA256 != want || m.Prefix < 0 || m.Prefix > int64(len(orig)) {
			continue
		}
		if m.Prefix > 0 && !bytes.HasPrefix(cur, orig[:m.Prefix]) {
			continue
		}
		if q, err := os.ReadFile(filepath.Join(d, m.File)); err == nil && bytes.Equal(q, orig[m.Prefix:]) {
			return true
		}
	}
	return false
}

// lastGoodName is the name of path's last-good copy (state.LastGood's key).
func lastGoodName(path string) string { return state.CopyName(path) }

// lostLastGood reports whether the state lacks a last-good copy that the clean heal had
// (absent, or not the bytes it was): the next start heals without it, as a heal with no
// copy does, and may end with other bytes than the clean heal.
func lostLastGood(rc *recording, tr Tree) bool {
	for _, rel := range fixtures.Keys(rc.orig) {
		name := filepath.Join("state", "last-good", lastGoodName(filepath.Join(rc.dir, "case", rel)))
		n, ok := tr.Names[name]
		f, fok := rc.final.Names[name]
		if ok != fok || ok && !bytes.Equal(tr.Data[n.Ino], rc.final.Data[f.Ino]) {
			return true
		}
	}
	return false
}

// judgedHealthy reports whether a start after the second judges rel healthy.
func judgedHealthy(rc *recording, dir, rel string) bool {
	e, err := newEngine(rc.tg, dir, nil, true)
	if err != nil {
		return false
	}
	path := filepath.Join(dir, "case", rel)
	targets, _ := e.Targets(nil, nil)
	for _, t := range targets {
		if t.Path == path {
			return e.Heal(context.Background(), t, true).Verdict == heal.Healthy
		}
	}
	return false
}

// badLastGood lists the session files whose last-good copy in the state is not one of the
// versions written (torn, zero-filled, emptied by the power cut).
func badLastGood(rc *recording, tr Tree, dir string) []string {
	var out []string
	for _, rel := range fixtures.Keys(rc.orig, rc.healed) {
		n, ok := tr.Names[filepath.Join("state", "last-good", lastGoodName(filepath.Join(rc.dir, "case", rel)))]
		if !ok || n.Dir {
			continue
		}
		valid := false
		for _, v := range rc.versions[rel] {
			valid = valid || bytes.Equal(v, tr.Data[n.Ino])
		}
		if !valid {
			out = append(out, rel)
		}
	}
	return out
}

// probeLastGood lays the state out again, damages each file whose last-good copy the power
// cut spoiled (cut in the middle, so a copy would be the better plan) and heals: a heal from
// the last-good copy must restore a version that was written, never the spoiled copy.
func probeLastGood(rc *recording, tr Tree, dir string, rels []string) []string {
	if err := layout(rc, tr, dir); err != nil {
		return []string{fmt.Sprintf("lay out: %v", err)}
	}
	e, err := newEngine(rc.tg, dir, nil, true)
	if err != nil {
		return []string{err.Error()}
	}
	if _, err := e.Recover(); err != nil {
		return []string{"probe: recover: " + err.Error()}
	}
	damaged := map[string][]byte{}
	for _, rel := range rels {
		if h := rc.healed[rel]; len(h) > 2 {
			damaged[rel] = h[:len(h)/2]
		}
	}
	if err := writeFiles(filepath.Join(dir, "case"), damaged); err != nil {
		return []string{err.Error()}
	}
	reports, err := healAll(e)
	if err != nil {
		return []string{"probe: " + err.Error()}
	}
	var bad []string
	for _, r := range reports {
		rel, _ := filepath.Rel(filepath.Join(dir, "case"), r.Path)
		if _, probed := damaged[rel]; !probed || r.Action != heal.ActionHealed || r.Strategy != string(policy.LastGoodCopy) {
			continue
		}
		cur, _ := os.ReadFile(r.Path)
		valid := false
		for _, v := range rc.versions[rel] {
			valid = valid || bytes.Equal(v, cur)
		}
		if !valid {
			bad = append(bad, fmt.Sprintf("a heal of %s from its spoiled last-good copy restored %s", rel, describe(cur, true)))
		}
	}
	return bad
}
