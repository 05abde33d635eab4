package heal

import (
	"bytes"
	"context"
	"encoding/json"
	"math/rand"
	"os"
	"path/filepath"
	"testing"
)

// tornIncApps: the streamed apps whose torn tail the daemon cuts from its incremental state
// (a record-by-record checklist, no repeated lines dropped, no records kept elsewhere).
var tornIncApps = map[string]bool{"claude-code": true, "codex": true, "gemini-cli": true, "pi": true, "openclaw": true}

// TestTornCutFromIncremental: the daemon's engine, having judged an app's log in full and then
// each append to it, plans the cut of a torn line appended next from what it knows (step
// torn-cut-incremental, no pass over the file), and heals it as an engine that knows nothing
// does from the file: the same report, bytes, quarantine and manifest sums; and again after
// its own heal, from the state that heal left. The logs grow as their apps wrote them: a
// sample log's first lines, then its next ones, then a stub of the one after.
func TestTornCutFromIncremental(t *testing.T) {
	rng := rand.New(rand.NewSource(31))
	fast := map[string]int{}
	for _, a := range streamApps {
		src, lines := healthyLog(t, a.preset, a.rel)
		if len(lines) < 3 {
			t.Fatalf("%s: %d lines: too few to grow", a.preset, len(lines))
		}
		for round := 0; round < 6; round++ {
			e, root := bigEngineWith(t, 1, Options{})
			e.holdThreshold = 1
			copyTree(t, src, root)
			p := filepath.Join(root, a.rel)
			tg := Target{Path: p, Rule: appRule(t, a.preset, root)}
			// The log as the app grew it: m lines, judged in full; then more, each append
			// judged; then a stub of the next; healed; then appends and a stub again.
			at := 1 + rng.Intn(len(lines)-2)
			write := func(b []byte) {
				f, err := os.OpenFile(p, os.O_WRONLY|os.O_APPEND, 0)
				if err != nil {
					t.Fatal(err)
				}
				f.Write(b)
				f.Close()
			}
			if err := os.WriteFile(p, bytes.Join(lines[:at], nil), 0o600); err != nil {
				t.Fatal(err)
			}
			if r := e.Check(tg); r.Verdict != Healthy {
				t.Fatalf("%s: the first %d lines: %+v", a.preset, at, r)
			}
			for cut := 0; cut < 2 && at < len(lines); cut++ {
				for k := rng.Intn(3); k > 0 && at < len(lines)-1; k-- {
					write(lines[at])
					at++
					if r := e.Check(tg); r.Verdict != Healthy {
						t.Fatalf("%s: %d lines: %+v", a.preset, at, r)
					}
				}
				l := bytes.TrimSuffix(lines[at], []byte("\n"))
				write(l[:1+rng.Intn(len(l)-1)])
				data, err := os.ReadFile(p)
				if err != nil {
					t.Fatal(err)
				}
				r1, after1, steps := healSteps(t, e, tg)
				r2, after2, q2, _ := healInTreeSteps(t, a.preset, src, a.rel, data, 1)
				q1 := lastQuarantined(t, e)
				m1, m2 := r1.Quarantine, r2.Quarantine
				r1.Quarantine, r2.Quarantine, r1.Wrote, r2.Wrote, r1.Path, r2.Path = "", "", nil, nil, "", ""
				if !equalReports(r1, r2) || !bytes.Equal(after1, after2) || !bytes.Equal(q1, q2) || !sameSums(t, m1, m2) {
					t.Fatalf("%s: %q\nfrom the incremental state %+v\nfrom the file %+v\nwrote %d and %d bytes, quarantined %q and %q",
						a.preset, data, r1, r2, len(after1), len(after2), q1, q2)
				}
				want := tornIncApps[a.preset] && r1.Action == ActionHealed
				if steps["torn-cut-incremental"] != want {
					t.Fatalf("%s: %q: planned from the incremental state %v, want %v (%+v)", a.preset, data, steps["torn-cut-incremental"], want, r1)
				}
				if want {
					fast[a.preset]++
				}
				if r1.Action != ActionHealed {
					break
				}
			}
		}
	}
	t.Logf("cuts planned from the incremental state: %v", fast)
	for app := range tornIncApps {
		if fast[app] == 0 {
			t.Errorf("%s: no cut planned from the incremental state", app)
		}
	}
}

// healSteps heals tg with e: the report, the file's bytes after, and the steps the heal took.
func healSteps(t *testing.T, e *Engine, tg Target) (Report, []byte, map[string]bool) {
	t.Helper()
	steps := map[string]bool{}
	e.onStep = func(name, _ string) { steps[name] = true }
	r := e.Heal(context.Background(), tg, false)
	e.onStep = nil
	after, err := os.ReadFile(tg.Path)
	if err != nil {
		t.Fatal(err)
	}
	return r, after, steps
}

// healthyLog is the sample tree of preset whose name says healthy and that holds the log at
// rel, and that log's lines.
func healthyLog(t *testing.T, preset, rel string) (src string, lines [][]byte) {
	t.Helper()
	var orig []byte
	cases, _ := filepath.Glob(filepath.Join(samples, preset, "*healthy*"))
	for _, c := range cases {
		if b, err := os.ReadFile(filepath.Join(c, rel)); err == nil && src == "" {
			src, orig = c, b
		}
	}
	if src == "" {
		t.Fatalf("%s: no healthy sample holds %s", preset, rel)
	}
	lines = bytes.SplitAfter(orig, []byte("\n"))
	if len(lines) > 0 && len(lines[len(lines)-1]) == 0 {
		lines = lines[:len(lines)-1]
	}
	return src, lines
}

// lastQuarantined is the original bytes of e's newest quarantine entry.
func lastQuarantined(t *testing.T, e *Engine) []byte {
	t.Helper()
	all, err := e.Quarantine.List()
	if err != nil || len(all) == 0 {
		return nil
	}
	newest := all[0]
	for _, m := range all {
		if m.Created.After(newest.Created) || m.Created.Equal(newest.Created) && m.Dir > newest.Dir {
			newest = m
		}
	}
	q, err := original(t, newest)
	if err != nil {
		t.Fatal(err)
	}
	return q
}

// sameSums: the quarantine entries in dirs a and b record the same sums.
func sameSums(t *testing.T, a, b string) bool {
	t.Helper()
	if a == "" || b == "" {
		return a == b
	}
	var ma, mb struct {
		SHA256       string `json:"sha256"`
		PrefixSHA256 string `json:"prefix_sha256"`
		Prefix, Size int64
	}
	for _, x := range []struct {
		dir string
		m   any
	}{{a, &ma}, {b, &mb}} {
		j, err := os.ReadFile(filepath.Join(x.dir, "manifest.json"))
		if err != nil {
			t.Fatal(err)
		}
		if err := json.Unmarshal(j, x.m); err != nil {
			t.Fatal(err)
		}
	}
	return ma == mb
}
