package heal

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"

	"github.com/sessionmedic/sessionmedic/heal/format"
	"github.com/sessionmedic/sessionmedic/policy"
)

// The pi samples (samples/pi/README.md): one agent home per case, the session cut from
// healthy, which pi 0.73.1 wrote (a first `pi -p` run and 4 resumes, 5 turns).
const (
	piSession = "home/.pi/agent/sessions/--tmp-demo-proj--/2026-11-24T23-24-56-267Z_01a20fe0-6e4b-74a6-a8ea-61958601a7c1.jsonl"
	piHealthy = "pi/healthy/" + piSession
)

// piSampleCases are the sample cases of samples/pi/ (see its README).
func piSampleCases() []sampleCase {
	c := func(src string, files ...fileExp) sampleCase {
		return sampleCase{app: "pi", src: src, preset: "pi", files: files}
	}
	f := func(kind, strategy, want string, check func(*testing.T, []byte, []byte)) fileExp {
		return fileExp{file: piSession, kind: kind, strategy: strategy, want: want, check: check}
	}
	withLG := func(e fileExp) fileExp {
		e.lgFrom, e.lgStrategy, e.lgWant = piHealthy, "last-good", piHealthy
		return e
	}
	return []sampleCase{
		// Healthy, and duplicate_lines (lines 8-9 written twice; pi indexes entries by id):
		// nothing of either is touched.
		c("healthy"),
		c("duplicate_lines"),
		// The torn line 17 cut: healthy lines 1-16, 5027 bytes.
		c("torn_tail", f(format.KindTruncated, "salvage", "", healthyLines(piHealthy, 5027, 1, 16))),
		// The NUL run cut: lines 1-15 (4825 bytes); with last-good, healthy whole.
		c("nul_tail", withLG(f(format.KindTruncated, "salvage", "", healthyLines(piHealthy, 4825, 1, 15)))),
		// The garbage line dropped: the healthy file itself.
		c("garbage_line", f(format.KindMalformedRecord, "salvage", piHealthy, nil)),
		// What pi wrote resuming torn_tail: its probe glued to the 239-byte stub. The stub
		// dropped, the probe record starts its own line (5734 bytes).
		c("glued", f(format.KindMalformedRecord, "salvage", "", dropStub(`"model":"mo{"type":"message"`, 239, 5734))),
		// Line 1 without its closing brace: rebuilt from the file name and the torn line's
		// cwd, byte for byte the healthy header; with last-good, healthy whole.
		c("torn_header", withLG(f(format.KindMalformedRecord, "rebuild-header", piHealthy, nil))),
		// Never written by pi: last-good when there is one, else report-only.
		c("empty", withLG(f(format.KindEmpty, "", "", nil))),
		// Line 9 removed: line 10 names a parent no entry has. Never re-parented:
		// last-good, else report-only.
		c("history_gap", withLG(f(format.KindSchema, "", "", nil))),
	}
}

// TestPiSamples runs the pi cases as TestSamples runs its table (runAppSampleCase): check writes nothing and
// gives the verdict; heal gives the strategy and the exact bytes, keeps the original in
// quarantine and touches nothing else; a second heal changes nothing; and with a last-good
// copy seeded from healthy, the last-good strategy restores it.
func TestPiSamples(t *testing.T) {
	for _, sc := range piSampleCases() {
		t.Run(sc.app+"/"+sc.src, func(t *testing.T) { runAppSampleCase(t, sc) })
	}
}

// healthyLines: the healed file is the lines from-to of each pair (1-based, inclusive) of the
// healthy sample at rel (under samples), byte for byte, n bytes in all.
func healthyLines(rel string, n int, ranges ...int) func(t *testing.T, orig, healed []byte) {
	return func(t *testing.T, _, healed []byte) {
		lines := bytes.SplitAfter(read(t, filepath.Join(samples, rel)), []byte("\n"))
		var want []byte
		for i := 0; i < len(ranges); i += 2 {
			want = append(want, bytes.Join(lines[ranges[i]-1:ranges[i+1]], nil)...)
		}
		if len(want) != n {
			t.Fatalf("expected bytes: %d, the case says %d", len(want), n)
		}
		if !bytes.Equal(healed, want) {
			t.Errorf("healed file (%d bytes) is not healthy's lines %v (%d bytes)", len(healed), ranges, n)
		}
	}
}

// dropStub: the healed file is the original without the stub bytes that start the line
// where marker (the stub's end, then the record glued onto it) is, n bytes in all.
func dropStub(marker string, stub, n int) func(t *testing.T, orig, healed []byte) {
	return func(t *testing.T, orig, healed []byte) {
		at := bytes.Index(orig, []byte(marker))
		if at < 0 {
			t.Fatal("no glued line in the sample")
		}
		start := bytes.LastIndexByte(orig[:at], '\n') + 1
		want := append(append([]byte{}, orig[:start]...), orig[start+stub:]...)
		if len(want) != n || !bytes.Equal(healed, want) {
			t.Errorf("healed file (%d bytes) is not the original without the %d-byte stub (%d bytes)", len(healed), stub, len(want))
		}
	}
}

// runAppSampleCase runs one case of a coding agent's samples (one session file per case).
func runAppSampleCase(t *testing.T, sc sampleCase) {
	src := filepath.Join(samples, sc.app, sc.src)
	root := filepath.Join(t.TempDir(), sc.src)
	copyTree(t, src, root)
	e := sampleEngine(t, sc.preset, root)
	exp := map[string]fileExp{}
	for _, f := range sc.files {
		exp[f.file] = f
	}

	before := snapshot(t, root)
	checks := reportsByFile(t, root, runAll(t, e, false))
	if len(checks) != 1 {
		t.Fatalf("check inspected %d files, want the session alone", len(checks))
	}
	for rel, r := range checks {
		if got, want := verdictKind(r), exp[rel].kind; got != want {
			t.Errorf("check %s: got %q (%s), want %q", rel, got, r.Detail, want)
		}
	}
	assertSame(t, before, snapshot(t, root), nil)
	if _, err := os.Stat(e.StateDir); err == nil {
		t.Errorf("check wrote to the state dir")
	}

	heals := reportsByFile(t, root, runAll(t, e, true))
	after := snapshot(t, root)
	changed := map[string]bool{}
	for rel, f := range exp {
		r := heals[rel]
		if f.strategy == "" {
			if r.Action != ActionRefused {
				t.Errorf("heal %s: action %q (%s), want refused", rel, r.Action, r.Strategy)
			}
			continue
		}
		changed[rel] = true
		if r.Action != ActionHealed || r.Strategy != f.strategy {
			t.Errorf("heal %s: %s with %q (%s), want healed with %q", rel, r.Action, r.Strategy, r.Reason, f.strategy)
			continue
		}
		healed := after[rel].data
		if f.want != "" {
			if want := read(t, filepath.Join(samples, f.want)); !bytes.Equal(healed, want) {
				t.Errorf("heal %s: content differs from %s (%d vs %d bytes)", rel, f.want, len(healed), len(want))
			}
		}
		if f.check != nil {
			f.check(t, before[rel].data, healed)
		}
		if q := read(t, filepath.Join(r.Quarantine, filepath.Base(rel))); !bytes.Equal(q, before[rel].data) {
			t.Errorf("quarantine of %s does not hold the original bytes", rel)
		}
	}
	assertSame(t, before, after, changed)

	for _, r := range runAll(t, e, true) {
		if r.Action == ActionHealed {
			t.Errorf("second heal changed %s (%s)", r.Path, r.Strategy)
		}
	}
	assertSame(t, after, snapshot(t, root), nil)

	for _, f := range sc.files {
		if f.lgFrom == "" {
			continue
		}
		root2 := filepath.Join(t.TempDir(), sc.src)
		copyTree(t, src, root2)
		e2 := sampleEngine(t, sc.preset, root2)
		p := filepath.Join(root2, f.file)
		if err := os.WriteFile(p, read(t, filepath.Join(samples, f.lgFrom)), 0o644); err != nil {
			t.Fatal(err)
		}
		if r := reportsByFile(t, root2, runAll(t, e2, true))[f.file]; r.Verdict != Healthy {
			t.Fatalf("seeding: %s was not healthy: %s", f.file, r.Detail)
		}
		copyTree(t, src, root2)
		r := reportsByFile(t, root2, runAll(t, e2, true))[f.file]
		if r.Action != ActionHealed || r.Strategy != f.lgStrategy {
			t.Errorf("with last-good, %s: %s with %q (%s %s), want %q", f.file, r.Action, r.Strategy, r.Kind, r.Reason, f.lgStrategy)
			continue
		}
		if got, want := read(t, p), read(t, filepath.Join(samples, f.lgWant)); !bytes.Equal(got, want) {
			t.Errorf("with last-good, %s differs from %s", f.file, f.lgWant)
		}
	}
}

// sampleEngine is testEngine, but for the apps whose liveness is a look at the machine's
// processes (pi, Qwen Code: no lock file), without that look: a real pi or Qwen run on this
// machine that names a sample's session id or works in its cwd (an oracle campaign) would
// make the case busy. Their liveness is tested in heal/lock and heal/apps, and in the race
// suite.
func sampleEngine(t *testing.T, preset, root string) *Engine {
	t.Helper()
	if preset != "pi" && preset != "qwen-code" {
		return testEngine(t, preset, root)
	}
	r, ok := policy.PresetRule(preset, policy.Env{Home: t.TempDir(), Getenv: func(string) string { return "" }, Exists: func(string) bool { return false }})
	if !ok {
		t.Fatalf("no preset %s", preset)
	}
	r.Name, r.Paths = preset, []string{root}
	r.Lock = policy.Lock{Protocol: "none"}
	cfg := &policy.Config{Version: 1, StateDir: filepath.Join(t.TempDir(), "state"), Rules: []policy.Rule{r}}
	return New(cfg, Options{})
}
