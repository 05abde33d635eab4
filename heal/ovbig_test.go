package heal

import (
	"bytes"
	"context"
	"math/rand"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// TestOpenVikingPlannedStreaming: OpenViking's big messages.jsonl is planned streaming —
// its reconcile with the archives, its salvage (which drops the archived messages), its
// last-good copy — with .meta.json's message_count edited to match, and healed as the same
// file held whole is: the same report, messages, .meta.json and quarantined bytes, for every
// sample session damaged at random (archived messages put back among the live ones, lines
// glued, torn, repeated, NULs), never read whole.
func TestOpenVikingPlannedStreaming(t *testing.T) {
	rng := rand.New(rand.NewSource(37))
	n := 8
	if testing.Short() {
		n = 3
	}
	cases, err := os.ReadDir(filepath.Join(samples, "openviking"))
	if err != nil {
		t.Fatal(err)
	}
	strategies := map[string]int{}
	for _, sc := range cases {
		src := filepath.Join(samples, "openviking", sc.Name())
		var rels []string
		filepath.WalkDir(src, func(p string, d os.DirEntry, err error) error {
			if err == nil && d.Name() == "messages.jsonl" && !strings.Contains(p, "/history/") {
				rel, _ := filepath.Rel(src, p)
				rels = append(rels, rel)
			}
			return nil
		})
		slices.Sort(rels)
		for _, rel := range rels {
			orig, _ := os.ReadFile(filepath.Join(src, rel))
			var archived [][]byte
			filepath.WalkDir(filepath.Join(src, filepath.Dir(rel), "history"), func(q string, d os.DirEntry, err error) error {
				if b, rerr := os.ReadFile(q); err == nil && d.Name() == "messages.jsonl" && rerr == nil {
					archived = append(archived, bytes.SplitAfter(b, []byte("\n"))...)
				}
				return nil
			})
			inputs := [][]byte{orig}
			for range n {
				data := orig
				if len(archived) > 0 && rng.Intn(2) == 0 {
					lines := bytes.SplitAfter(data, []byte("\n"))
					lines = slices.Insert(lines, rng.Intn(len(lines)+1), archived[rng.Intn(len(archived))])
					data = bytes.Join(lines, nil)
				}
				if len(data) > 0 && rng.Intn(3) > 0 {
					data = damageLines(rng, data, 1+rng.Intn(2))
				}
				inputs = append(inputs, data)
			}
			for i, data := range inputs {
				var lg []byte // a last-good copy: the session before the damage, or none
				if i%2 == 1 {
					lg = orig
				}
				r1, m1, meta1, q1 := healOVTree(t, src, rel, data, lg, 0)
				r2, m2, meta2, q2 := healOVTree(t, src, rel, data, lg, 1)
				if len(m2) > 0 && bytes.HasPrefix(data, m2) && r1.QuarantinedBytes-r2.QuarantinedBytes == int64(len(m2)) {
					r2.QuarantinedBytes = r1.QuarantinedBytes // a streamed tail cut quarantines what it cuts
				}
				if !equalReports(r1, r2) || !bytes.Equal(m1, m2) || !bytes.Equal(meta1, meta2) || !slices.EqualFunc(q1, q2, bytes.Equal) {
					t.Fatalf("%s/%s:\nin memory %+v\nstreamed  %+v\nmessages %d and %d bytes, .meta.json equal: %v, %d and %d quarantined\ninput %.400q",
						sc.Name(), rel, r1, r2, len(m1), len(m2), bytes.Equal(meta1, meta2), len(q1), len(q2), data)
				}
				if k := r2.Strategy; k != "" {
					if len(r2.Also) > 0 {
						k += " (and .meta.json)"
					}
					strategies[k]++
				}
			}
		}
	}
	t.Logf("healed streaming: %v", strategies)
	for _, k := range []string{"reconcile", "salvage (and .meta.json)", "last-good"} {
		if strategies[k] == 0 {
			t.Errorf("no heal by %s", k)
		}
	}
}

// healOVTree heals messages.jsonl at rel, written with data, in a copy of the sample tree src
// (beside lastGood, its last-good copy, when set) under a fresh engine that plans files over threshold bytes streaming (0: the default), and
// judges logs over it streaming too: the report, the messages and the .meta.json after, the
// quarantined bytes (sorted).
func healOVTree(t *testing.T, src, rel string, data, lastGood []byte, threshold int64) (Report, []byte, []byte, [][]byte) {
	t.Helper()
	e, root := bigEngineWith(t, threshold, Options{})
	if threshold > 0 {
		e.holdThreshold = threshold
	}
	copyTree(t, src, root)
	p := filepath.Join(root, rel)
	if err := os.WriteFile(p, data, 0o600); err != nil {
		t.Fatal(err)
	}
	if len(lastGood) > 0 {
		if err := e.LastGood.Put(p, lastGood); err != nil {
			t.Fatal(err)
		}
	}
	r := e.Heal(context.Background(), Target{Path: p, Rule: appRule(t, "openviking", root)}, false)
	after, _ := os.ReadFile(p)
	meta, _ := os.ReadFile(filepath.Join(filepath.Dir(p), ".meta.json"))
	var qs [][]byte
	all, _ := e.Quarantine.List()
	for _, m := range all {
		q, err := original(t, m)
		if err != nil {
			t.Fatal(err)
		}
		qs = append(qs, q)
	}
	slices.SortFunc(qs, bytes.Compare)
	r.Quarantine, r.Wrote, r.Path = "", nil, ""
	return r, after, meta, qs
}
