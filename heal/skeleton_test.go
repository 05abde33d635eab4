package heal

import (
	"bytes"
	"math/rand"
	"testing"

	"github.com/sessionmedic/sessionmedic/heal/format"
)

// A transcript whose long records each have a skeleton over the bound (as a message holding
// many images of under a megabyte has: each kept whole in the skeleton) is judged and planned
// from the file, every such record read whole as its own skeleton: healed as it is when the
// skeletons fit — the same report, file and quarantine. Before, such a record could not be
// read streaming, and its file was planned on its bytes held whole (up to 256 MiB; refused
// above).
func TestLongRecordsOverTheSkeletonBoundPlannedFromTheFile(t *testing.T) {
	defer format.SetLineWindow(64)()
	rng := rand.New(rand.NewSource(61))
	healed := 0
	for _, a := range streamApps {
		healthy := jsonlSamples(t, a.preset, "healthy")
		for range 4 {
			orig := healthy[rng.Intn(len(healthy))]
			if longest(orig) <= 64 {
				continue
			}
			data := damageLines(rng, orig, 1+rng.Intn(2))
			r1, f1, q1, _ := healApp(t, a.preset, a.rel, data, nil, 1)
			restore := format.SetSkeletonLimit(8) // every long record's skeleton over it
			r2, f2, q2, big := healApp(t, a.preset, a.rel, data, nil, 1)
			restore()
			if r2.Verdict == Damaged && !big {
				t.Fatalf("%s: damaged, not planned from the file", a.preset)
			}
			r1.Quarantine, r2.Quarantine, r1.Wrote, r2.Wrote, r1.Path, r2.Path = "", "", nil, nil, "", ""
			if !equalReports(r1, r2) || !bytes.Equal(f1, f2) || !bytes.Equal(q1, q2) {
				t.Fatalf("%s:\nskeletons %+v\nheld      %+v\nwrote %d and %d bytes, quarantined %d and %d",
					a.preset, r1, r2, len(f1), len(f2), len(q1), len(q2))
			}
			if r2.Action == ActionHealed {
				healed++
			}
		}
	}
	if healed < 10 {
		t.Fatalf("only %d heals", healed)
	}
}

// longest is the length of data's longest line.
func longest(data []byte) int {
	n := 0
	for _, l := range bytes.Split(data, []byte("\n")) {
		n = max(n, len(l))
	}
	return n
}
