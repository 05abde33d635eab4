package heal

import (
	"bytes"
	"context"
	"os"
	"strings"
	"testing"
)

// A panic while a file is judged or its heal planned (a defect met on that file) is that
// file's report: skipped, with the panic, the file left as it is, nothing in the state dir;
// the path lock is let go, so the next heal of it runs. A panic while the plan is applied
// is not contained: it goes on, as a crash would (TestCrashAtEveryStepLeavesOldOrNew).
func TestAPanicWhileJudgingOrPlanningIsContained(t *testing.T) {
	healed := []byte(`{"session_id": "s", "messages": []}`)
	for _, step := range []string{"judged", "planned"} {
		for _, check := range []bool{true, false} {
			if check && step == "planned" {
				continue // a check plans nothing
			}
			e, p := praisonEngine(t)
			os.WriteFile(p, []byte(garbage), 0o600)
			e.onStep = func(s, path string) {
				if s == step {
					panic("boom")
				}
			}
			tg := Target{Path: p, Rule: &e.Policy.Rules[0]}
			var r Report
			if check {
				r = e.Check(tg)
			} else {
				r = e.Heal(context.Background(), tg, false)
			}
			if r.Verdict != Skipped || !strings.Contains(r.InternalError, "panic: boom") || !strings.Contains(r.Detail, "not judged") ||
				r.Path != p || r.Rule != tg.Rule.Name || !strings.Contains(string(r.Stack), "heal.(*Engine).") {
				t.Fatalf("check %v, a panic at %s: %+v", check, step, r)
			}
			if b, _ := os.ReadFile(p); !bytes.Equal(b, []byte(garbage)) {
				t.Fatalf("check %v, a panic at %s: the file changed: %q", check, step, b)
			}
			if all, _ := e.Quarantine.List(); len(all) != 0 {
				t.Fatalf("check %v, a panic at %s: %d quarantine entries", check, step, len(all))
			}
			if js, _ := os.ReadDir(e.Journal.Root); len(js) != 0 {
				t.Fatalf("check %v, a panic at %s: %d journal entries", check, step, len(js))
			}
			e.onStep = nil
			if r := e.Heal(context.Background(), tg, false); r.Action != ActionHealed {
				t.Fatalf("check %v, a panic at %s: the heal after it: %+v", check, step, r)
			}
			if b, _ := os.ReadFile(p); !bytes.Equal(b, healed) {
				t.Fatalf("check %v, a panic at %s: healed to %q", check, step, b)
			}
		}
	}

	e, p := praisonEngine(t)
	os.WriteFile(p, []byte(garbage), 0o600)
	e.onStep = func(s, path string) {
		if s == "journaled" {
			panic("boom")
		}
	}
	got := func() (v any) {
		defer func() { v = recover() }()
		e.Heal(context.Background(), Target{Path: p, Rule: &e.Policy.Rules[0]}, false)
		return nil
	}()
	if got != "boom" {
		t.Fatalf("a panic while a heal is applied: %v, want it raised on", got)
	}
}
