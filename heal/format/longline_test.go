package format

import (
	"bytes"
	"errors"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/sessionmedic/sessionmedic/heal/jsonv"
)

// recChecker is a JSONL profile with a record checklist: a record holding "bad" is refused.
type recChecker struct{ plain }

func (recChecker) Plain() bool { return false }
func (recChecker) RecordProblem(rec []byte, _ bool) string {
	if bytes.Contains(rec, []byte(`"bad"`)) {
		return "a bad record"
	}
	return ""
}
func (recChecker) NoRecords() Verdict         { return OK() }
func (recChecker) AppendedOK(rec []byte) bool { return !bytes.Contains(rec, []byte(`"bad"`)) }

// genTail is genLines with some records the checklist refuses.
func genTail(r *rand.Rand) []byte {
	data := genLines(r, 1+r.IntN(20), r.IntN(3) == 0)
	if r.IntN(3) == 0 {
		data = append(data, []byte(`{"bad":"`+strings.Repeat("z", r.IntN(40))+`"}`+"\n")...)
	}
	return data
}

// Lines longer than the window, judged streaming with their records' skeletons, give the
// verdict of a walk that holds them: for the whole file (judgeLines) and for an append
// (AppendedValid).
func TestLongLinesJudgedAsHeld(t *testing.T) {
	r := rand.New(rand.NewPCG(21, 4))
	p := recChecker{plain{jsonl: true}}
	for iter := 0; iter < 300; iter++ {
		data := genTail(r)
		n := int64(len(data))
		want := judgeRecords(p, "", func(fn lineFunc) error { return memWalker(data)(0, n, false, fn) })
		wantApp := len(data) > 0 && AppendedValid(p, data)
		for _, window := range []int{1, 4, 16, 64, 1 << 20} {
			v := judgeLines(p, "", n, false, func(held int, lj *longJudge) walker {
				small := *lj
				small.window = window
				return readWalker(bytes.NewReader(data), n, min(16, window), held, &small)
			})
			if !sameVerdict(v, want) {
				t.Fatalf("window %d, %q:\n got %+v\nwant %+v", window, data, v, want)
			}
			if len(data) > 0 {
				if got := appendedValidAt(p, bytes.NewReader(data), 0, n, window); got != wantApp {
					t.Fatalf("appended, window %d, %q: %v, want %v", window, data, got, wantApp)
				}
				// At an offset, after the bytes already checked.
				pre := []byte(fmt.Sprintf("{\"pre\":%d}\n", iter))
				if got := appendedValidAt(p, bytes.NewReader(append(pre, data...)), int64(len(pre)), n, window); got != wantApp {
					t.Fatalf("appended at %d, window %d, %q: %v, want %v", len(pre), window, data, got, wantApp)
				}
			}
		}
	}
}

// withWindow runs fn with lines longer than window taking the long lines' way.
func withWindow(window int, fn func()) {
	was := lineWindow
	lineWindow = window
	defer func() { lineWindow = was }()
	fn()
}

// Survey and the salvage it measures (ValidLines) agree, lines long or not: the same
// figures, hashes and bytes. A torn long line is counted lost without looking for its whole
// version, so the inputs here end with a complete line.
func TestSurveyLongLines(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 9))
	p := plain{jsonl: true}
	for iter := 0; iter < 200; iter++ {
		data := genLines(r, 1+r.IntN(30), iter%2 == 0)
		if len(data) > 0 && data[len(data)-1] != '\n' {
			data = append(data, '\n')
		}
		if r.IntN(4) == 0 {
			data = append([]byte("\xef\xbb\xbf  \r"), data...) // a BOM and a blank first line
		}
		n := int64(len(data))
		// A candidate holding some of the lines, and lines of its own.
		var cand []byte
		for _, l := range bytes.SplitAfter(data, []byte("\n")) {
			if r.IntN(2) == 0 {
				cand = append(cand, l...)
			} else {
				cand = append(cand, "{\"other\":1}\n"...)
			}
		}
		measure := func() (SurveyResult, SurveyCand, []byte, string) {
			c := &SurveyCand{Data: cand}
			res, err := Survey(bytes.NewReader(data), n, p, SurveyOptions{BOMLess: true}, []*SurveyCand{c})
			if err != nil {
				t.Fatal(err)
			}
			var out bytes.Buffer
			sum, err := (ValidLines{Profile: p, Size: n}).WriteOut(&out, bytes.NewReader(data))
			if err != nil {
				t.Fatal(err)
			}
			c.Data = nil
			return res, *c, out.Bytes(), sum
		}
		wantRes, wantCand, wantOut, wantSum := measure()
		for _, window := range []int{1, 3, 8, 40} {
			withWindow(window, func() {
				res, c, out, sum := measure()
				if res != wantRes || c.Lost != wantCand.Lost || c.LostBytes != wantCand.LostBytes || c.PrefixN != wantCand.PrefixN {
					t.Fatalf("window %d, %q:\n got %+v %+v\nwant %+v %+v", window, data, res, c, wantRes, wantCand)
				}
				if !bytes.Equal(out, wantOut) || sum != wantSum {
					t.Fatalf("window %d, %q: salvage %q, want %q", window, data, out, wantOut)
				}
			})
		}
	}
}

// RecordsAt counts what Records counts, lines long or not: a line over the window is judged
// through it (before, one over MaxLine ended the count with ErrNoStream: a line rewrite of
// a rollout holding one was refused).
func TestRecordsAtLongLines(t *testing.T) {
	r := rand.New(rand.NewPCG(7, 11))
	for _, p := range []Profile{plain{jsonl: true}, seqProfile{plain{jsonl: true}}} {
		for iter := 0; iter < 300; iter++ {
			data := genLines(r, r.IntN(30), iter%2 == 0)
			if r.IntN(3) == 0 {
				data = append(data, "[1]\n  \n\"s\"\n"...) // values that are no object record, a blank line
			}
			want := Records(p, data)
			for _, window := range []int{1, 3, 8, 40, 1 << 20} {
				withWindow(window, func() {
					got, err := RecordsAt(p, bytes.NewReader(data), int64(len(data)))
					if err != nil || got != want {
						t.Fatalf("window %d, %q: %d records (%v), want %d", window, data, got, err, want)
					}
				})
			}
		}
	}
}

// A record longer than MaxLine is counted, not an error.
func TestRecordsAtOverMaxLine(t *testing.T) {
	data := append([]byte(`{"a":1}`+"\n"+`{"s":"`), bytes.Repeat([]byte("x"), MaxLine+2*StreamBuf)...)
	data = append(data, "\"}\n[2]\n"...)
	got, err := RecordsAt(plain{jsonl: true}, bytes.NewReader(data), int64(len(data)))
	if err != nil || got != 2 {
		t.Fatalf("%d records (%v), want 2", got, err)
	}
}

// A long record whose skeleton would be over maxSkeleton is read whole, as its own
// skeleton, and judged as a line held (before, it could not be judged streaming: its file
// was planned held whole). One over maxHeldRecord as well still cannot (ErrNoStream).
func TestLongRecordsOverTheSkeletonBound(t *testing.T) {
	r := rand.New(rand.NewPCG(23, 5))
	p := recChecker{plain{jsonl: true}}
	defer func(s, h int) { maxSkeleton, maxHeldRecord = s, h }(maxSkeleton, maxHeldRecord)
	held := 0
	for iter := 0; iter < 300; iter++ {
		data := genTail(r)
		n := int64(len(data))
		want := judgeRecords(p, "", func(fn lineFunc) error { return memWalker(data)(0, n, false, fn) })
		for _, window := range []int{1, 4, 16} {
			judge := func() (v Verdict, err error) {
				return judgeLines(p, "", n, false, func(h int, lj *longJudge) walker {
					small := *lj
					small.window = window
					return readWalker(bytes.NewReader(data), n, min(16, window), h, &small)
				}), nil
			}
			maxSkeleton, maxHeldRecord = 2, MaxLine
			v, _ := judge()
			if !sameVerdict(v, want) {
				t.Fatalf("skeletons over the bound, window %d, %q:\n got %+v\nwant %+v", window, data, v, want)
			}
			// Lines over the window whose record the checklist reads, each too large for a
			// skeleton and held: at least one per input that has one.
			for _, l := range bytes.Split(data, []byte("\n")) {
				if len(l) > window && len(bytes.TrimSpace(l)) > 2 && l[0] == '{' {
					held++
					break
				}
			}
		}
	}
	if held < 100 {
		t.Fatalf("only %d inputs had a long record held", held)
	}
	// Over maxHeldRecord too: not judged streaming.
	maxSkeleton, maxHeldRecord = 2, 8
	lj := &longJudge{r: rulesOf(p), window: 4, skel: true}
	line := []byte(`{"a":[1,2,3],"b":{"c":"d"}}` + "\n")
	if _, err := lj.judgeLong(bytes.NewReader(line), 0, int64(len(line))); !errors.Is(err, ErrNoStream) {
		t.Fatalf("a record over maxHeldRecord: %v, want ErrNoStream", err)
	}
	maxHeldRecord = MaxLine
	ll, err := lj.judgeLong(bytes.NewReader(line), 0, int64(len(line)))
	if err != nil || string(ll.skel) != string(line[:len(line)-1]) || !ll.cuts.Whole(0, len(ll.skel)) {
		t.Fatalf("a record held as its skeleton: %q %v, %v", ll.skel, ll.cuts, err)
	}
}

// A long record whose skeleton would be over maxSkeleton has its strings over skeletonShort
// cut instead, and is read whole only where that skeleton is over the bound too: a record
// of many strings each under SkeletonString (many images in one message) is no longer held
// whole. With and without the cuts noted; a record whose skeleton fits at the first cut
// keeps it.
func TestLongRecordsCutShorterOverTheSkeletonBound(t *testing.T) {
	defer func(s, k, h int) { maxSkeleton, skeletonShort, maxHeldRecord = s, k, h }(maxSkeleton, skeletonShort, maxHeldRecord)
	r := rand.New(rand.NewPCG(29, 3))
	var short, held, first, pruned int
	fields := &jsonv.Fields{Members: map[string]*jsonv.Fields{"type": nil, "id": nil, "n": {Members: map[string]*jsonv.Fields{"a": {Items: &jsonv.Fields{}}}}}}
	for iter := 0; iter < 400; iter++ {
		// A record of a few members, some strings long, some escaped, one nested.
		var b strings.Builder
		b.WriteString(`{"type":"user","id":"u1"`)
		for k := range 1 + r.IntN(8) {
			fmt.Fprintf(&b, `,"m%d":"%s\u00e9%s"`, k, strings.Repeat("x", r.IntN(300)), strings.Repeat(`\"`, r.IntN(20)))
		}
		fmt.Fprintf(&b, `,"n":{"a":[1,"%s",{"b":null}]}}`, strings.Repeat("y", r.IntN(200)))
		line := []byte(b.String())
		maxSkeleton, skeletonShort, maxHeldRecord = 64+r.IntN(1200), 16+r.IntN(100), MaxLine
		for _, keepCuts := range []bool{false, true} {
			var p Profile = recChecker{plain{jsonl: true}}
			fielder := iter%2 == 1 // an app that tells what its checks read
			if fielder {
				p = fieldChecker{recChecker{plain{jsonl: true}}, fields}
			}
			lj := &longJudge{r: rulesOf(p), window: 4, skel: true, cuts: keepCuts}
			file := append(bytes.Clone(line), '\n')
			ll, err := lj.judgeLong(bytes.NewReader(file), 0, int64(len(file)))
			if err != nil || ll.fault != nil {
				t.Fatalf("%q: %v %+v", line, err, ll.fault)
			}
			// A record over the bound of an app that tells: the skeleton of what it reads.
			var f *jsonv.Fields
			if fielder && len(line) > maxSkeleton {
				f = fields
			}
			longSk, longCuts, err1 := jsonv.FieldsSkeletonCuts(bytes.NewReader(line), jsonv.Dialect{}, f, SkeletonString, maxSkeleton)
			shortSk, shortCuts, err2 := jsonv.FieldsSkeletonCuts(bytes.NewReader(line), jsonv.Dialect{}, f, skeletonShort, maxSkeleton)
			var want []byte
			var cuts jsonv.Cuts
			switch {
			case err1 == nil:
				want, cuts = longSk, longCuts
				first++
				if f != nil {
					pruned++
				}
			case err2 == nil:
				want, cuts = shortSk, shortCuts
				short++
				if f != nil {
					pruned++
				}
			case errors.Is(err2, jsonv.ErrTooLarge):
				want, cuts = line, jsonv.Cuts{}
				held++
			default:
				t.Fatal(err1, err2)
			}
			if !bytes.Equal(ll.skel, want) {
				t.Fatalf("bound %d, short cut %d, %q:\n skeleton %q\n     want %q", maxSkeleton, skeletonShort, line, ll.skel, want)
			}
			if !keepCuts {
				continue
			}
			// The cuts map every offset of the skeleton back as the cut that made it does.
			for off := 0; off <= len(want); off++ {
				if ll.cuts.Orig(off) != cuts.Orig(off) {
					t.Fatalf("%q: offset %d maps to %d, want %d", line, off, ll.cuts.Orig(off), cuts.Orig(off))
				}
			}
		}
	}
	if short < 100 || held < 100 || first < 100 || pruned < 50 {
		t.Fatalf("%d cut shorter, %d held, %d at the first cut, %d on what the checks read: a way too rare", short, held, first, pruned)
	}
}

// fieldChecker is a recChecker that tells what its checks read (SkeletonFielder).
type fieldChecker struct {
	recChecker
	fields *jsonv.Fields
}

func (c fieldChecker) SkeletonFields() *jsonv.Fields { return c.fields }
