package heal

import (
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/sessionmedic/sessionmedic/policy"
)

// TestRulesOverOneRootWalkItOnce: several rules over one root walk it once, a root inside
// another rule's tree is walked as part of it, but not one reached only through a symlink
// (a walk never follows one below its root): every file still goes to the rule the policy
// gives it.
func TestRulesOverOneRootWalkItOnce(t *testing.T) {
	dir := t.TempDir()
	home := filepath.Join(dir, "home")
	inner := filepath.Join(home, "app", "sessions")
	elsewhere := filepath.Join(dir, "elsewhere")
	linked := filepath.Join(home, "linked") // a symlink to elsewhere
	for _, d := range []string{inner, elsewhere} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Symlink(elsewhere, linked); err != nil {
		t.Fatal(err)
	}
	files := map[string]string{
		filepath.Join(home, "a.json"):       "docs",
		filepath.Join(inner, "s.jsonl"):     "inner",
		filepath.Join(elsewhere, "l.jsonl"): "linked",
	}
	for p := range files {
		if err := os.WriteFile(p, []byte("{}\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	rule := func(name, format string, root string) policy.Rule {
		return policy.Rule{Name: name, Format: format, Paths: []string{root}, Match: []string{"*." + format}, Lock: policy.Lock{Protocol: "none"},
			Strategies: []policy.Strategy{policy.Salvage}, Mode: "heal"}
	}
	cfg := &policy.Config{Version: 1, StateDir: filepath.Join(dir, "state"), Rules: []policy.Rule{
		rule("inner", "jsonl", inner),
		rule("linked", "jsonl", linked),
		rule("docs", "json", home),
		rule("docs-again", "json", home),
	}}
	e := New(cfg, Options{})
	var walked []string
	e.onWalk = func(root string) { walked = append(walked, root) }
	targets, errs := e.Targets(nil, nil)
	if len(errs) > 0 {
		t.Fatal(errs)
	}
	slices.Sort(walked)
	if want := []string{home, linked}; !slices.Equal(walked, want) {
		t.Errorf("walked %q, want %q", walked, want)
	}
	got := map[string]string{}
	for _, tg := range targets {
		got[tg.Path] = tg.Rule.Name
	}
	want := map[string]string{
		filepath.Join(home, "a.json"):    "docs",
		filepath.Join(inner, "s.jsonl"):  "inner",
		filepath.Join(linked, "l.jsonl"): "linked",
	}
	for p, r := range want {
		if got[p] != r {
			t.Errorf("%s: rule %q, want %q (targets %v)", p, got[p], r, got)
		}
	}
}
