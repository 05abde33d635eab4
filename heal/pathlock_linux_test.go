package heal

import (
	"context"
	"os"
	"path/filepath"
	"testing"
)

// The path lock is an open file description lock: Linux only (elsewhere heal/state takes none).

// A heal waits while another healer under the same state directory holds the path, and then
// looks again: the file the other one healed is healthy, not healed twice.
func TestHealWaitsForAnotherHealerOfThePath(t *testing.T) {
	e, p := praisonEngine(t)
	os.WriteFile(p, []byte(garbage), 0o600)
	other, err := e.lockPath(context.Background(), p) // another process's heal of p
	if err != nil {
		t.Fatal(err)
	}
	waiting := make(chan struct{})
	e.onStep = func(step, _ string) {
		if step == "path-busy" {
			close(waiting)
		}
	}
	done := make(chan Report, 1)
	go func() { done <- e.Heal(context.Background(), Target{Path: p, Rule: &e.Policy.Rules[0]}, false) }()
	select {
	case <-waiting:
	case r := <-done:
		t.Fatalf("heal went ahead while another healer held the path: %+v", r)
	}
	// The other healer heals p while ours waits for the path.
	os.WriteFile(p, []byte(`{"session_id": "s", "messages": []}`), 0o600)
	other.Release()
	r := <-done
	if r.Verdict != Healthy || r.Action == ActionHealed {
		t.Fatalf("after the other healer: %+v", r)
	}
	if all, _ := e.Quarantine.List(); len(all) != 0 {
		t.Fatalf("healed twice: %d quarantine entries", len(all))
	}
}

func TestHealWaitingForThePathStopsWithTheContext(t *testing.T) {
	e, p := praisonEngine(t)
	os.WriteFile(p, []byte(garbage), 0o600)
	other, err := e.lockPath(context.Background(), p)
	if err != nil {
		t.Fatal(err)
	}
	defer other.Release()
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	r := e.Heal(ctx, Target{Path: p, Rule: &e.Policy.Rules[0]}, false)
	if r.Verdict != Busy || r.Action == ActionHealed {
		t.Fatalf("interrupted wait: %+v", r)
	}
	if b, _ := os.ReadFile(p); string(b) != garbage {
		t.Fatal("file written without the path lock")
	}
	// A different path is not held up.
	q := filepath.Join(filepath.Dir(p), "t.json")
	os.WriteFile(q, []byte(garbage), 0o600)
	if r := e.Heal(context.Background(), Target{Path: q, Rule: &e.Policy.Rules[0]}, false); r.Action != ActionHealed {
		t.Fatalf("another path: %+v", r)
	}
}
