package format

import (
	"bytes"
	"crypto/sha256"
	"errors"
	"fmt"
	"math/rand/v2"
	"runtime"
	"slices"
	"strings"
	"testing"

	"github.com/sessionmedic/sessionmedic/heal/jsonv"
)

// splitAll is the lines SplitAtLong (back: SplitBackLong, put back in order) gives of data.
func splitAll(t *testing.T, p Profile, data []byte, back bool) []Line {
	t.Helper()
	var out []Line
	keep := func(l Line) error {
		if !l.Long() {
			l.Raw = bytes.Clone(l.Raw)
		}
		out = append(out, l)
		return nil
	}
	var err error
	if back {
		err = SplitBackLong(p, bytes.NewReader(data), int64(len(data)), nil, keep)
		for i, j := 0, len(out)-1; i < j; i, j = i+1, j-1 {
			out[i], out[j] = out[j], out[i]
		}
	} else {
		err = SplitAtLong(p, bytes.NewReader(data), int64(len(data)), nil, keep)
	}
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// sameLine: a line SplitAtLong gave (long or held) says of the file what Split says of its
// bytes held: the same place, blank, fault and record, each value of the record at the same
// place in the file with the same bytes (RawOf), whatever a skeleton cut.
func sameLine(t *testing.T, data []byte, got, want Line) {
	t.Helper()
	if got.Start != want.Start || got.End != want.End || got.Terminated != want.Terminated || got.Blank != want.Blank ||
		(got.Err == nil) != (want.Err == nil) || (got.Val == nil) != (want.Val == nil) {
		t.Fatalf("line at %d (long %v): got %+v, want %+v", want.Start, got.Long(), got, want)
	}
	if want.Val == nil || want.Val == anyObject {
		return
	}
	var walk func(g, w *jsonv.Value)
	walk = func(g, w *jsonv.Value) {
		if g.Type != w.Type || len(g.Items) != len(w.Items) || len(g.Keys) != len(w.Keys) {
			t.Fatalf("line at %d: value at %d: shape differs", want.Start, w.Start)
		}
		if s, e := got.Off(g.Start), got.Off(g.End); s != int64(want.Start+w.Start) || e != int64(want.Start+w.End) {
			t.Fatalf("line at %d: value at [%d, %d) is at [%d, %d)", want.Start, want.Start+w.Start, want.Start+w.End, s, e)
		}
		raw, err := got.RawOf(bytes.NewReader(data), g)
		if err != nil || !bytes.Equal(raw, w.Raw(want.Raw)) {
			t.Fatalf("line at %d: value at %d: RawOf %.40q, %v", want.Start, w.Start, raw, err)
		}
		for i := range g.Items {
			walk(g.Items[i], w.Items[i])
		}
		for i := range g.Keys {
			if g.Keys[i].Key != w.Keys[i].Key && !got.Long() {
				t.Fatalf("line at %d: key %q, want %q", want.Start, g.Keys[i].Key, w.Keys[i].Key)
			}
			if got.Off(g.Keys[i].KeyStart) != int64(want.Start+w.Keys[i].KeyStart) {
				t.Fatalf("line at %d: key %q misplaced", want.Start, w.Keys[i].Key)
			}
			walk(g.Keys[i].Val, w.Keys[i].Val)
		}
	}
	walk(got.Val, want.Val)
}

// Lines longer than the window are given by SplitAtLong and SplitBackLong, never held, as
// Split gives them held: forward and backward, with every window, with strings long enough
// for the skeleton to cut them.
func TestSplitAtLongIsSplit(t *testing.T) {
	r := rand.New(rand.NewPCG(7, 23))
	long := 0
	defer func() {
		if long < 1000 {
			t.Errorf("%d long lines: the test tries too few", long)
		}
	}()
	for _, p := range []Profile{recChecker{plain{jsonl: true}}, plain{jsonl: true}} {
		for iter := 0; iter < 200; iter++ {
			data := genTail(r)
			if iter%100 == 0 {
				// Strings over SkeletonString, before and among the members read.
				var b bytes.Buffer
				big := strings.Repeat("é\\n", SkeletonString/3+r.IntN(100))
				fmt.Fprintf(&b, "{\"a\":%q,\"big\":\"%s\",\"t\":\"x\",\"n\":[1,\"%s\",{\"k\":2}]}\n", "s", big, big)
				fmt.Fprintf(&b, "{\"big\":\"%s\"}\r\n", big)
				b.Write(data)
				fmt.Fprintf(&b, "{\"b\":\"%s\",\"z\":true}", big)
				data = b.Bytes()
			}
			want := Split(data, p)
			windows := []int{1, 8, 64, 1 << 20}
			if len(data) > SkeletonString {
				windows = windows[2:]
			}
			for _, window := range windows {
				withWindow(window, func() {
					for _, back := range []bool{false, true} {
						got := splitAll(t, p, data, back)
						if len(got) != len(want) {
							t.Fatalf("window %d back %v: %d lines, want %d", window, back, len(got), len(want))
						}
						// EachLineLong: each line's place, and its bytes or, long, its
						// record's skeleton.
						if !back {
							i := 0
							err := EachLineLong(p, bytes.NewReader(data), int64(len(data)), func(start, end int64, line []byte, terminated, long bool) error {
								w := want[i]
								i++
								if start != int64(w.Start) || end != int64(w.End) || terminated != w.Terminated {
									t.Fatalf("EachLineLong: line at %d..%d, want %d..%d", start, end, w.Start, w.End)
								}
								body := bytes.TrimSuffix(w.Raw, []byte("\r"))
								switch {
								case !long && !bytes.Equal(line, w.Raw):
									t.Fatalf("EachLineLong: line %q, want %q", line, w.Raw)
								case long && w.Err == nil && !w.Blank && len(data) < SkeletonString && !bytes.Equal(line, body):
									t.Fatalf("EachLineLong: long line %q, want %q", line, body)
								case long && w.Err != nil && w.Err != ErrNotObject && line != nil:
									t.Fatalf("EachLineLong: a skeleton of a line without a value")
								case long && w.Blank && (line == nil || len(line) > 0):
									t.Fatalf("EachLineLong: a blank line given as %q", line)
								}
								return nil
							})
							if err != nil || i != len(want) {
								t.Fatalf("EachLineLong: %d lines, %v", i, err)
							}
						}
						for i := range got {
							if got[i].Long() {
								long++
								if want[i].End-want[i].Start < window {
									t.Fatalf("window %d: line %d, shorter, given as long", window, i)
								}
							}
							sameLine(t, data, got[i], want[i])
						}
					}
					// EachLineBackLong: EachLineLong's lines, the last first.
					type eachLine struct {
						start, end       int64
						line             string
						nilLine          bool
						terminated, long bool
					}
					var fwd, bwd []eachLine
					collect := func(into *[]eachLine) func(start, end int64, line []byte, terminated, long bool) error {
						return func(start, end int64, line []byte, terminated, long bool) error {
							*into = append(*into, eachLine{start, end, string(line), line == nil, terminated, long})
							return nil
						}
					}
					if err := EachLineLong(p, bytes.NewReader(data), int64(len(data)), collect(&fwd)); err != nil {
						t.Fatal(err)
					}
					if err := EachLineBackLong(p, bytes.NewReader(data), int64(len(data)), collect(&bwd)); err != nil {
						t.Fatal(err)
					}
					slices.Reverse(bwd)
					if !slices.Equal(fwd, bwd) {
						t.Fatalf("window %d: EachLineBackLong %+v\nEachLineLong %+v", window, bwd, fwd)
					}
				})
			}
		}
	}
}

// A long line is never held: SplitAtLong and SplitBackLong of a 48 MiB line allocate what a
// walk's window grows to (LineWindow) and its skeleton, not the line.
func TestSplitAtLongHoldsNoLine(t *testing.T) {
	big := strings.Repeat("x", 48<<20)
	data := []byte(`{"type":"a","ordinal":1}` + "\n" + `{"type":"b","out":"` + big + `","ordinal":2}` + "\n")
	p := recChecker{plain{jsonl: true}}
	for _, back := range []bool{false, true} {
		var ords []int64
		fn := func(l Line) error {
			if o := l.Val.Get("ordinal"); o != nil {
				ords = append(ords, o.Int)
			}
			return nil
		}
		var err error
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		if back {
			err = SplitBackLong(p, bytes.NewReader(data), int64(len(data)), nil, fn)
		} else {
			err = SplitAtLong(p, bytes.NewReader(data), int64(len(data)), nil, fn)
		}
		runtime.ReadMemStats(&after)
		if err != nil || len(ords) != 2 {
			t.Fatalf("back %v: %v, ordinals %v", back, err, ords)
		}
		if d := after.TotalAlloc - before.TotalAlloc; d > 4*LineWindow {
			t.Fatalf("back %v: %d bytes allocated for a line of %d", back, d, len(big))
		}
	}
}

// The daemon's tail state of a log (its sha256 and lines) is the same whether its lines are
// held or, longer than the window, walked from the file.
func TestTailStateLongLines(t *testing.T) {
	r := rand.New(rand.NewPCG(9, 1))
	p := recChecker{plain{jsonl: true}}
	states := 0
	for range 300 {
		data := genTail(r)
		want, err := newTailState(p, bytes.NewReader(data), int64(len(data)))
		if err != nil {
			t.Fatal(err)
		}
		if want != nil {
			states++
			h := sha256.New()
			h.Write(data)
			if exp := stateOf(h, bytes.Count(data, []byte("\n"))); !bytes.Equal(want.sha, exp.sha) || want.lines != exp.lines {
				t.Fatalf("%q: state %+v, want %+v", data, want, exp)
			}
		}
		for _, w := range []int{1, 16, 64} {
			withWindow(w, func() {
				got, err := newTailState(p, bytes.NewReader(data), int64(len(data)))
				if err != nil || (got == nil) != (want == nil) || got != nil && (!bytes.Equal(got.sha, want.sha) || got.lines != want.lines) {
					t.Fatalf("window %d, %q: %+v (%v), want %+v", w, data, got, err, want)
				}
			})
		}
	}
	if states < 50 {
		t.Fatalf("only %d states made", states)
	}
}

// ValidLinesSplice is the salvage ValidLines writes, said as a splice of the original: the
// same bytes, lines long or not.
func TestValidLinesSplice(t *testing.T) {
	r := rand.New(rand.NewPCG(4, 8))
	for _, p := range []Profile{plain{jsonl: true}, recChecker{plain{jsonl: true}}} {
		for range 300 {
			data := genTail(r)
			for _, w := range []int{1, 16, 1 << 20} {
				withWindow(w, func() {
					var want bytes.Buffer
					if _, err := (ValidLines{Profile: p, Size: int64(len(data))}).WriteOut(&want, bytes.NewReader(data)); err != nil {
						t.Fatal(err)
					}
					sp, err := ValidLinesSplice(p, bytes.NewReader(data), int64(len(data)))
					if err != nil {
						t.Fatal(err)
					}
					got, err := sp.Bytes(bytes.NewReader(data))
					if err != nil || !bytes.Equal(got, want.Bytes()) {
						t.Fatalf("window %d, %q: splice %q (%v), want %q", w, data, got, err, want.Bytes())
					}
				})
			}
		}
	}
}

// A value a long line's skeleton cut is read from the file up to maxValue bytes; a longer one
// is not held: ErrNoStream, which sends a rewrite to the planner on held bytes (bounded by
// the operator's memory limit).
func TestRawOfBounded(t *testing.T) {
	big := strings.Repeat("c", SkeletonString+SkeletonString/2) // the skeleton cuts it
	data := []byte(`{"type":"turn_context","payload":{"cwd":"` + big + `"}}` + "\n")
	p := recChecker{plain{jsonl: true}}
	was := maxValue
	defer func() { maxValue = was }()
	withWindow(64, func() {
		for _, limit := range []int{2 * SkeletonString, SkeletonString + 9} {
			maxValue = limit
			n := 0
			err := SplitAtLong(p, bytes.NewReader(data), int64(len(data)), nil, func(l Line) error {
				n++
				cwd := l.Val.Get("payload").Get("cwd")
				if !l.Long() || l.long.cuts.Whole(cwd.Start, cwd.End) {
					t.Fatal("the line is not long, or its cwd not cut")
				}
				raw, err := l.RawOf(bytes.NewReader(data), cwd)
				switch {
				case limit > len(big) && (err != nil || string(raw) != `"`+big+`"`):
					t.Fatalf("limit %d: %d bytes, %v", limit, len(raw), err)
				case limit < len(big) && !errors.Is(err, ErrNoStream):
					t.Fatalf("limit %d: %d bytes read, %v", limit, len(raw), err)
				}
				return nil
			})
			if err != nil || n != 1 {
				t.Fatal(n, err)
			}
		}
	})
}
