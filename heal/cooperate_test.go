package heal

import (
	"context"
	"os"
	"path/filepath"
	"testing"
)

// An operator's restore stands: the restored damage is reported, hands off, until the app
// writes the file again or a heal names it.
func TestRestoreIsHandsOffUntilTheAppWrites(t *testing.T) {
	e, p := praisonEngine(t)
	tg := Target{Path: p, Rule: &e.Policy.Rules[0]}
	os.WriteFile(p, []byte(garbage), 0o600)
	r := e.Heal(context.Background(), tg, false)
	if r.Action != ActionHealed {
		t.Fatalf("first heal: %+v", r)
	}
	healed, _ := os.ReadFile(p)
	m, err := e.Quarantine.Get(filepath.Base(r.Quarantine))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := e.Restore(context.Background(), m, tg); err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 2; i++ { // a daemon looks at it again and again
		r = e.Heal(context.Background(), tg, false)
		if r.Verdict != Damaged || !r.HandsOff || r.Action == ActionHealed || r.Quarantine != m.ID {
			t.Fatalf("heal of a restored file: %+v", r)
		}
		if b, _ := os.ReadFile(p); string(b) != garbage {
			t.Fatal("the operator's restore was undone")
		}
	}
	// The operator names it: healed, and the mark is gone.
	over := tg
	over.Override = true
	if r = e.Heal(context.Background(), over, false); r.Action != ActionHealed || r.HandsOff {
		t.Fatalf("heal naming the file: %+v", r)
	}
	if b, _ := os.ReadFile(p); string(b) != string(healed) {
		t.Fatalf("healed to %q", b)
	}
	if _, err := os.Stat(e.handsOff.File(p)); !os.IsNotExist(err) {
		t.Fatal("hands-off mark left after the operator's heal")
	}

	// Restore again; then the app writes the file (damaged again): that is healed.
	if _, err := e.Restore(context.Background(), m, tg); err != nil {
		t.Fatal(err)
	}
	os.WriteFile(p, []byte(garbage+"x"), 0o600)
	if r = e.Heal(context.Background(), tg, false); r.Action != ActionHealed {
		t.Fatalf("after the app wrote again: %+v", r)
	}
	if _, err := os.Stat(e.handsOff.File(p)); !os.IsNotExist(err) {
		t.Fatal("hands-off mark kept after the app wrote")
	}
}
