// Package faults fails the file operations of heals one at a time (EIO, and ENOSPC for
// writes), in the session directory and in the state directory, through the fault seam of the
// engines and daemons it builds (heal.Options.Faults, daemon.Options.Faults):
// the session file keeps its original bytes (or, for a fault after the rename, holds exactly
// the healed bytes), the failure is reported, no temp file and no journal entry is left, and
// the heal succeeds once the fault clears; the daemon keeps running through faults.
//
//	go test -race ./reliability/faults -count=1 -v
//
// Each test hands its injector's hook to the engines and daemons it builds; the figures are
// counted across tests, so no test here runs in parallel with another.
package faults

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/sessionmedic/sessionmedic/heal"
	"github.com/sessionmedic/sessionmedic/policy"
	"github.com/sessionmedic/sessionmedic/reliability/figures"
	"github.com/sessionmedic/sessionmedic/reliability/fixtures"
)

var samplesDir = filepath.Join("..", "..", "heal", "testdata", "samples")

var stats struct {
	injected   atomic.Int64 // faults the hook returned
	scenarios  atomic.Int64 // heals (or daemon cycles) run with a fault armed
	notFired   atomic.Int64 // armed faults the heal never reached
	violations atomic.Int64
	orphans    atomic.Int64 // observation: quarantine dirs a failed heal left without a manifest
	mu         sync.Mutex
	covered    map[string]bool // op@where that failed at least once
}

var started = time.Now()

func TestMain(m *testing.M) {
	stats.covered = map[string]bool{}
	code := m.Run()
	var ops []string
	stats.mu.Lock()
	for k := range stats.covered {
		ops = append(ops, k)
	}
	stats.mu.Unlock()
	sort.Strings(ops)
	fmt.Printf("faults suite: %d faults injected in %d scenarios (%d armed faults never reached), %d operations covered [%s], %d violations in %.1fs (observed: %d quarantine dirs without manifest)\n",
		stats.injected.Load(), stats.scenarios.Load(), stats.notFired.Load(), len(ops), strings.Join(ops, " "), stats.violations.Load(), time.Since(started).Seconds(), stats.orphans.Load())
	if err := figures.Write("faults", map[string]any{
		"faults": stats.injected.Load(), "scenarios": stats.scenarios.Load(),
		"not_fired": stats.notFired.Load(), "operations_covered": len(ops), "operations": ops,
		"violations": stats.violations.Load(), "seconds": time.Since(started).Seconds(),
		"quarantine_dirs_without_manifest": stats.orphans.Load(),
	}); err != nil {
		fmt.Fprintf(os.Stderr, "RELIABILITY_OUT: %v\n", err)
		code = 1
	}
	if code == 0 && stats.violations.Load() > 0 {
		code = 1
	}
	os.Exit(code)
}

// violate reports a broken invariant.
func violate(t *testing.T, format string, args ...any) {
	t.Helper()
	stats.violations.Add(1)
	t.Errorf("VIOLATION: "+format, args...)
}

// call is one operation the fault hook was asked about.
type call struct {
	op, path, where string // where: session | state | other
}

// injector is the fault hook: it records calls and fails the ones its rule picks.
type injector struct {
	mu             sync.Mutex
	caseDir, state string
	calls          []call
	fail           func(i int, c call) error // nil: fail nothing
	fired          []call
}

func within(root, p string) bool {
	rel, err := filepath.Rel(root, p)
	return err == nil && rel != ".." && !strings.HasPrefix(rel, "../") && !filepath.IsAbs(rel)
}

func (in *injector) hook(op, path string) error {
	in.mu.Lock()
	defer in.mu.Unlock()
	c := call{op: op, path: path, where: "other"}
	switch {
	case within(filepath.Dir(in.state), path):
		// The state dir, or its parent (fsynced when the state dir is created).
		c.where = "state"
	case within(in.caseDir, path):
		c.where = "session"
	}
	i := len(in.calls)
	in.calls = append(in.calls, c)
	if in.fail == nil {
		return nil
	}
	err := in.fail(i, c)
	if err != nil {
		in.fired = append(in.fired, c)
		stats.injected.Add(1)
		stats.mu.Lock()
		stats.covered[c.op+"@"+c.where] = true
		stats.mu.Unlock()
	}
	return err
}

// reset points the injector at a case (whose engine was built with its hook) and forgets
// its calls and its rule.
func (in *injector) reset(caseDir, state string) {
	in.mu.Lock()
	in.caseDir, in.state, in.calls, in.fail, in.fired = caseDir, state, nil, nil, nil
	in.mu.Unlock()
}

// faults is the hook to build an engine or a daemon with (nil for a nil injector: no faults).
func (in *injector) faults() func(op, path string) error {
	if in == nil {
		return nil
	}
	return in.hook
}

// arm sets the rule that picks the calls to fail (nil: none); the calls it failed so far
// are kept until the next rule.
func (in *injector) arm(f func(i int, c call) error) {
	in.mu.Lock()
	in.fail = f
	if f != nil {
		in.fired = nil
	}
	in.mu.Unlock()
}

func (in *injector) firedCalls() []call {
	in.mu.Lock()
	defer in.mu.Unlock()
	return append([]call(nil), in.fired...)
}

func (in *injector) recorded() []call {
	in.mu.Lock()
	defer in.mu.Unlock()
	return append([]call(nil), in.calls...)
}

// fileState is one regular file.
type fileState struct {
	data     []byte
	perm     fs.FileMode
	uid, gid uint32
	ino      uint64
}

func (a fileState) same(b fileState) bool {
	return a.perm == b.perm && a.uid == b.uid && a.gid == b.gid && bytes.Equal(a.data, b.data)
}

func (a fileState) String() string {
	return fmt.Sprintf("%d bytes %s uid %d ino %d", len(a.data), a.perm, a.uid, a.ino)
}

func isOwnTemp(name string) bool {
	ok, _ := filepath.Match(policy.OwnTempPattern, name)
	return ok
}

func isAppLock(name string) bool {
	return strings.HasSuffix(name, ".lock") || name == ".path.ovlock" || strings.HasPrefix(name, ".exact.ovlock.")
}

// readTree reads the session files under root (by relative path) and lists own temps.
func readTree(t *testing.T, root string) (map[string]fileState, []string) {
	t.Helper()
	files := map[string]fileState{}
	var temps []string
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		rel, _ := filepath.Rel(root, p)
		if isOwnTemp(d.Name()) {
			temps = append(temps, rel)
			return nil
		}
		if isAppLock(d.Name()) {
			return nil
		}
		fi, err := os.Lstat(p)
		if err != nil {
			return err
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		st := fi.Sys().(*syscall.Stat_t)
		files[rel] = fileState{data: b, perm: fi.Mode().Perm(), uid: st.Uid, gid: st.Gid, ino: st.Ino}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return files, temps
}

// ownTemps lists sessionmedic temps anywhere under root.
func ownTemps(root string) []string {
	var out []string
	filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() && isOwnTemp(d.Name()) {
			out = append(out, p)
		}
		return nil
	})
	return out
}

// orphanQuarantine counts quarantine entry directories without a manifest.
func orphanQuarantine(state string) int {
	dirs, _ := filepath.Glob(filepath.Join(state, "quarantine", "*", "*"))
	n := 0
	for _, d := range dirs {
		if _, err := os.Stat(filepath.Join(d, "manifest.json")); err != nil {
			n++
		}
	}
	return n
}

func journalLeft(state string) []string {
	ents, _ := os.ReadDir(filepath.Join(state, "journal"))
	var out []string
	for _, e := range ents {
		out = append(out, e.Name())
	}
	return out
}

// quarantined reports whether the quarantine holds orig, with a manifest, for path: whole,
// or (the entry of a tail cut made in place) from the manifest's prefix on, the file at path
// still starting with the rest.
func quarantined(state, path string, orig []byte) bool {
	dirs, _ := filepath.Glob(filepath.Join(state, "quarantine", "*", "*"))
	for _, d := range dirs {
		b, err := os.ReadFile(filepath.Join(d, "manifest.json"))
		if err != nil {
			continue
		}
		var m struct {
			Path, File string
			Prefix     int
		}
		if json.Unmarshal(b, &m) != nil || m.Path != path || m.File != filepath.Base(path) || m.Prefix < 0 || m.Prefix > len(orig) {
			continue
		}
		q, err := os.ReadFile(filepath.Join(d, m.File))
		if err != nil || !bytes.Equal(q, orig[m.Prefix:]) {
			continue
		}
		if m.Prefix == 0 {
			return true
		}
		if cur, err := os.ReadFile(path); err == nil && bytes.HasPrefix(cur, orig[:m.Prefix]) {
			return true
		}
	}
	return false
}

// tempDir is a fresh directory, on tmpfs where there is one: the faults are injected, so
// the disk's own fsync latency adds nothing but time.
func tempDir(t *testing.T) string {
	t.Helper()
	if fi, err := os.Stat("/dev/shm"); err == nil && fi.IsDir() {
		if d, err := os.MkdirTemp("/dev/shm", "sessionmedic-faults-"); err == nil {
			t.Cleanup(func() { os.RemoveAll(d) })
			return d
		}
	}
	return t.TempDir()
}

// sample is a damaged sample case healed by its app's preset.
type sample struct {
	app, src string
	foreign  bool // owned by another user: the temp is chowned to the original owner
	big      bool // its logs grown over the big-file size: a torn tail cut in place, under a lease
}

func (s sample) String() string {
	n := s.app + "/" + s.src
	if s.foreign {
		n += "/foreign-owner"
	}
	if s.big {
		n += "/big"
	}
	return n
}

// layout copies the case into a fresh directory and returns the engine that heals it, with
// the fault hook of in (nil: none).
func (s sample) layout(t *testing.T, settle time.Duration, in *injector) (e *heal.Engine, caseDir, state string) {
	t.Helper()
	dir := tempDir(t)
	caseDir, state = filepath.Join(dir, "case"), filepath.Join(dir, "var", "state")
	if err := os.MkdirAll(filepath.Dir(state), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := fixtures.CopyTree(filepath.Join(samplesDir, s.app, s.src), caseDir); err != nil {
		t.Fatal(err)
	}
	if s.foreign {
		// The files, not the directories: run as root in root's directories, the heal is
		// root's, and gives the temp the original's owner with a chown. (In a tree whose
		// directories another user owns, it would act as that user and need no chown.)
		filepath.WalkDir(caseDir, func(p string, d fs.DirEntry, err error) error {
			if err == nil && !d.IsDir() {
				os.Lchown(p, 65534, 65534)
			}
			return nil
		})
	}
	if s.big {
		grow(t, caseDir)
	}
	return newEngine(t, s, caseDir, state, settle, in), caseDir, state
}

// grow puts copies of the second line of each log under dir before its last line, until it
// is over 1 MiB (the size over which an app log's torn tail is cut in place).
func grow(t *testing.T, dir string) {
	t.Helper()
	logs, _ := filepath.Glob(filepath.Join(dir, "*.jsonl"))
	if len(logs) == 0 {
		t.Fatalf("no log to grow in %s", dir)
	}
	for _, p := range logs {
		b, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		lines := bytes.SplitAfter(b, []byte("\n"))
		last := bytes.LastIndexByte(b[:len(b)-1], '\n') + 1
		var out bytes.Buffer
		out.Write(b[:last])
		for out.Len() < 1<<20+1 {
			out.Write(lines[1])
		}
		out.Write(b[last:])
		if err := os.WriteFile(p, out.Bytes(), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

func newEngine(t *testing.T, s sample, caseDir, state string, settle time.Duration, in *injector) *heal.Engine {
	t.Helper()
	home := tempDir(t)
	r, ok := policy.PresetRule(s.app, policy.Env{Home: home, Getenv: func(string) string { return "" }, Exists: func(string) bool { return false }})
	if !ok {
		t.Fatalf("no preset %s", s.app)
	}
	r.Name, r.Paths = s.app, []string{caseDir}
	r.Settle, r.MaxWait = settle, time.Second
	r.Lock.Wait = 500 * time.Millisecond
	cfg := &policy.Config{Version: 1, StateDir: state, Rules: []policy.Rule{r}, Log: policy.Log{Format: "json", Level: "debug"}}
	writers := func(dev, ino uint64) []int { return nil }
	return heal.New(cfg, heal.Options{OpenWriters: writers, Faults: in.faults()})
}

// healAll heals every target of the engine's rules, as `sessionmedic heal` does; at calls
// it records where each target's heal started in the fault hook's call sequence.
func healAll(t *testing.T, e *heal.Engine, in *injector) (reports []heal.Report, starts []int) {
	t.Helper()
	targets, errs := e.Targets(nil, nil)
	if len(errs) > 0 {
		t.Fatalf("targets: %v", errs)
	}
	for _, tg := range targets {
		if in != nil {
			starts = append(starts, len(in.recorded()))
		}
		reports = append(reports, e.Heal(context.Background(), tg, false))
	}
	return reports, starts
}
