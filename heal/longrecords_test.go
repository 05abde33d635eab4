package heal

import (
	"bytes"
	"fmt"
	"math/rand"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/sessionmedic/sessionmedic/heal/format"
	"github.com/sessionmedic/sessionmedic/heal/jsonv"
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
	eachLongSample(t, rng, 4, func(preset, rel string, orig []byte) {
		data := damageLines(rng, orig, 1+rng.Intn(2))
		r1, f1, q1, _ := healApp(t, preset, rel, data, nil, 1)
		restore := format.SetRecordLimits(8, format.MaxLine) // every long record's skeleton over it
		r2, f2, q2, big := healApp(t, preset, rel, data, nil, 1)
		restore()
		if healedAlike(t, preset, "skeletons", "held", r1, r2, f1, f2, q1, q2, big) {
			healed++
		}
	})
	if healed < 10 {
		t.Fatalf("only %d heals", healed)
	}
}

// A transcript whose long records' skeletons are over the bound at the first cut, and under
// it with their longer strings cut shorter (a message of many images each under a megabyte),
// is judged and healed on those shorter skeletons — the same report, file and quarantine as
// on skeletons within the bound — rather than on each such record read whole.
func TestLongRecordsCutShorterHealedAlike(t *testing.T) {
	defer format.SetLineWindow(64)()
	rng := rand.New(rand.NewSource(67))
	tiered, healed := 0, 0
	eachLongSample(t, rng, 5, func(preset, rel string, orig []byte) {
		data := damageLines(rng, padTexts(rng, orig), 1+rng.Intn(2))
		// The bound: the skeleton of a record cut shorter that three in four are within
		// (cut at 100 to 200 bytes, never an id or a time: the samples' are shorter); a
		// longer record within it is cut shorter, one over it read whole.
		cut := 100 + rng.Intn(100)
		var records [][]byte
		var sizes []int
		for _, l := range bytes.Split(data, []byte("\n")) {
			if jsonv.Valid(l, jsonv.Dialect{}) == nil && len(l) > 64 {
				sk, err := jsonv.Skeleton(bytes.NewReader(l), cut, format.MaxLine)
				if err != nil {
					t.Fatal(err)
				}
				records, sizes = append(records, l), append(sizes, len(sk))
			}
		}
		if len(records) == 0 {
			return
		}
		bound := slices.Sorted(slices.Values(sizes))[len(sizes)*3/4]
		for i, l := range records {
			if len(l) > bound && sizes[i] <= bound {
				tiered++
			}
		}
		r1, f1, q1, _ := healAppWith(t, preset, rel, data, nil, 1, 1, Options{}) // judged streaming
		restore, short := format.SetRecordLimits(bound, format.MaxLine), format.SetSkeletonShort(cut)
		r2, f2, q2, big := healAppWith(t, preset, rel, data, nil, 1, 1, Options{})
		short()
		restore()
		if healedAlike(t, fmt.Sprintf("%s, bound %d, cut %d", preset, bound, cut), "within the bound", "cut shorter", r1, r2, f1, f2, q1, q2, big) {
			healed++
		}
	})
	if healed < 10 || tiered < 50 {
		t.Fatalf("only %d heals, %d records cut shorter", healed, tiered)
	}
}

// eachLongSample calls fn with n healthy samples of each streamed app picked at random,
// those of them with a line over 64 bytes.
func eachLongSample(t *testing.T, rng *rand.Rand, n int, fn func(preset, rel string, orig []byte)) {
	for _, a := range streamApps {
		healthy := jsonlSamples(t, a.preset, "healthy")
		for range n {
			if orig := healthy[rng.Intn(len(healthy))]; longest(orig) > 64 {
				fn(a.preset, a.rel, orig)
			}
		}
	}
}

// healedAlike: the heal of one file two ways (how1, how2) gave the same report, bytes and
// quarantine, the second planned from the file when damaged (big); true when it healed.
func healedAlike(t *testing.T, what, how1, how2 string, r1, r2 Report, f1, f2, q1, q2 []byte, big bool) bool {
	t.Helper()
	if r2.Verdict == Damaged && !big {
		t.Fatalf("%s: damaged, not planned from the file", what)
	}
	r1.Quarantine, r2.Quarantine, r1.Wrote, r2.Wrote, r1.Path, r2.Path = "", "", nil, nil, "", ""
	if !equalReports(r1, r2) || !bytes.Equal(f1, f2) || !bytes.Equal(q1, q2) {
		t.Fatalf("%s:\n%s %+v\n%s %+v\nwrote %d and %d bytes, quarantined %d and %d",
			what, how1, r1, how2, r2, len(f1), len(f2), len(q1), len(q2))
	}
	return r2.Action == ActionHealed
}

// padTexts is data with each text or content string lengthened by 120 to 480 bytes of
// words at its start: records that hold long texts, as transcripts do.
func padTexts(rng *rand.Rand, data []byte) []byte {
	var out []byte
	for {
		i := bytes.Index(data, []byte(`"text":"`))
		if j := bytes.Index(data, []byte(`"content":"`)); j >= 0 && (i < 0 || j < i) {
			i = j + len(`"content":"`)
		} else if i >= 0 {
			i += len(`"text":"`)
		}
		if i < 0 {
			return append(out, data...)
		}
		out = append(append(out, data[:i]...), strings.Repeat("lorem ipsum ", 10+rng.Intn(30))...)
		data = data[i:]
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

// A record no streaming reader takes (over the held bound, its skeleton over its own) makes
// a repair that would read it refused, said with the reason, the file left as it was and
// nothing quarantined — at every size: before, a file under 256 MiB was planned on its bytes
// held whole, a larger one refused.
func TestARecordNoStreamingReaderTakesIsRefused(t *testing.T) {
	defer format.SetLineWindow(64)()
	app := streamApps[2] // gemini-cli: its finish reads a long record's skeleton
	healthy := jsonlSamples(t, app.preset, "healthy")
	var orig []byte
	for _, h := range healthy {
		if longest(h) > 200 && bytes.Count(h, []byte("\n")) > 4 {
			orig = h
			break
		}
	}
	if orig == nil {
		t.Fatal("no sample with a long record")
	}
	lines := bytes.SplitAfter(orig, []byte("\n"))
	// Two records glued (the second's line gone into the first's): a salvage splits them.
	i := len(lines) / 2
	data := bytes.Join(append(append(slices.Clone(lines[:i]), bytes.TrimSuffix(lines[i], []byte("\n"))), lines[i+1:]...), nil)
	defer format.SetRecordLimits(8, 100)()
	r, after, q, _ := healApp(t, app.preset, app.rel, data, nil, 1)
	if r.Verdict != Damaged || r.Action != ActionRefused || !strings.Contains(r.Reason, "cannot be read streaming") {
		t.Fatalf("healed %+v, want refused for a line no streaming reader takes", r)
	}
	if !bytes.Equal(after, data) || len(q) > 0 {
		t.Fatalf("the file changed (%d bytes, was %d) or was quarantined (%d bytes)", len(after), len(data), len(q))
	}
}

// A healthy transcript holding a record over the line window whose skeleton is over the
// bound is healthy, judged streaming (the record read whole as its own skeleton): before,
// such a record ended the streamed judge, and the file was called damaged ("line N is
// longer than 67108864 bytes", of a 20 MiB line) — an alert for a file its app loads. A
// record over the bound of a record held as well is not judged: said so, never damaged.
func TestHealthyLongRecordOverTheSkeletonBoundIsHealthy(t *testing.T) {
	defer format.SetRecordLimits(8, format.MaxLine)()
	a := streamApps[0] // claude-code
	lines, i := middleRecord(t, a.preset, `{"parentUuid":`)
	k := bytes.Index(lines[i], []byte(`",`)) + 2
	big := []byte(`"toolUseResult":"` + strings.Repeat("y", format.LineWindow+1<<20) + `",`)
	lines[i] = append(append(bytes.Clone(lines[i][:k]), big...), lines[i][k:]...)
	check := streamedCheck(t, a.preset, a.rel, bytes.Join(lines, nil))
	if r := check(); r.Verdict != Healthy {
		t.Fatalf("%s %s: %s", r.Verdict, r.Kind, r.Detail)
	}
	// Over the bound of a record held too: not judged (said, not guarded), never damaged.
	defer format.SetRecordLimits(8, format.LineWindow)()
	r := check()
	if r.Verdict != Skipped || !r.NotJudged || !strings.Contains(r.Detail, "is not judged streaming") {
		t.Fatalf("a record over both bounds: %s %s: %s (not judged %v)", r.Verdict, r.Kind, r.Detail, r.NotJudged)
	}
}

// A healthy log holding a record over the line window whose whole skeleton is over the bound
// at every cut (9 MiB of short lines in a tool's result), of an app that tells what its
// checks read, is judged streaming and healthy, that record judged from the skeleton of what
// its checks read: the bound of a record read whole is set below it. Of an app that does not
// tell (pi hashes a record's whole bytes), the same record is not judged (said, never
// damaged); so is one whose members the checks read are over the bound too (their keys).
func TestHealthyLongRecordJudgedOnWhatItsAppReads(t *testing.T) {
	defer format.SetRecordLimits(1<<20, 4<<20)()
	lines := make([]string, 0, 320_000)
	for i := range cap(lines) {
		lines = append(lines, fmt.Sprintf(`"+ line %d of the patch"`, i))
	}
	patch := `,"structuredPatch":[{"lines":[` + strings.Join(lines, ",") + `]}]`
	var members strings.Builder // as many members, each kept with its key
	for i, l := range lines {
		fmt.Fprintf(&members, `,"k%d":%s`, i, l)
	}
	for _, c := range []struct {
		app    int    // in streamApps
		prefix string // of the record the bulk goes in
		bulk   string
		judged bool
	}{
		{0, `{"parentUuid":`, patch, true},             // claude-code
		{3, `{"type":"message"`, patch, false},         // pi
		{0, `{"parentUuid":`, members.String(), false}, // what Claude Code's checks read: over the bound too
	} {
		a := streamApps[c.app]
		recs, i := middleRecord(t, a.preset, c.prefix)
		k := bytes.LastIndexByte(recs[i], '}')
		recs[i] = append(append(bytes.Clone(recs[i][:k]), c.bulk...), recs[i][k:]...)
		if len(recs[i]) <= format.LineWindow {
			t.Fatalf("a record of %d bytes: not over the line window", len(recs[i]))
		}
		r := streamedCheck(t, a.preset, a.rel, bytes.Join(recs, nil))()
		switch {
		case c.judged && r.Verdict != Healthy:
			t.Fatalf("%s: %s %s: %s", a.preset, r.Verdict, r.Kind, r.Detail)
		case !c.judged && (r.Verdict != Skipped || !r.NotJudged):
			t.Fatalf("%s: %s %s: %s (not judged %v)", a.preset, r.Verdict, r.Kind, r.Detail, r.NotJudged)
		case !c.judged && c.bulk != patch && !strings.Contains(r.Detail, "members its checks read"):
			t.Fatalf("%s: not judged, said as %q", a.preset, r.Detail)
		}
	}
}

// streamedCheck writes data where the preset's app keeps rel and returns a check of it by a
// fresh engine each time (judged again, not from what an earlier one knows), streaming.
func streamedCheck(t *testing.T, preset, rel string, data []byte) func() Report {
	t.Helper()
	_, root := bigEngineWith(t, 1, Options{})
	p := filepath.Join(root, rel)
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, data, 0o600); err != nil {
		t.Fatal(err)
	}
	return func() Report {
		e, _ := bigEngineWith(t, 1, Options{})
		e.holdThreshold = 1 // judged streaming, never held
		return e.Check(Target{Path: p, Rule: appRule(t, preset, root)})
	}
}

// middleRecord is the lines of the preset's largest healthy sample, and the first from its
// middle on that starts with prefix.
func middleRecord(t *testing.T, preset, prefix string) (lines [][]byte, i int) {
	var data []byte
	for _, d := range jsonlSamples(t, preset, "healthy") {
		if len(d) > len(data) {
			data = d
		}
	}
	lines = bytes.SplitAfter(data, []byte("\n"))
	for i = len(lines) / 2; !bytes.HasPrefix(lines[i], []byte(prefix)); i++ {
	}
	return lines, i
}
