package apps

import (
	"testing"

	"github.com/sessionmedic/sessionmedic/heal/format"
	"github.com/sessionmedic/sessionmedic/internal/layering"
	"github.com/sessionmedic/sessionmedic/policy"
)

// TestImports keeps the layering of DESIGN.md §2: heal/apps imports heal/format, heal/jsonv,
// heal/fsio, heal/lock, policy and the internal leaf packages, never heal itself.
func TestImports(t *testing.T) {
	layering.Check(t, ".", false, func(own string) bool {
		switch own {
		case "heal/format", "heal/jsonv", "heal/fsio", "heal/lock", "policy":
			return true
		}
		return layering.Leaf(own)
	})
}

// Every format the policy accepts has a profile, and is not left to detection by name.
func TestEveryPolicyFormatHasAProfile(t *testing.T) {
	r := Registry()
	for _, f := range policy.Formats {
		if !r.Has(f) {
			t.Errorf("format %q is accepted by the policy but has no profile", f)
		}
	}
}

// Every lock protocol the policy accepts beyond the generic ones is an app's, registered
// here.
func TestEveryAppLockProtocolIsRegistered(t *testing.T) {
	r := Registry()
	for _, p := range policy.LockProtocols {
		switch p {
		case policy.LockNone, policy.LockFlock, policy.LockFile:
			continue
		}
		if r.LockProtocol(string(p)) == nil {
			t.Errorf("lock protocol %q is accepted by the policy but not registered", p)
		}
	}
}

// Every profile answers each question its kind asks.
func TestProfilesAreWhole(t *testing.T) {
	seen := map[string]bool{}
	for _, p := range Registry().Profiles() {
		if seen[p.Name()] {
			t.Errorf("two profiles are named %q", p.Name())
		}
		seen[p.Name()] = true
		if _, ok := p.(format.RecordChecker); ok && !p.JSONL() {
			t.Errorf("%s: a record checker must be a JSONL profile", p.Name())
		}
	}
}

// Every rewrite a profile does (reconcile, drop-invalid-entries, restore-fields) is a splice
// of the file, which the one planner (heal/bigplan.go) plans from the file at every size: a
// rewrite done on bytes held whole only would be planned by nothing.
func TestEveryRewriteIsASplice(t *testing.T) {
	for _, p := range Registry().Profiles() {
		if _, ok := p.(format.Reconciler); ok {
			if _, ok := p.(format.SpliceReconciler); !ok {
				t.Errorf("%T reconciles held bytes only", p)
			}
		}
		if _, ok := p.(format.EntryDropper); ok {
			if _, ok := p.(format.SpliceDropper); !ok {
				t.Errorf("%T drops invalid entries of held bytes only", p)
			}
		}
		if _, ok := p.(format.FieldRestorer); ok {
			if _, ok := p.(format.SpliceRestorer); !ok {
				t.Errorf("%T restores fields of held bytes only", p)
			}
		}
	}
}
