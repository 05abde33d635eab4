package heal

import (
	"bytes"
	"crypto/sha256"
	"fmt"
	"math/rand"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/sessionmedic/sessionmedic/heal/apps"
	"github.com/sessionmedic/sessionmedic/heal/format"
)

// TestSalvageGoesOnFromTheFront: the salvage of a damaged log walked from its first damaged
// line (format.PlanKeepAfter) is the salvage walked from the start, piece for piece and
// figure for figure, and the judge of its result that goes on from the checklist's state
// there (format.InspectAfter, InspectSumAfter) gives the verdict, warnings and sum of the
// judge from the start, for every app's healthy samples damaged at random; on one CPU, in
// blocks on several CPUs, the pass in blocks going on on one, and with lines longer than the
// line window.
func TestSalvageGoesOnFromTheFront(t *testing.T) {
	t.Run("one CPU", func(t *testing.T) { salvageFromFront(t, 80) })
	t.Run("blocks on several CPUs", func(t *testing.T) {
		defer format.SetParallel(1, 64)()
		salvageFromFront(t, 80)
	})
	t.Run("blocks, then one CPU", func(t *testing.T) {
		defer format.SetParallel(400, 64)()
		salvageFromFront(t, 80)
	})
	// Lines over a window of 96 bytes judged from the file, never held, in blocks and not.
	t.Run("long lines", func(t *testing.T) {
		defer format.SetLineWindow(96)()
		salvageFromFront(t, 25)
		defer format.SetParallel(1, 64)()
		salvageFromFront(t, 25)
	})
}

// salvageFromFront checks n damaged copies of each app's samples (frontDiff).
func salvageFromFront(t *testing.T, n int) {
	reg := apps.Registry()
	rng := rand.New(rand.NewSource(44))
	fronts, resumed := 0, 0
	for _, a := range streamApps {
		healthy := jsonlSamples(t, a.preset, "healthy")
		real := filepath.Join(t.TempDir(), a.rel)
		if err := os.MkdirAll(filepath.Dir(real), 0o755); err != nil {
			t.Fatal(err)
		}
		typ := reg.Profile(a.preset, real)
		for range n {
			data := damageLines(rng, healthy[rng.Intn(len(healthy))], 1+rng.Intn(3))
			if err := os.WriteFile(real, data, 0o644); err != nil {
				t.Fatal(err)
			}
			f, r := frontDiff(t, real, typ, data)
			fronts += f
			resumed += r
		}
	}
	t.Logf("%d fronts, %d results judged from theirs", fronts, resumed)
	if fronts < 5*n || resumed < 4*n {
		t.Fatalf("only %d fronts and %d results judged from theirs: the test no longer tests them", fronts, resumed)
	}
}

// frontDiff checks the file at real (data, of profile typ) planned and judged from its front
// against the same from the start; front and resumed count 1 when it had a front, and when
// its salvage's result started with the bytes before it.
func frontDiff(t *testing.T, real string, typ format.Profile, data []byte) (front, resumed int) {
	t.Helper()
	inspect := func() *format.Front {
		v, _, fr, err := format.StreamInspectFront(real, typ)
		if err != nil {
			t.Fatal(err)
		}
		if fr.End() {
			// A healthy pass's end (kept by the daemon for appends): nothing to plan from.
			if v.Status != format.Healthy || fr.Off() != int64(len(data)) {
				t.Fatalf("%s: an end at %d for the verdict %s %s at %d: %s\ninput %s", typ.Name(), fr.Off(), v.Status, v.Kind, v.Offset, v.Detail, shown(data))
			}
			return nil
		}
		if fr != nil && (v.Status != format.Damaged || fr.Off() < 0 || fr.Off() > 0 && data[fr.Off()-1] != '\n' || v.Offset < fr.Off() ||
			bytes.IndexByte(data[fr.Off():], '\n') >= 0 && v.Offset > fr.Off()+int64(bytes.IndexByte(data[fr.Off():], '\n'))) {
			t.Fatalf("%s: a front at %d for the verdict %s %s at %d: %s\ninput %s", typ.Name(), fr.Off(), v.Status, v.Kind, v.Offset, v.Detail, shown(data))
		}
		return fr
	}
	fr := inspect()
	if fr == nil {
		return 0, 0
	}
	r := bytes.NewReader(data)
	n := int64(len(data))
	want, wantFig, err := format.PlanKeep(typ, real, r, n)
	if err != nil {
		t.Fatal(err)
	}
	got, gotFig, err := format.PlanKeepAfter(fr, typ, real, r, n)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got, want) || gotFig != wantFig {
		t.Fatalf("%s: salvage from the front at %d: %+v %+v, from the start %+v %+v\ninput %s", typ.Name(), fr.Off(), got, gotFig, want, wantFig, shown(data))
	}
	if want == nil {
		return 1, 0
	}
	if want.KeepsFirst(fr.Off()) {
		resumed = 1
	}
	verdict := func(v format.Verdict) string {
		return fmt.Sprintf("%s %s at %d: %s %q", v.Status, v.Kind, v.Offset, v.Detail, strings.Join(v.Warnings, "\n"))
	}
	wantV, err := format.InspectAt(typ, real, want.At(r), want.Size())
	if err != nil {
		t.Fatal(err)
	}
	gotV, err := format.InspectAfter(fr, typ, real, r, want)
	if err != nil {
		t.Fatal(err)
	}
	// A front goes on once: a second judge from it is made from the start.
	again, err := format.InspectAfter(fr, typ, real, r, want)
	if err != nil {
		t.Fatal(err)
	}
	sum := func(v format.Verdict) string {
		if v.Status != format.Healthy {
			return ""
		}
		b, err := want.Bytes(r)
		if err != nil {
			t.Fatal(err)
		}
		return fmt.Sprintf("%x", sha256.Sum256(b))
	}
	sumV, gotSum, err := format.InspectSumAfter(inspect(), typ, real, r, want)
	if err != nil {
		t.Fatal(err)
	}
	for _, g := range []struct {
		how string
		v   format.Verdict
	}{{"from the front", gotV}, {"from a spent front", again}, {"with its sum from the front", sumV}} {
		if verdict(g.v) != verdict(wantV) {
			t.Fatalf("%s: the result judged %s at %d: %s\nfrom the start: %s\ninput %s", typ.Name(), g.how, fr.Off(), verdict(g.v), verdict(wantV), shown(data))
		}
	}
	if gotSum != sum(wantV) {
		t.Fatalf("%s: the result's sum from the front %q, want %q", typ.Name(), gotSum, sum(wantV))
	}
	return 1, resumed
}

// shown is data as a failure shows it: its first and last bytes.
func shown(data []byte) string {
	if len(data) <= 600 {
		return fmt.Sprintf("%q", data)
	}
	return fmt.Sprintf("%q … %q (%d bytes)", data[:300], data[len(data)-300:], len(data))
}
