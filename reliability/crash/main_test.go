// Package crash kills the real sessionmedic binary at every step of the heal protocol (and at
// random moments) and checks what the next start finds: every session file holds its original
// bytes or its healed bytes, never anything else; a changed file's original is in quarantine;
// after the restart no temp file and no journal entry is left and every file is healed.
//
//	go test ./reliability/crash -count=1 -v                        # CI: at least 1,000 crash runs
//	go test ./reliability/crash -count=1 -v -long -timeout 6h      # 100,000 crash runs
//
// The binary is built with the crashpoints tag; SESSIONMEDIC_CRASH_AT=STEP[:N] makes it
// SIGKILL itself the Nth time the heal protocol reaches STEP.
package crash

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"flag"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/sessionmedic/sessionmedic/reliability/figures"
)

var (
	long      = flag.Bool("long", false, "run the long campaign: 100,000 crash runs")
	seedBase  = flag.Uint64("seed", 1, "first seed of every family (a failure names the seed that reproduces it)")
	workersN  = flag.Int("workers", 0, "crash runs at once (default 2×GOMAXPROCS, between 2 and 8)")
	keepFails = flag.Int("keep", 5, "run directories of failed runs kept for inspection")
	baseDir   = flag.String("workdir", "", "where run directories are made (default: the system temp dir)")
)

// Run targets: the whole suite reaches at least this many crash runs.
const (
	ciTarget   = 1000
	longTarget = 100000
)

var (
	binary     string // the crashpoints build of cmd/sessionmedic
	moduleRoot string
	samplesDir string
	workDir    string // parent of every run directory
	failDir    string // failed runs are moved here
	sources    string // sha256 over the module's non-test sources the binary was built from
	sem        chan struct{}
	started    = time.Now()
)

// family counts one kind of crash run.
type family struct {
	name                 string
	runs, killed, ended  atomic.Int64
	violations           atomic.Int64
	points, seeds        atomic.Int64 // crash points per seed (summed over inputs); seeds per input
	nanos                atomic.Int64
	stateTemps, orphanQs atomic.Int64 // observations: stray temps in state_dir, quarantine dirs without manifest
	lockWaits            atomic.Int64 // restarts run again while a killed run's app lock was in its grace period
}

var (
	famPoints = &family{name: "crash-points"}
	famRandom = &family{name: "random-kill"}
	famDaemon = &family{name: "daemon"}
	families  = []*family{famPoints, famRandom, famDaemon}
)

func totalRuns() int64 {
	var n int64
	for _, f := range families {
		n += f.runs.Load()
	}
	return n
}

func target() int64 {
	if *long {
		return longTarget
	}
	return ciTarget
}

func TestMain(m *testing.M) {
	flag.Parse()
	if err := setup(); err != nil {
		fmt.Fprintf(os.Stderr, "crash suite setup: %v\n", err)
		os.Exit(1)
	}
	code := m.Run()
	if code == 0 && violations() > 0 {
		code = 1
	}
	if err := report(); err != nil {
		fmt.Fprintf(os.Stderr, "crash suite: %v\n", err)
		code = 1
	}
	os.RemoveAll(workDir)
	os.Exit(code)
}

func setup() error {
	root, err := filepath.Abs("../..")
	if err != nil {
		return err
	}
	moduleRoot = root
	samplesDir = filepath.Join(root, "heal", "testdata", "samples")
	if sources, err = sourceDigest(root); err != nil {
		return err
	}
	workDir, err = os.MkdirTemp(*baseDir, "sessionmedic-crash-")
	if err != nil {
		return err
	}
	binary = filepath.Join(workDir, "sessionmedic")
	goTool := filepath.Join(runtime.GOROOT(), "bin", "go")
	if _, err := os.Stat(goTool); err != nil {
		goTool = "go"
	}
	build := exec.Command(goTool, "build", "-tags", "crashpoints", "-o", binary, "github.com/sessionmedic/sessionmedic/cmd/sessionmedic")
	build.Dir = root
	if out, err := build.CombinedOutput(); err != nil {
		return fmt.Errorf("go build -tags crashpoints: %v\n%s", err, out)
	}
	n := *workersN
	if n <= 0 {
		n = min(max(2*runtime.GOMAXPROCS(0), 2), 8)
	}
	sem = make(chan struct{}, n)
	failDir = filepath.Join(os.TempDir(), fmt.Sprintf("sessionmedic-crash-failures-%d", os.Getpid()))
	return nil
}

// sourceDigest reads every non-test source of the module: the binary is built from them, so
// the test result depends on them (and go test's cache sees every file read here).
func sourceDigest(root string) (string, error) {
	h := sha256.New()
	var files []string
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, p)
		if d.IsDir() {
			if rel != "." && (strings.HasPrefix(d.Name(), ".") || d.Name() == "testdata" || rel == "reliability") {
				return filepath.SkipDir
			}
			return nil
		}
		if (strings.HasSuffix(p, ".go") && !strings.HasSuffix(p, "_test.go")) || rel == "go.mod" || rel == "go.sum" || strings.HasSuffix(p, ".yaml") {
			files = append(files, p)
		}
		return nil
	})
	if err != nil {
		return "", err
	}
	sort.Strings(files)
	for _, p := range files {
		b, err := os.ReadFile(p)
		if err != nil {
			return "", err
		}
		fmt.Fprintf(h, "%s %d\n", p[len(root):], len(b))
		h.Write(b)
	}
	return hex.EncodeToString(h.Sum(nil))[:16], nil
}

func violations() int64 {
	var n int64
	for _, f := range families {
		n += f.violations.Load()
	}
	return n
}

// report prints the figure as one line and writes it as JSON to $RELIABILITY_OUT.
func report() error {
	type famOut struct {
		Runs       int64   `json:"runs"`
		Killed     int64   `json:"killed"`
		Finished   int64   `json:"finished"`
		Points     int64   `json:"crash_points"`
		Seeds      int64   `json:"seeds"`
		Violations int64   `json:"violations"`
		Seconds    float64 `json:"run_seconds"`
		StateTemps int64   `json:"state_dir_temps_left,omitempty"`
		OrphanQs   int64   `json:"quarantine_dirs_without_manifest,omitempty"`
		LockWaits  int64   `json:"restarts_repeated_for_app_lock,omitempty"`
	}
	out := struct {
		Suite      string            `json:"suite"`
		Mode       string            `json:"mode"`
		Runs       int64             `json:"runs"`
		Points     int64             `json:"crash_points"`
		Seeds      int64             `json:"seeds"`
		SeedBase   uint64            `json:"seed_base"`
		Violations int64             `json:"violations"`
		Workers    int               `json:"workers"`
		Seconds    float64           `json:"seconds"`
		Sources    string            `json:"sources_sha256"`
		Families   map[string]famOut `json:"families"`
	}{Suite: "crash", Mode: "ci", SeedBase: *seedBase, Workers: cap(sem), Sources: sources, Families: map[string]famOut{}}
	if *long {
		out.Mode = "long"
	}
	var parts []string
	for _, f := range families {
		fo := famOut{Runs: f.runs.Load(), Killed: f.killed.Load(), Finished: f.ended.Load(), Points: f.points.Load(),
			Seeds: f.seeds.Load(), Violations: f.violations.Load(), Seconds: float64(f.nanos.Load()) / 1e9,
			StateTemps: f.stateTemps.Load(), OrphanQs: f.orphanQs.Load(), LockWaits: f.lockWaits.Load()}
		out.Families[f.name] = fo
		out.Runs += fo.Runs
		out.Violations += fo.Violations
		parts = append(parts, fmt.Sprintf("%s %d points × %d seeds = %d runs (%d killed, %d finished)", f.name, fo.Points, fo.Seeds, fo.Runs, fo.Killed, fo.Finished))
	}
	out.Points, out.Seeds = famPoints.points.Load(), famPoints.seeds.Load()
	out.Seconds = time.Since(started).Seconds()
	fmt.Printf("crash suite: %d crash points × %d seeds; %d runs, %d violations in %.1fs [%s]\n",
		out.Points, out.Seeds, out.Runs, out.Violations, out.Seconds, strings.Join(parts, "; "))
	if err := figures.Write("crash", out); err != nil {
		return fmt.Errorf("RELIABILITY_OUT: %w", err)
	}
	return nil
}

// violationLog collects the violations of one subtest; the first few are reported in full.
type violationLog struct {
	mu   sync.Mutex
	t    *testing.T
	fam  *family
	n    int
	kept int
}

func (v *violationLog) add(runDir, format string, args ...any) {
	v.fam.violations.Add(1)
	v.mu.Lock()
	defer v.mu.Unlock()
	v.n++
	msg := fmt.Sprintf(format, args...)
	if v.n <= 10 {
		v.t.Errorf("VIOLATION: %s", msg)
	}
	if runDir != "" && v.kept < *keepFails {
		v.kept++
		dst := filepath.Join(failDir, filepath.Base(runDir))
		if os.MkdirAll(failDir, 0o755) == nil && os.Rename(runDir, dst) == nil && v.n <= 10 {
			v.t.Logf("run directory kept: %s", dst)
		}
	}
}

func (v *violationLog) done() {
	if v.n > 10 {
		v.t.Errorf("%d violations in all (the first 10 are above)", v.n)
	}
}

// limitedBuffer keeps the last bytes a child process wrote.
type limitedBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *limitedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.buf.Write(p)
	if b.buf.Len() > 1<<20 {
		rest := append([]byte(nil), b.buf.Bytes()[b.buf.Len()-(1<<19):]...)
		b.buf.Reset()
		b.buf.Write(rest)
	}
	return len(p), nil
}

func (b *limitedBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

func (b *limitedBuffer) tail(n int) string {
	s := b.String()
	if len(s) > n {
		s = "…" + s[len(s)-n:]
	}
	return s
}
