package heal

import (
	"bytes"
	"context"
	"math/rand"
	"os"
	"path/filepath"
	"regexp"
	"testing"
)

var ordinalMember = regexp.MustCompile(`,"ordinal":\d+`)

// rewriteDamage damages an app log where its line rewrites repair it: line 1 torn or gone
// (rebuild-header), the last records' ordinals gone (add-ordinals), an event's data renamed
// (Copilot's drop-invalid-entries), mixed with damageLines's.
func rewriteDamage(rng *rand.Rand, data []byte) []byte {
	lines := bytes.SplitAfter(data, []byte("\n"))
	switch rng.Intn(5) {
	case 0: // line 1 torn, its '\n' kept
		if l := lines[0]; len(l) > 2 {
			lines[0] = append(bytes.Clone(l[:1+rng.Intn(len(l)-2)]), '\n')
		}
	case 1: // line 1 gone
		lines = lines[1:]
	case 2: // the ordinals of the last records gone
		for i := max(0, len(lines)-1-rng.Intn(4)); i < len(lines); i++ {
			lines[i] = ordinalMember.ReplaceAll(lines[i], nil)
		}
	case 3: // an event that lacks what its type requires
		i := 1 + rng.Intn(max(1, len(lines)-1))
		if i < len(lines) {
			lines[i] = bytes.Replace(lines[i], []byte(`"data":`), []byte(`"dat":`), 1)
		}
	}
	out := bytes.Join(lines, nil)
	if rng.Intn(3) == 0 {
		out = damageLines(rng, out, 1)
	}
	return out
}

// TestLineRewritesPlannedStreaming: a big app log that a line rewrite repairs (rebuild-header,
// add-ordinals, Copilot's drop-invalid-entries) is planned streaming, a splice of the file or
// of its salvage, never read whole — and healed as the same file held whole is: the same
// report, bytes and quarantine — in each app's sample tree (the values a header is rebuilt
// from are around the file), for every sample case and random damage of its healthy file.
func TestLineRewritesPlannedStreaming(t *testing.T) {
	rng := rand.New(rand.NewSource(23))
	n := 6
	if testing.Short() {
		n = 2
	}
	byRewrite := map[string]int{}
	for _, a := range streamApps {
		switch a.preset {
		case "codex", "gemini-cli", "pi", "copilot-cli":
		default:
			continue
		}
		cases, err := os.ReadDir(filepath.Join(samples, a.preset))
		if err != nil {
			t.Fatal(err)
		}
		for _, sc := range cases {
			src := filepath.Join(samples, a.preset, sc.Name())
			orig, err := os.ReadFile(filepath.Join(src, a.rel))
			if !sc.IsDir() || err != nil || len(orig) == 0 {
				continue
			}
			inputs := [][]byte{orig}
			for range n {
				inputs = append(inputs, rewriteDamage(rng, orig))
			}
			for _, data := range inputs {
				r1, f1, q1 := healInTree(t, a.preset, src, a.rel, data, 0)
				r2, f2, q2 := healInTree(t, a.preset, src, a.rel, data, 1)
				r1.Quarantine, r2.Quarantine, r1.Wrote, r2.Wrote, r1.Path, r2.Path = "", "", nil, nil, "", ""
				if r2.QuarantinedBytes == int64(len(data)-len(f2)) && bytes.HasPrefix(data, f2) && len(f2) > 0 {
					r2.QuarantinedBytes = r1.QuarantinedBytes // a streamed tail cut quarantines what it cuts
				}
				if !equalReports(r1, r2) || !bytes.Equal(f1, f2) || !bytes.Equal(q1, q2) {
					if dir := os.Getenv("REWRITE_DUMP"); dir != "" {
						os.WriteFile(filepath.Join(dir, "input"), data, 0o644)
					}
					t.Fatalf("%s/%s ($REWRITE_DUMP=DIR keeps the input):\nin memory %+v\nstreamed  %+v\nwrote %d and %d bytes, quarantined %d and %d",
						a.preset, sc.Name(), r1, r2, len(f1), len(f2), len(q1), len(q2))
				}
				switch s := r2.Strategy; s {
				case "rebuild-header", "add-ordinals", "drop-invalid-entries":
					byRewrite[a.preset+" "+s]++
				}
			}
		}
	}
	t.Logf("healed streaming by a line rewrite: %v", byRewrite)
	for _, k := range []string{"codex rebuild-header", "codex add-ordinals", "gemini-cli rebuild-header", "pi rebuild-header", "copilot-cli rebuild-header", "copilot-cli drop-invalid-entries"} {
		if byRewrite[k] == 0 {
			t.Errorf("no heal by %s", k)
		}
	}
}

// healInTree heals data at rel in a copy of the sample tree src, under a fresh engine whose
// streamed path takes files over threshold bytes (0: the default): the report, the file
// after and the quarantined bytes.
func healInTree(t *testing.T, preset, src, rel string, data []byte, threshold int64) (Report, []byte, []byte) {
	t.Helper()
	r, after, q, _ := healInTreeSteps(t, preset, src, rel, data, threshold)
	return r, after, q
}

// healInTreeSteps is healInTree, with the engine's steps the heal took.
func healInTreeSteps(t *testing.T, preset, src, rel string, data []byte, threshold int64) (Report, []byte, []byte, map[string]bool) {
	t.Helper()
	return healInTreeTweak(t, preset, src, rel, data, threshold, func(*Engine) {})
}

// healInTreeTweak is healInTreeSteps with the engine set by tweak before the heal.
func healInTreeTweak(t *testing.T, preset, src, rel string, data []byte, threshold int64, tweak func(*Engine)) (Report, []byte, []byte, map[string]bool) {
	t.Helper()
	e, root := bigEngineWith(t, threshold, Options{})
	tweak(e)
	copyTree(t, src, root)
	p := filepath.Join(root, rel)
	if err := os.WriteFile(p, data, 0o600); err != nil {
		t.Fatal(err)
	}
	steps := map[string]bool{}
	e.onStep = func(name, _ string) { steps[name] = true }
	r := e.Heal(context.Background(), Target{Path: p, Rule: appRule(t, preset, root)}, false)
	after, q := healedBytes(t, e, p)
	return r, after, q, steps
}
