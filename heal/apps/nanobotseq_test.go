package apps

import (
	"bytes"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/sessionmedic/sessionmedic/heal/jsonv"
)

// nanobot's sequence checks each record on one build in an arena to the members read
// (nanobotFields): it finds what RecordProblem and the sequence found on the records built
// to their top-level members, record by record, at the end and in its warnings — over every
// nanobot sample's records and records with their members renamed, retyped or repeated.
func TestNanobotFieldsAreWhatNanobotReads(t *testing.T) {
	files := sampleRecords("../testdata/samples/nanobot", nanobotDialect)
	if len(files) < 3 {
		t.Fatalf("%d sample files", len(files))
	}
	edits := [][2]string{
		{`"_type": "metadata"`, `"_type": "metadatax"`}, {`"key":`, `"kee":`}, {`"role":`, `"rol":`}, {`"role": "`, `"role": 1, "r": "`},
		{`"metadata": {`, `"metadata": [], "m": {`}, {`"last_consolidated":`, `"last_consolidated": 1.5, "lc":`}, {`"created_at":`, `"created_at": 1, "c":`},
		{`{`, `{"_type": "provider_state", `}, {`"_type":`, `"_type": 1, "t":`}, {`{`, `{"_type": "metadata", `},
	}
	rng := rand.New(rand.NewPCG(47, 53))
	compared := 0
	for _, recs := range files {
		for round := range 80 {
			old, cur := &nanobotSeq{path: "/x/a.jsonl"}, &nanobotSeq{path: "/x/a.jsonl"}
			for i, r := range recs {
				if round > 0 && rng.IntN(3) == 0 {
					e := edits[rng.IntN(len(edits))]
					r = bytes.Replace(r, []byte(e[0]), []byte(e[1]), 1)
				}
				if rng.IntN(10) == 0 && i > 0 {
					r = recs[rng.IntN(i)]
				}
				if jsonv.Valid(r, nanobotDialect) != nil {
					continue
				}
				want := (nanobot{}).RecordProblem(r, !old.seen)
				if want == "" {
					v, _ := jsonv.ParseDepth(r, nanobotDialect, 1)
					want = old.add(v)
				}
				if got := cur.RecordValid(r); got != want {
					t.Fatalf("record %q: built to its members %q, to its fields %q", r, want, got)
				}
				compared++
				if want != "" {
					break
				}
			}
			if a, b := old.End(), cur.End(); a != b || strings.Join(old.Warnings(), "|") != strings.Join(cur.Warnings(), "|") {
				t.Fatalf("end %q / %q, warnings %q / %q", a, b, old.Warnings(), cur.Warnings())
			}
		}
	}
	t.Logf("%d records compared", compared)
}
