package daemon

import (
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/sessionmedic/sessionmedic/heal"
	"github.com/sessionmedic/sessionmedic/policy"
)

// TestHealRefusedLine: the daemon's file.heal_refused says where the damage is, as check
// does, and what each strategy of the rule came to, as a JSON array.
func TestHealRefusedLine(t *testing.T) {
	root := t.TempDir()
	p := filepath.Join(root, "s.jsonl")
	os.WriteFile(p, []byte("nope\n"), 0o644)
	cfg := testPolicy(t, root)
	c := heal.New(cfg, heal.Options{OneShot: true}).Check(heal.Target{Path: p, Rule: &cfg.Rules[0]})
	if c.Verdict != heal.Damaged {
		t.Fatalf("check: %+v", c)
	}
	var logs logBuf
	ready := make(chan struct{})
	cancel, done := start(t, Options{Load: func() (*policy.Config, []string, error) { return cfg, nil, nil },
		Log: slog.New(slog.NewJSONHandler(&logs, nil)), Ready: ready, Notify: func(string) error { return nil }})
	defer func() { cancel(); <-done }()
	<-ready
	waitFor(t, "heal_refused", func() bool { return len(logs.events("file.heal_refused")) == 1 })
	ev := logs.events("file.heal_refused")[0]
	if ev["path"] != p || ev["kind"] != c.Kind || ev["offset"] != float64(c.Offset) || ev["detail"] != c.Detail || c.Detail == "" {
		t.Errorf("file.heal_refused %v; check says %s at %d: %s", ev, c.Kind, c.Offset, c.Detail)
	}
	var tried []string
	arr, _ := ev["tried"].([]any)
	for _, s := range arr {
		tried = append(tried, s.(string))
	}
	want := []string{"salvage: no valid record to keep", "last-good: no copy kept"}
	if !slices.Equal(tried, want) {
		t.Errorf("tried %v, want %q", ev["tried"], want)
	}
	if r := "no strategy of the rule yields a valid file: salvage: no valid record to keep; last-good: no copy kept"; ev["reason"] != r {
		t.Errorf("reason %q, want %q", ev["reason"], r)
	}
	if b, _ := os.ReadFile(p); string(b) != "nope\n" {
		t.Error("a refused heal wrote the file")
	}
}
