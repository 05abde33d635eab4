package heal

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// A repair planned on the file held whole (planWhole: a line no streaming reader takes) is
// refused, and said so with the limit, when the file would take the process over the memory
// limit its operator set (GOMEMLIMIT), and made where it fits: OpenViking's lagging
// .meta.json, planned whole.
func TestPlanWholeUnderMemoryLimit(t *testing.T) {
	src := filepath.Join(samples, "openviking", "meta_lag_after_append_crash")
	rel := "workspace/viking/default/user/default/sessions/demo-live/.meta.json"
	for _, c := range []struct {
		limit   int64
		planned bool
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
		rule := appRule(t, "openviking", root)
		in := e.inspectAs(Target{Path: p, Rule: rule}, true)
		if in.verdict.Kind != "metadata-lag" || !in.big {
			t.Fatalf("limit %d: inspected %+v (big %v)", c.limit, in.verdict, in.big)
		}
		f, err := os.Open(p)
		if err != nil {
			t.Fatal(err)
		}
		plans, _, err := e.planWhole(rule, in, f)
		f.Close()
		after, _ := os.ReadFile(p)
		switch {
		case c.planned && (err != nil || best(plans) == nil || best(plans).strategy != "reconcile" || !whole):
			t.Fatalf("limit %d: %v, %v (planned whole: %v), want a reconcile planned on the file held whole", c.limit, plans, err, whole)
		case !c.planned && (err == nil || !strings.Contains(err.Error(), "GOMEMLIMIT") || whole || len(plans) > 0):
			t.Fatalf("limit %d: %v, %v (planned whole: %v), want refused for the limit", c.limit, plans, err, whole)
		case string(after) != string(before):
			t.Fatalf("limit %d: the file changed", c.limit)
		}
	}
}
