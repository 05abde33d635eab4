package heal

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// A repair planned on the file held whole is refused, and said so with the limit, when the
// file would take the process over the memory limit its operator set (GOMEMLIMIT), and made
// where it fits: OpenViking's lagging .meta.json, whose reconcile is done on whole files
// only, planned from the file (a threshold of one byte).
func TestPlanWholeUnderMemoryLimit(t *testing.T) {
	src := filepath.Join(samples, "openviking", "meta_lag_after_append_crash")
	rel := "workspace/viking/default/user/default/sessions/demo-live/.meta.json"
	for _, c := range []struct {
		limit  int64
		healed bool
	}{{0, true}, {1 << 30, true}, {64, false}} {
		e, root := bigEngineWith(t, 1, Options{})
		e.holdThreshold = 1
		e.memLimit = func() int64 { return c.limit }
		copyTree(t, src, root)
		p := filepath.Join(root, rel)
		before, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		whole := false
		e.onStep = func(name, _ string) { whole = whole || name == "plan-whole" }
		r := e.Heal(context.Background(), Target{Path: p, Rule: appRule(t, "openviking", root)}, false)
		after, _ := os.ReadFile(p)
		switch {
		case c.healed && (r.Action != ActionHealed || !whole):
			t.Fatalf("limit %d: %+v (planned whole: %v), want healed on the file held whole", c.limit, r, whole)
		case !c.healed && (r.Action != ActionRefused || !strings.Contains(r.Reason, "GOMEMLIMIT") || whole || string(after) != string(before)):
			t.Fatalf("limit %d: %+v (planned whole: %v), want refused for the limit, the file untouched", c.limit, r, whole)
		}
	}
}
