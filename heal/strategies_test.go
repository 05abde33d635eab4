package heal

import (
	"testing"

	"github.com/sessionmedic/sessionmedic/heal/apps"
	"github.com/sessionmedic/sessionmedic/heal/format"
	"github.com/sessionmedic/sessionmedic/policy"
)

// strategyAbilities is, for each strategy, the ability of a profile its planner asks for
// (planners and docRewrite: the whole-bytes interface or its splice of a big document), or
// nil for a strategy that repairs a file of any profile: salvage, backup, last-good,
// normalize (a byte order mark is damage to every profile) and clean-temp (app temp files).
var strategyAbilities = map[policy.Strategy]func(format.Profile) bool{
	policy.Salvage:      nil,
	policy.Backup:       nil,
	policy.LastGoodCopy: nil,
	policy.Normalize:    nil,
	policy.CleanTemp:    nil,
	policy.Reconcile: func(p format.Profile) bool {
		_, whole := p.(format.Reconciler)
		_, splice := p.(format.SpliceReconciler)
		return whole || splice
	},
	policy.DropInvalidEntries: func(p format.Profile) bool {
		_, whole := p.(format.EntryDropper)
		_, splice := p.(format.SpliceDropper)
		return whole || splice
	},
	policy.RestoreFields: func(p format.Profile) bool {
		_, whole := p.(format.FieldRestorer)
		_, splice := p.(format.SpliceRestorer)
		return whole || splice
	},
	policy.AddOrdinals:     func(p format.Profile) bool { _, ok := p.(format.OrdinalAdder); return ok },
	policy.RebuildHeader:   func(p format.Profile) bool { _, ok := p.(format.HeaderRebuilder); return ok },
	policy.Reindex:         func(p format.Profile) bool { _, ok := p.(format.SQLiteStore); return ok },
	policy.RestoreSnapshot: func(p format.Profile) bool { _, ok := p.(format.SQLiteStore); return ok },
}

// TestStrategyFormatsAgreeWithProfiles: the policy's table of the formats each strategy can
// repair (policy.StrategyFormats, against which a rule's strategies are checked) says
// exactly what the profiles of each format can do: a strategy applies to a format when one
// of the format's profiles has the ability its planner asks for.
func TestStrategyFormatsAgreeWithProfiles(t *testing.T) {
	reg := apps.Registry()
	for _, s := range policy.Strategies {
		ability, known := strategyAbilities[s]
		if !known {
			t.Errorf("strategy %q: strategyAbilities does not say which profiles it repairs", s)
			continue
		}
		for _, f := range policy.Formats {
			profiles := reg.FormatProfiles(f)
			if len(profiles) == 0 {
				t.Errorf("format %q has no profile", f)
			}
			can := ability == nil
			var names []string
			for _, p := range profiles {
				can = can || ability(p)
				names = append(names, p.Name())
			}
			if s.Applies(f) != can {
				t.Errorf("strategy %s, format %s: the policy says it applies: %v; its profiles %v say %v", s, f, s.Applies(f), names, can)
			}
		}
	}
}
