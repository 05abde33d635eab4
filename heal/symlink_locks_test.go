package heal

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/gofrs/flock"
)

// Through a rule root that is a symlink to a nanobot namespace (era D), the app's
// .session-files.lock is still the lock the heal waits for.
func TestNanobotLockThroughASymlinkedRoot(t *testing.T) {
	base := t.TempDir()
	ns := filepath.Join(base, "sessions", "1a90ee6c483ef484075bb4aec4e29b33")
	os.MkdirAll(ns, 0o755)
	link := filepath.Join(base, "bot")
	if err := os.Symlink(ns, link); err != nil {
		t.Fatal(err)
	}
	e := testEngine(t, "nanobot", link)
	p := filepath.Join(link, "s.jsonl")
	torn := "{\"_type\": \"metadata\", \"key\": \"s\", \"created_at\": \"2026-01-01T00:00:00\", \"updated_at\": \"2026-01-01T00:00:00\", \"metadata\": {}, \"last_consolidated\": 0}\n{\"role\": \"user\", \"content\": \"hi\", \"timestamp\": \"2026-01-01T00:00:00\"}\n{\"role\""
	os.WriteFile(p, []byte(torn), 0o600)
	fl := flock.New(filepath.Join(ns, ".session-files.lock"))
	if ok, err := fl.TryLock(); !ok || err != nil {
		t.Fatal(ok, err)
	}
	tg := Target{Path: p, Rule: &e.Policy.Rules[0]}
	r := e.Heal(context.Background(), tg, false)
	if r.Verdict != Busy || r.Action == ActionHealed {
		t.Fatalf("heal while nanobot holds its lock, through a symlinked root: %+v", r)
	}
	if b, _ := os.ReadFile(p); string(b) != torn {
		t.Fatal("written under the app's lock")
	}
	fl.Unlock()
	if r = e.Heal(context.Background(), tg, false); r.Action != ActionHealed {
		t.Fatalf("after the lock was released: %+v", r)
	}
}
