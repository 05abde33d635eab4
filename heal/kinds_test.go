package heal

import (
	"slices"
	"testing"
)

// Every damage kind a sample case's verdict names (TestSamples holds the code to those) is
// among the kinds the engine gives the case's rule: the series the daemon starts at 0 are
// the ones its verdicts move.
func TestSampleKindsAreTheRulesKinds(t *testing.T) {
	cases := append(sampleCases(), copilotSampleCases()...)
	cases = append(cases, piSampleCases()...)
	cases = append(cases, qwenSampleCases()...)
	n := 0
	for _, sc := range cases {
		e := testEngine(t, sc.preset, t.TempDir())
		ks := e.DamageKinds(&e.Policy.Rules[0])
		for _, f := range sc.files {
			if f.kind == "" || f.kind == "skipped" {
				continue
			}
			n++
			if !slices.Contains(ks, f.kind) {
				t.Errorf("%s/%s %s: kind %q is not among %s's kinds %v", sc.app, sc.src, f.file, f.kind, sc.preset, ks)
			}
		}
	}
	if n < 50 {
		t.Errorf("only %d sample verdicts looked at", n)
	}
}
