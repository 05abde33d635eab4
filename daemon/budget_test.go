package daemon

import (
	"os"
	"path/filepath"
	"testing"
)

// TestWatchBudgetFallsBackToRescans: past watch_budget, a directory is not watched; the
// daemon says so (watch.budget_exhausted, naming the rule and the directory, once per
// directory), and the damaged files there are still found and healed by its scans (the
// watcher's own test shows the rescans it asks for, at start and at every retry).
func TestWatchBudgetFallsBackToRescans(t *testing.T) {
	dir := t.TempDir()
	sessions := filepath.Join(dir, "sessions")
	for _, d := range []string{"a", "b", "c"} {
		os.MkdirAll(filepath.Join(sessions, d), 0o755)
		os.WriteFile(filepath.Join(sessions, d, "s.jsonl"), []byte("{\"a\":1}\n{\"a\""), 0o644)
	}
	yaml := "version: 1\nstate_dir: " + filepath.Join(dir, "state") + "\nwatch_budget: 2\nrules:\n" +
		"  - {name: j, format: jsonl, paths: [" + sessions + "], settle: 50ms, max_wait: 1s}\n"
	logs := startYAML(t, yaml, Options{})
	waitFor(t, "watch.budget_exhausted", func() bool { return len(logs.events("watch.budget_exhausted")) == 2 })
	ev := logs.events("watch.budget_exhausted")[0]
	if ev["rule"] != "j" || ev["budget"] != float64(2) {
		t.Errorf("watch.budget_exhausted: %v", ev)
	}
	waitFor(t, "every file healed", func() bool { return len(logs.events("file.healed")) == 3 })
	for _, d := range []string{"a", "b", "c"} {
		if b, _ := os.ReadFile(filepath.Join(sessions, d, "s.jsonl")); string(b) != "{\"a\":1}\n" {
			t.Errorf("%s: %q", d, b)
		}
	}
}
