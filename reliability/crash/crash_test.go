package crash

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"hash/fnv"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/sessionmedic/sessionmedic/reliability/fixtures"
)

// The damaged samples whose correct heal needs no last-good copy (samples/README.md).
var sampleInputs = []string{
	"copaw/corrupt_extra_data_race",
	"nanobot/corrupt_truncated_midline",
	"nanobot/corrupt_bad_middle_line",
	"nanobot/corrupt_non_object_line",
	"praisonai/corrupt_trailing_garbage",
	"praisonai/extended_fields_wiped",
	"openviking/lost_clear",
	"openviking/meta_lag_after_append_crash",
	"openviking/corrupt_truncated_messages",
	"openclaw/03-trailing-garbage",
	"openclaw/04-placeholder-with-bak",
	"openclaw/05-missing-newest-bak-corrupt",
	"openclaw/11-corrupt-transcripts",
	"openclaw/12-utf8-bom",
}

const generatedInput = "generated/json+jsonl"

var steps = []string{"locked", "quarantined", "journaled", "temp-written", "renamed", "done"}

func allInputs() []string { return append(slices.Clone(sampleInputs), generatedInput) }

// spec is one input at one seed: what to lay out and how heal is called.
type spec struct {
	input string
	seed  uint64
	gen   *generated
	args  []string // PATH arguments relative to the case root; none = the rules' paths
}

func (s spec) app() string { return strings.SplitN(s.input, "/", 2)[0] }

func (s spec) key() string {
	if s.gen != nil {
		return fmt.Sprintf("%s#%d|%s", s.input, s.seed, strings.Join(s.args, ","))
	}
	return s.input + "|" + strings.Join(s.args, ",")
}

func (s spec) String() string {
	how := "rule paths"
	switch {
	case len(s.args) == 1 && s.args[0] == ".":
		how = "PATH=case root"
	case len(s.args) > 0:
		how = fmt.Sprintf("PATH=%d entries in seeded order", len(s.args))
	}
	return fmt.Sprintf("%s seed %d (%s)", s.input, s.seed, how)
}

var sampleTrees sync.Map // input → tree

func origFiles(input string) (map[string]fileState, error) {
	if v, ok := sampleTrees.Load(input); ok {
		return v.(tree).files, nil
	}
	t, err := readTree(filepath.Join(samplesDir, input))
	if err != nil {
		return nil, err
	}
	sampleTrees.Store(input, t)
	return t.files, nil
}

// newSpec picks the seed's variant: seed%3 == 0 heals the rules' paths, 1 names the case
// root, 2 names every session-looking file and its directory in a seeded order (which
// changes the order of the heals, and so which one the Nth crash point hits).
func newSpec(input string, seed uint64, variant int) (spec, error) {
	s := spec{input: input, seed: seed}
	var files map[string]fileState
	if input == generatedInput {
		g := genTree(seed)
		s.gen = &g
		files = g.files
	} else {
		var err error
		if files, err = origFiles(input); err != nil {
			return s, err
		}
	}
	switch variant {
	case 1:
		s.args = []string{"."}
	case 2:
		seen := map[string]bool{}
		for rel := range files {
			if ext := filepath.Ext(rel); ext != ".json" && ext != ".jsonl" {
				continue
			}
			for _, p := range []string{rel, filepath.Dir(rel)} {
				if !seen[p] {
					seen[p] = true
					s.args = append(s.args, p)
				}
			}
		}
		slices.Sort(s.args)
		r := rand.New(rand.NewPCG(seed, 0x6f72646572))
		r.Shuffle(len(s.args), func(i, j int) { s.args[i], s.args[j] = s.args[j], s.args[i] })
	}
	return s, nil
}

// env is one laid-out run directory.
type env struct {
	dir, caseDir, stateDir, policy string
	args                           []string
}

func (s spec) layout(dir, settle string) (env, error) {
	e := env{dir: dir, caseDir: filepath.Join(dir, "case"), stateDir: filepath.Join(dir, "state"), policy: filepath.Join(dir, "policy.yaml")}
	if err := os.MkdirAll(filepath.Join(dir, "home"), 0o755); err != nil {
		return e, err
	}
	var rules string
	if s.gen != nil {
		if err := writeTree(e.caseDir, s.gen.files); err != nil {
			return e, err
		}
		rules = genPolicyRules(e.caseDir, settle)
	} else {
		if err := fixtures.CopyTree(filepath.Join(samplesDir, s.input), e.caseDir); err != nil {
			return e, err
		}
		extra := ""
		if s.app() == "openviking" {
			// OpenViking judges a token live for lock_expire_secs (30 s) after its holder
			// died: a killed heal's token would make every restart within 30 s busy. The
			// rule shortens the expiry so that the restart breaks it by the stale rule.
			extra = ", lock: {protocol: openviking, stale: 50ms}"
		}
		rules = fmt.Sprintf("  - {name: %s, preset: %s, paths: [%q], settle: %s, max_wait: 1s%s}\n", s.app(), s.app(), e.caseDir, settle, extra)
	}
	pol := fmt.Sprintf("version: 1\nstate_dir: %q\nrules:\n%s", e.stateDir, rules)
	if err := os.WriteFile(e.policy, []byte(pol), 0o644); err != nil {
		return e, err
	}
	for _, a := range s.args {
		e.args = append(e.args, filepath.Join(e.caseDir, a))
	}
	return e, nil
}

// point is a crash point: the Nth time the protocol reaches step.
type point struct {
	step string
	n    int
}

func (p point) String() string { return fmt.Sprintf("%s:%d", p.step, p.n) }

// baseline is a clean heal of a spec: the states every crash run is judged against.
type baseline struct {
	orig, healed tree
	code         int
	points       []point
	problems     []string // wrong clean heals: reported once as violations
}

type baselineCache struct {
	mu sync.Mutex
	m  map[string]*baselineEntry
}

type baselineEntry struct {
	once sync.Once
	b    *baseline
	err  error
}

var baselines = baselineCache{m: map[string]*baselineEntry{}}

func getBaseline(s spec) (*baseline, error) {
	baselines.mu.Lock()
	en := baselines.m[s.key()]
	if en == nil {
		en = &baselineEntry{}
		baselines.m[s.key()] = en
	}
	baselines.mu.Unlock()
	en.once.Do(func() { en.b, en.err = cleanHeal(s) })
	return en.b, en.err
}

// healReport is the part of a heal -json line the step count needs.
type healReport struct {
	Path   string   `json:"path"`
	Action string   `json:"action"`
	Reason string   `json:"reason"`
	Also   []string `json:"also"`
}

func cleanHeal(s spec) (*baseline, error) {
	sem <- struct{}{}
	defer func() { <-sem }()
	dir, err := os.MkdirTemp(workDir, "base-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(dir)
	e, err := s.layout(dir, "50ms")
	if err != nil {
		return nil, err
	}
	b := &baseline{}
	if b.orig, err = readTree(e.caseDir); err != nil {
		return nil, err
	}
	res := runHeal(e, "", 2*time.Minute)
	if res.err != nil || res.killed {
		return nil, fmt.Errorf("clean heal: %v (killed %v)\n%s", res.err, res.killed, res.stderr)
	}
	b.code = res.code
	if b.healed, err = readTree(e.caseDir); err != nil {
		return nil, err
	}
	heals, edits := 0, 0
	sc := bufio.NewScanner(strings.NewReader(res.stdout))
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		var r healReport
		if json.Unmarshal(sc.Bytes(), &r) != nil {
			return nil, fmt.Errorf("clean heal: not a JSON report line: %q", sc.Text())
		}
		if r.Action == "healed" {
			heals++
			edits += 1 + len(r.Also)
		}
	}
	// locked, quarantined, journaled and done once per heal; temp-written and renamed once
	// per file a heal replaces.
	for _, st := range steps {
		k := heals
		if st == "temp-written" || st == "renamed" {
			k = edits
		}
		for n := 1; n <= k; n++ {
			b.points = append(b.points, point{st, n})
		}
	}
	if heals == 0 {
		return nil, fmt.Errorf("clean heal healed nothing (exit %d):\n%s\n%s", res.code, res.stdout, res.stderr)
	}
	if len(b.healed.temps) > 0 {
		b.problems = append(b.problems, fmt.Sprintf("clean heal left temps %v", b.healed.temps))
	}
	// Healing again changes nothing.
	again := runHeal(e, "", 2*time.Minute)
	if now, err := readTree(e.caseDir); err != nil || again.code != b.code {
		b.problems = append(b.problems, fmt.Sprintf("second clean heal: exit %d, want %d (%v)", again.code, b.code, err))
	} else if d := filesHealed(now, b.healed); len(d) > 0 {
		b.problems = append(b.problems, "a second clean heal changed files: "+strings.Join(d, "; "))
	}
	if s.gen != nil {
		for rel, wants := range s.gen.expect {
			got := b.healed.files[rel].data
			ok := false
			for _, w := range wants {
				ok = ok || bytes.Equal(got, w)
			}
			if !ok {
				b.problems = append(b.problems, fmt.Sprintf("clean heal of %s: got %q, want %q (input %q)", rel, got, wants[0], b.orig.files[rel].data))
			}
		}
		for rel, f := range b.orig.files {
			if _, damaged := s.gen.expect[rel]; !damaged && !f.equal(b.healed.files[rel]) {
				b.problems = append(b.problems, "clean heal changed the healthy file "+rel)
			}
		}
	}
	return b, nil
}

// result of one process.
type result struct {
	killed         bool // by SIGKILL
	code           int
	stdout, stderr string
	err            error
}

func childEnv(e env, crashAt string) []string {
	home := filepath.Join(e.dir, "home")
	out := []string{"PATH=" + os.Getenv("PATH"), "HOME=" + home, "XDG_STATE_HOME=" + filepath.Join(home, ".local", "state"),
		"XDG_DATA_HOME=" + filepath.Join(home, ".local", "share"), "TMPDIR=" + os.TempDir()}
	if crashAt != "" {
		out = append(out, "SESSIONMEDIC_CRASH_AT="+crashAt)
	}
	return out
}

func healCmd(e env, crashAt string) (*exec.Cmd, *limitedBuffer, *limitedBuffer) {
	cmd := exec.Command(binary, append([]string{"heal", "-config", e.policy, "-json"}, e.args...)...)
	cmd.Env = childEnv(e, crashAt)
	var so, se limitedBuffer
	cmd.Stdout, cmd.Stderr = &so, &se
	return cmd, &so, &se
}

// wait waits for cmd within timeout (then kills it and says so).
func wait(cmd *exec.Cmd, timeout time.Duration) (killed bool, code int, err error) {
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	var werr error
	select {
	case werr = <-done:
	case <-time.After(timeout):
		cmd.Process.Kill()
		<-done
		return false, -1, fmt.Errorf("still running after %v", timeout)
	}
	if ws, ok := cmd.ProcessState.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
		if ws.Signal() == syscall.SIGKILL {
			return true, -1, nil
		}
		return false, -1, fmt.Errorf("died by %v", ws.Signal())
	}
	var ee *exec.ExitError
	if werr != nil && !errors.As(werr, &ee) {
		return false, -1, werr
	}
	return false, cmd.ProcessState.ExitCode(), nil
}

func runHeal(e env, crashAt string, timeout time.Duration) result {
	cmd, so, se := healCmd(e, crashAt)
	if err := cmd.Start(); err != nil {
		return result{err: err}
	}
	killed, code, err := wait(cmd, timeout)
	return result{killed: killed, code: code, err: err, stdout: so.String(), stderr: se.String()}
}

// run is one crash run and its restart, and where its violations go.
type run struct {
	fam  *family
	log  *violationLog
	s    spec
	b    *baseline
	what string // the crash point or the kill delay, for the report
}

func (r run) violate(e env, bad []string, logs string) {
	if len(bad) == 0 {
		return
	}
	if len(bad) > 8 {
		bad = append(bad[:8], fmt.Sprintf("… and %d more", len(bad)-8))
	}
	r.log.add(e.dir, "%s: %s, crash at %s:\n  %s\n%s", r.fam.name, r.s, r.what, strings.Join(bad, "\n  "), logs)
}

func (r run) observe(e env) {
	r.fam.stateTemps.Add(int64(stateTemps(e.stateDir)))
	_, orphans := quarantine(e.stateDir)
	r.fam.orphanQs.Add(int64(orphans))
}

// account records one finished run.
func (r run) account(start time.Time, killed bool) {
	r.fam.runs.Add(1)
	if killed {
		r.fam.killed.Add(1)
	} else {
		r.fam.ended.Add(1)
	}
	r.fam.nanos.Add(int64(time.Since(start)))
}

// healAfter checks the state a crash left, restarts heal and checks the state after it.
func (r run) healAfter(e env, crashed result) {
	var bad []string
	if crashed.err != nil {
		bad = append(bad, "crash run: "+crashed.err.Error())
	}
	if !crashed.killed && crashed.err == nil && crashed.code != r.b.code {
		bad = append(bad, fmt.Sprintf("the run finished without the crash with exit %d, the clean heal exited %d", crashed.code, r.b.code))
	}
	bad = append(bad, checkCrashed(e.caseDir, e.stateDir, r.b.orig, r.b.healed)...)
	again := runHeal(e, "", 2*time.Minute)
	// A kill between creating an app's lock file and writing its body leaves a lock the app's
	// protocol judges live for a grace period (OpenClaw: an unreadable body is live until its
	// mtime is 5 s old, for the store's lock and a transcript's). A restart meanwhile finds
	// the file busy, as the app itself would; heal is run again until the grace period is over.
	for deadline := time.Now().Add(20 * time.Second); again.err == nil && !again.killed &&
		strings.Contains(again.stdout, `"reason":"busy: in use by the app (lock protocol `) && time.Now().Before(deadline); {
		r.fam.lockWaits.Add(1)
		time.Sleep(500 * time.Millisecond)
		again = runHeal(e, "", 2*time.Minute)
	}
	switch {
	case again.err != nil:
		bad = append(bad, "restart: "+again.err.Error())
	case again.killed:
		bad = append(bad, "restart was killed")
	case again.code != r.b.code:
		bad = append(bad, fmt.Sprintf("restart exited %d, the clean heal %d", again.code, r.b.code))
	}
	bad = append(bad, checkRestarted(e.caseDir, e.stateDir, r.b.orig, r.b.healed)...)
	r.observe(e)
	logs := ""
	if len(bad) > 0 {
		logs = fmt.Sprintf("  crashed run stderr: %s\n  restart stdout: %s\n  restart stderr: %s", indent(crashed.stderr), indent(again.stdout), indent(again.stderr))
	}
	r.violate(e, bad, logs)
	if len(bad) == 0 {
		os.RemoveAll(e.dir)
	}
}

func indent(s string) string {
	s = strings.TrimSpace(s)
	if len(s) > 3000 {
		s = "…" + s[len(s)-3000:]
	}
	return strings.ReplaceAll(s, "\n", "\n    ")
}

func newRunDir() (string, error) { return os.MkdirTemp(workDir, "run-") }

// setup lays the input out in a fresh run directory; a failure is logged against the run.
func (r run) setup() (env, bool) {
	dir, err := newRunDir()
	if err != nil {
		r.log.add("", "run dir: %v", err)
		return env{}, false
	}
	e, err := r.s.layout(dir, "50ms")
	if err != nil {
		r.log.add("", "layout: %v", err)
		return env{}, false
	}
	return e, true
}

// crashAtPoint: heal with SESSIONMEDIC_CRASH_AT, then the restart.
func (r run) crashAtPoint(p point) {
	sem <- struct{}{}
	defer func() { <-sem }()
	start := time.Now()
	e, ok := r.setup()
	if !ok {
		return
	}
	crashed := runHeal(e, p.String(), 2*time.Minute)
	r.healAfter(e, crashed)
	r.account(start, crashed.killed)
}

// killAfter: heal, SIGKILLed after delay, then the restart.
func (r run) killAfter(delay time.Duration) {
	sem <- struct{}{}
	defer func() { <-sem }()
	start := time.Now()
	e, ok := r.setup()
	if !ok {
		return
	}
	cmd, so, se := healCmd(e, "")
	if err := cmd.Start(); err != nil {
		r.log.add("", "start: %v", err)
		return
	}
	time.Sleep(delay)
	cmd.Process.Signal(syscall.SIGKILL)
	killed, code, err := wait(cmd, 2*time.Minute)
	r.healAfter(e, result{killed: killed, code: code, err: err, stdout: so.String(), stderr: se.String()})
	r.account(start, killed)
}

// daemonAtPoint: run with SESSIONMEDIC_CRASH_AT until it dies, then run again until every
// file is healed, then SIGTERM.
func (r run) daemonAtPoint(p point) {
	sem <- struct{}{}
	defer func() { <-sem }()
	start := time.Now()
	e, ok := r.setup()
	if !ok {
		return
	}
	var bad []string
	var logs strings.Builder
	daemon := func(crashAt string) (*exec.Cmd, *limitedBuffer) {
		cmd := exec.Command(binary, "run", "-config", e.policy, "-log-format", "json")
		cmd.Env = childEnv(e, crashAt)
		var out limitedBuffer
		cmd.Stdout, cmd.Stderr = &out, &out
		return cmd, &out
	}
	first, firstLog := daemon(p.String())
	killed := false
	if err := first.Start(); err != nil {
		r.log.add("", "start daemon: %v", err)
		return
	}
	k, code, err := wait(first, time.Minute)
	killed = k
	switch {
	case err != nil:
		bad = append(bad, "daemon with the crash point: "+err.Error())
	case !k:
		bad = append(bad, fmt.Sprintf("daemon with the crash point exited %d instead of dying there", code))
	}
	bad = append(bad, checkCrashed(e.caseDir, e.stateDir, r.b.orig, r.b.healed)...)
	fmt.Fprintf(&logs, "  crashed daemon log: %s\n", indent(firstLog.tail(3000)))

	second, secondLog := daemon("")
	if err := second.Start(); err != nil {
		r.log.add("", "restart daemon: %v", err)
		return
	}
	exited := make(chan struct{})
	var k2 bool
	var code2 int
	var err2 error
	go func() { k2, code2, err2 = wait(second, 5*time.Minute); close(exited) }()
	rules := 1
	if r.s.gen != nil {
		rules = 2
	}
	// Busy files are retried with backoff (0.5 s, doubling): a lock a killed run left in its
	// grace period (5 s at most) is behind it well within the deadline.
	deadline := time.Now().Add(20 * time.Second)
	var pending []string
	for {
		// Healed, and the daemon is past its start (journal recovery, the first scan).
		now, err := readTree(e.caseDir)
		if err == nil {
			pending = filesHealed(now, r.b.healed)
			if n := strings.Count(secondLog.String(), `"msg":"scan.finished"`); n < rules {
				pending = append(pending, fmt.Sprintf("%d of %d scans finished", n, rules))
			}
			if len(pending) == 0 && len(now.temps) == 0 {
				break
			}
		}
		if time.Now().After(deadline) {
			bad = append(bad, "the restarted daemon did not heal within 20s: "+strings.Join(pending, "; "))
			break
		}
		select {
		case <-exited:
			bad = append(bad, fmt.Sprintf("the restarted daemon exited (%d, %v, killed %v) before healing", code2, err2, k2))
			deadline = time.Now()
		case <-time.After(20 * time.Millisecond):
		}
	}
	second.Process.Signal(syscall.SIGTERM)
	select {
	case <-exited:
		if err2 != nil || k2 || code2 != 0 {
			bad = append(bad, fmt.Sprintf("the restarted daemon after SIGTERM: exit %d, killed %v, %v", code2, k2, err2))
		}
	case <-time.After(30 * time.Second):
		second.Process.Kill()
		<-exited
		bad = append(bad, "the restarted daemon did not stop within 30s of SIGTERM")
	}
	bad = append(bad, checkRestarted(e.caseDir, e.stateDir, r.b.orig, r.b.healed)...)
	r.observe(e)
	fmt.Fprintf(&logs, "  restarted daemon log: %s", indent(secondLog.tail(3000)))
	r.violate(e, bad, logs.String())
	if len(bad) == 0 {
		os.RemoveAll(e.dir)
	}
	r.account(start, killed)
}

// reportBaseline turns a wrong clean heal into one violation per spec.
var reportedBaselines sync.Map

func reportBaseline(log *violationLog, s spec, b *baseline) {
	if len(b.problems) == 0 {
		return
	}
	if _, dup := reportedBaselines.LoadOrStore(s.key(), true); dup {
		return
	}
	log.add("", "clean heal of %s: %s", s, strings.Join(b.problems, "; "))
}

// specAt is the spec of input in at seed, with its clean-heal baseline (a wrong one is
// reported once, as a violation).
func specAt(t *testing.T, log *violationLog, in string, seed uint64, variant int) (spec, *baseline) {
	t.Helper()
	s, err := newSpec(in, seed, variant)
	if err != nil {
		t.Fatal(err)
	}
	b, err := getBaseline(s)
	if err != nil {
		t.Fatal(err)
	}
	reportBaseline(log, s, b)
	return s, b
}

// plan computes every input's baseline at the first seed (in parallel) and its crash points.
func plan(t *testing.T, variant func(seed uint64) int) map[string]*baseline {
	out := map[string]*baseline{}
	var mu sync.Mutex
	var wg sync.WaitGroup
	for _, in := range allInputs() {
		wg.Go(func() {
			s, err := newSpec(in, *seedBase, variant(*seedBase))
			var b *baseline
			if err == nil {
				b, err = getBaseline(s)
			}
			if err != nil {
				t.Errorf("%s: %v", in, err)
				return
			}
			mu.Lock()
			out[in] = b
			mu.Unlock()
		})
	}
	wg.Wait()
	if t.Failed() {
		t.FailNow()
	}
	return out
}

func seedVariant(seed uint64) int { return int(seed % 3) }

// forEachInput runs body for every input in a parallel subtest with a violation log.
func forEachInput(t *testing.T, fam *family, body func(t *testing.T, in string, log *violationLog)) {
	for _, in := range allInputs() {
		t.Run(in, func(t *testing.T) {
			t.Parallel()
			log := &violationLog{t: t, fam: fam}
			defer log.done()
			body(t, in, log)
		})
	}
}

// TestDaemonCrashPoints: the daemon dies at a crash point during its first scan; the next
// daemon heals every file, leaves no temp and no journal entry, and stops on SIGTERM.
func TestDaemonCrashPoints(t *testing.T) {
	seeds := uint64(1)
	if *long {
		seeds = 40
	}
	base := plan(t, func(uint64) int { return 0 })
	for _, b := range base {
		famDaemon.points.Add(int64(len(b.points)))
	}
	famDaemon.seeds.Store(int64(seeds))
	forEachInput(t, famDaemon, func(t *testing.T, in string, log *violationLog) {
		for seed := *seedBase; seed < *seedBase+seeds; seed++ {
			s, b := specAt(t, log, in, seed, 0)
			var wg sync.WaitGroup
			for _, p := range b.points {
				wg.Go(func() { run{fam: famDaemon, log: log, s: s, b: b, what: p.String()}.daemonAtPoint(p) })
			}
			wg.Wait()
		}
	})
}

// TestRandomKills: heal is SIGKILLed after a random delay (0–20 ms), then restarted.
func TestRandomKills(t *testing.T) {
	seeds := uint64(10)
	if *long {
		seeds = 700
	}
	famRandom.points.Store(int64(len(allInputs())))
	famRandom.seeds.Store(int64(seeds))
	forEachInput(t, famRandom, func(t *testing.T, in string, log *violationLog) {
		var wg sync.WaitGroup
		for seed := *seedBase; seed < *seedBase+seeds; seed++ {
			s, b := specAt(t, log, in, seed, seedVariant(seed))
			h := fnv.New64a()
			h.Write([]byte(in))
			r := rand.New(rand.NewPCG(seed, h.Sum64()))
			delay := time.Duration(r.IntN(20001)) * time.Microsecond
			wg.Go(func() {
				run{fam: famRandom, log: log, s: s, b: b, what: "kill after " + delay.String()}.killAfter(delay)
			})
		}
		wg.Wait()
	})
}

// TestCrashPoints: heal dies at every crash point (each step, each Nth time it is reached)
// of every input at every seed, then restarts. The seed count is chosen so that the suite
// reaches its target of runs (1,000; 100,000 with -long).
func TestCrashPoints(t *testing.T) {
	base := plan(t, seedVariant)
	perSeed := 0
	for _, b := range base {
		perSeed += len(b.points)
	}
	left := target() - totalRuns()
	seeds := uint64(max(3, (left+int64(perSeed)-1)/int64(perSeed)))
	famPoints.points.Store(int64(perSeed))
	famPoints.seeds.Store(int64(seeds))
	t.Logf("%d crash points per seed over %d inputs, %d seeds", perSeed, len(base), seeds)
	forEachInput(t, famPoints, func(t *testing.T, in string, log *violationLog) {
		for seed := *seedBase; seed < *seedBase+seeds; seed++ {
			s, b := specAt(t, log, in, seed, seedVariant(seed))
			var wg sync.WaitGroup
			for _, p := range b.points {
				wg.Go(func() { run{fam: famPoints, log: log, s: s, b: b, what: p.String()}.crashAtPoint(p) })
			}
			wg.Wait()
		}
	})
}
