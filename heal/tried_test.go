package heal

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/sessionmedic/sessionmedic/heal/format"
	"github.com/sessionmedic/sessionmedic/policy"
)

// nanobotRefused copies the nanobot sample whose metadata line is torn, which no strategy
// heals without a last-good copy, and returns an engine, its target and check's report.
func nanobotRefused(t *testing.T) (*Engine, Target, Report) {
	t.Helper()
	root := filepath.Join(t.TempDir(), "s")
	copyTree(t, filepath.Join(samples, "nanobot", "corrupt_truncated_in_metadata"), root)
	e := testEngine(t, "nanobot", root)
	tg := Target{Path: filepath.Join(root, "dGVsZWdyYW06MTIzNDU2Nzg5.jsonl"), Rule: &e.Policy.Rules[0]}
	c := e.Check(tg)
	if c.Verdict != Damaged || c.Kind != format.KindTruncated {
		t.Fatalf("check: %+v", c)
	}
	return e, tg, c
}

// A refused heal says where the damage is, as check does, and what each strategy of the
// rule came to, in policy order.
func TestRefusalSaysWhatEachStrategyCameTo(t *testing.T) {
	e, tg, c := nanobotRefused(t)
	r := e.Heal(context.Background(), tg, false)
	if r.Action != ActionRefused || r.Verdict != Damaged {
		t.Fatalf("heal: %+v", r)
	}
	if r.Kind != c.Kind || r.Offset != c.Offset || r.Detail != c.Detail || r.Detail == "" {
		t.Errorf("heal says %s at %d: %s; check says %s at %d: %s", r.Kind, r.Offset, r.Detail, c.Kind, c.Offset, c.Detail)
	}
	if want := []string{"salvage: no valid record to keep", "last-good: no copy kept"}; !slices.Equal(r.Tried, want) {
		t.Fatalf("tried %q, want %q", r.Tried, want)
	}
	if want := "no strategy of the rule yields a valid file: " + strings.Join(r.Tried, "; "); r.Reason != want {
		t.Errorf("reason %q, want %q", r.Reason, want)
	}
	if strings.Contains(r.Reason, "report-only") {
		t.Errorf("a rule in heal mode says report-only: %q", r.Reason)
	}
	b, _ := json.Marshal(r)
	var back struct{ Tried []string }
	if json.Unmarshal(b, &back); !slices.Equal(back.Tried, r.Tried) {
		t.Errorf("-json: %s", b)
	}
	t.Logf("%s", b)
}

// A last-good copy that fails the checklist is said so.
func TestRefusalLastGoodFails(t *testing.T) {
	e, tg, _ := nanobotRefused(t)
	if err := e.LastGood.Put(tg.Path, []byte("{\"_type\": \"meta")); err != nil {
		t.Fatal(err)
	}
	r := e.Heal(context.Background(), tg, false)
	if r.Action != ActionRefused || len(r.Tried) != 2 || r.Tried[1] != "last-good: the copy fails the checklist" {
		t.Fatalf("heal: %+v", r)
	}
}

// Observe mode keeps its own reasons, and says what the strategies came to as well.
func TestRefusalObserveMode(t *testing.T) {
	e, tg, _ := nanobotRefused(t)
	e.Policy.Rules[0].Mode = policy.ModeObserve
	r := e.Heal(context.Background(), tg, false)
	if r.Action != ActionRefused || !strings.HasPrefix(r.Reason, "observe mode: ") || len(r.Tried) != 2 {
		t.Fatalf("observe, nothing heals: %+v", r)
	}

	root := filepath.Join(t.TempDir(), "s")
	copyTree(t, filepath.Join(samples, "nanobot", "corrupt_bad_middle_line"), root)
	e = testEngine(t, "nanobot", root)
	e.Policy.Rules[0].Mode = policy.ModeObserve
	r = e.Heal(context.Background(), Target{Path: filepath.Join(root, "dGVsZWdyYW06MTIzNDU2Nzg5.jsonl"), Rule: &e.Policy.Rules[0]}, false)
	if r.Action != ActionRefused || r.Reason != "observe mode: would heal with salvage" || r.Tried != nil {
		t.Fatalf("observe, salvage heals: %+v", r)
	}
}

// plainJSONL is an engine whose one rule heals the JSONL file it returns, holding data,
// with salvage, backup and last-good, under max_loss 50%.
func plainJSONL(t *testing.T, data string) (*Engine, Target) {
	t.Helper()
	dir := t.TempDir()
	p := filepath.Join(dir, "x.jsonl")
	os.WriteFile(p, []byte(data), 0o644)
	rule := policy.Rule{Name: "r", Paths: []string{dir}, Match: []string{"*.jsonl"}, Format: "jsonl",
		Strategies: []policy.Strategy{policy.Salvage, policy.Backup, policy.LastGoodCopy}, Limits: policy.Limits{MaxLoss: 0.5}, Mode: policy.ModeHeal}
	e := New(&policy.Config{Version: 1, StateDir: filepath.Join(t.TempDir(), "state"), Rules: []policy.Rule{rule}}, Options{})
	return e, Target{Path: p, Rule: &e.Policy.Rules[0]}
}

// A heal over max_loss says what each strategy would have dropped; so does one of a big
// file, planned streaming.
func TestRefusalOverMaxLoss(t *testing.T) {
	for _, big := range []bool{false, true} {
		e, tg := plainJSONL(t, "{\"a\":1}\nnope\nnope\nnope\n")
		if big {
			e.bigThreshold = 1
			if !e.inspect(tg).big {
				t.Fatal("not judged streaming")
			}
		}
		r := e.Heal(context.Background(), tg, false)
		want := []string{"salvage: over max_loss (drops 3 of 4 records)", "backup: no backup found", "last-good: no copy kept"}
		if r.Action != ActionRefused || !slices.Equal(r.Tried, want) {
			t.Errorf("big %v: %+v\nwant tried %q", big, r, want)
		}
	}
}

// A big file no strategy heals says why, as a small one does.
func TestRefusalBigFile(t *testing.T) {
	e, tg := plainJSONL(t, "nope\nnope\n")
	e.bigThreshold = 1
	if !e.inspect(tg).big {
		t.Fatal("not judged streaming")
	}
	r := e.Heal(context.Background(), tg, false)
	if want := []string{"salvage: no valid record to keep", "backup: no backup found", "last-good: no copy kept"}; r.Action != ActionRefused || !slices.Equal(r.Tried, want) {
		t.Fatalf("heal: %+v\nwant tried %q", r, want)
	}
}
