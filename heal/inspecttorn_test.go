package heal

import (
	"bytes"
	"math/rand"
	"os"
	"path/filepath"
	"reflect"
	"testing"

	"github.com/sessionmedic/sessionmedic/heal/apps"
	"github.com/sessionmedic/sessionmedic/heal/format"
)

// tornTail damages data as a crash leaves an app log: damageLines's damage, then a torn stub
// of another of its lines (or NULs) after its last '\n'.
func tornTail(rng *rand.Rand, data []byte) []byte {
	if rng.Intn(2) == 0 {
		data = damageLines(rng, data, 1)
	}
	lines := bytes.SplitAfter(data, []byte("\n"))
	o := lines[rng.Intn(len(lines))]
	stub := bytes.TrimSuffix(o, []byte("\n"))
	stub = stub[:rng.Intn(len(stub)+1)]
	if rng.Intn(4) == 0 {
		stub = bytes.Repeat([]byte{0}, 1+rng.Intn(200))
	}
	if len(data) > 0 && data[len(data)-1] != '\n' {
		data = append(bytes.Clone(data), '\n')
	}
	return append(bytes.Clone(data), stub...)
}

// TestInspectTornIsStreamInspect: where format.InspectTorn judges a file (its last line torn,
// its cut planned by PlanTornCut), its verdict is StreamInspect's — status, kind, offset,
// detail, warnings — and its cut PlanTornCut's at that offset, for every app log's healthy
// samples damaged at random and torn at their end; and it judges none of the others.
func TestInspectTornIsStreamInspect(t *testing.T) {
	reg := apps.Registry()
	rng := rand.New(rand.NewSource(29))
	judged, passed := 0, 0
	for _, a := range streamApps {
		real := filepath.Join(t.TempDir(), a.rel)
		if err := os.MkdirAll(filepath.Dir(real), 0o755); err != nil {
			t.Fatal(err)
		}
		typ := reg.Profile(a.preset, real)
		healthy := jsonlSamples(t, a.preset, "healthy")
		for range 60 {
			data := healthy[rng.Intn(len(healthy))]
			if rng.Intn(6) > 0 {
				data = tornTail(rng, data)
			}
			if err := os.WriteFile(real, data, 0o644); err != nil {
				t.Fatal(err)
			}
			r := bytes.NewReader(data)
			v, tc, ok, err := format.InspectTorn(typ, real, r, int64(len(data)))
			if err != nil {
				t.Fatal(err)
			}
			if !ok {
				passed++
				continue
			}
			judged++
			want, _, err := format.StreamInspect(real, typ)
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(v, want) {
				t.Fatalf("%s: InspectTorn %+v, StreamInspect %+v\ninput %q", a.preset, v, want, data)
			}
			plan, cut, err := format.PlanTornCut(typ, real, r, int64(len(data)), v.Offset)
			if err != nil || !cut || !reflect.DeepEqual(plan, tc) {
				t.Fatalf("%s: InspectTorn's cut %+v, PlanTornCut's %+v (%v, %v)", a.preset, tc, plan, cut, err)
			}
		}
	}
	t.Logf("%d files judged with their cut, %d left to the usual judge", judged, passed)
	if judged < 100 || passed < 50 {
		t.Fatalf("%d judged, %d left: the damage does not exercise both", judged, passed)
	}
}

// TestHealTornJudgedOnce: a big app log torn at its end is judged and its cut planned in one
// pass, and healed as when judged and planned in two: the same report, bytes and quarantine.
func TestHealTornJudgedOnce(t *testing.T) {
	rng := rand.New(rand.NewSource(31))
	once := 0
	for _, a := range streamApps {
		healthy := jsonlSamples(t, a.preset, "healthy")
		for range 8 {
			data := tornTail(rng, healthy[rng.Intn(len(healthy))])
			fused := false
			r1, f1, q1, _ := healAppTweak(t, a.preset, a.rel, data, nil, 1, Options{}, func(e *Engine) { e.holdThreshold, e.twoPassTorn = 1, true })
			r2, f2, q2, _ := healAppTweak(t, a.preset, a.rel, data, nil, 1, Options{}, func(e *Engine) {
				e.holdThreshold = 1
				e.onStep = func(name, _ string) { fused = fused || name == "torn-cut-judged" }
			})
			r1.Quarantine, r2.Quarantine, r1.Wrote, r2.Wrote, r1.Path, r2.Path = "", "", nil, nil, "", ""
			if !equalReports(r1, r2) || !bytes.Equal(f1, f2) || !bytes.Equal(q1, q2) {
				t.Fatalf("%s:\ntwo passes %+v\none pass   %+v\ninput %q", a.preset, r1, r2, data)
			}
			if fused {
				once++
			}
		}
	}
	t.Logf("%d of %d heals judged and planned in one pass", once, 8*len(streamApps))
	if once < 10 {
		t.Fatalf("only %d heals judged and planned in one pass", once)
	}
}

// TestBigFrontMatchesInMemory: what is judged before any record — a byte order mark, NULs
// only — is judged so in a big app log judged streaming too, and healed as the same bytes
// held whole are (normalize: the mark dropped, every record kept).
func TestBigFrontMatchesInMemory(t *testing.T) {
	normalized := 0
	for _, a := range streamApps {
		healthy := jsonlSamples(t, a.preset, "healthy")
		for _, data := range [][]byte{append(bytes.Clone(format.BOM), healthy[0]...), make([]byte, 3000)} {
			r1, f1, q1, _ := healAppTweak(t, a.preset, a.rel, data, nil, 0, Options{}, func(*Engine) {})
			r2, f2, q2, big := healAppTweak(t, a.preset, a.rel, data, nil, 1, Options{}, func(e *Engine) { e.holdThreshold = 1 })
			r1.Quarantine, r2.Quarantine, r1.Wrote, r2.Wrote, r1.Path, r2.Path = "", "", nil, nil, "", ""
			if !equalReports(r1, r2) || !bytes.Equal(f1, f2) || !bytes.Equal(q1, q2) {
				t.Fatalf("%s (streamed: %v):\nin memory %+v\nstreamed  %+v", a.preset, big, r1, r2)
			}
			if r2.Strategy == "normalize" {
				normalized++
			}
		}
	}
	if normalized == 0 {
		t.Fatal("no big app log normalized")
	}
	t.Logf("%d normalized", normalized)
}
