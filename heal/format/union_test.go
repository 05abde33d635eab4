package format

import (
	"bytes"
	"errors"
	"fmt"
	"math/rand"
	"strings"
	"testing"

	"github.com/sessionmedic/sessionmedic/heal/jsonv"
)

// keyedLog is a JSONL log whose records are keyed by id, its session header ("type":"session")
// by one key for all versions of it.
type keyedLog struct{ plain }

func (keyedLog) Plain() bool { return false }
func (keyedLog) RecordKey(v *jsonv.Value) string {
	id := v.Get("id")
	if id == nil || id.Type != jsonv.String {
		return ""
	}
	if t := v.Get("type"); t != nil && t.Type == jsonv.String && t.Str == "session" {
		return "\x00header"
	}
	return "id:" + id.Str
}

// unionRef is Union as it was written on the salvage held whole, every record's tree at once:
// the reference UnionFrom is held to.
func unionRef(p Profile, lastGood, salvaged []byte) []byte {
	if !p.JSONL() || salvaged == nil {
		return nil
	}
	newer := map[string][]byte{}
	var order []string
	_, keyed := p.(RecordKeyer)
	for _, l := range split(salvaged, p, keyed) {
		if l.Val == nil {
			continue
		}
		k := recordKey(p, l)
		if _, dup := newer[k]; !dup {
			order = append(order, k)
		}
		newer[k] = salvaged[l.Start:l.End]
	}
	var out []byte
	used := map[string]bool{}
	for _, l := range split(lastGood, p, keyed) {
		if l.Val == nil {
			continue
		}
		k := recordKey(p, l)
		if b, ok := newer[k]; ok && strings.HasPrefix(k, "\x00") {
			out = append(out, b...)
		} else {
			out = append(out, lastGood[l.Start:l.End]...)
		}
		used[k] = true
	}
	for _, k := range order {
		if !used[k] {
			out = append(out, newer[k]...)
		}
	}
	return out
}

// unionRec is record i of a keyed log in its version v: the session header (i 0, one key for
// every version), a note without an id (keyed by its bytes), or a message keyed by its id.
func unionRec(i, v int) string {
	if i == 0 {
		return fmt.Sprintf(`{"type":"session","id":"s","v":%d}`, v)
	}
	if i%7 == 0 {
		return fmt.Sprintf(`{"type":"note","text":"n%d"}`, i)
	}
	return fmt.Sprintf(`{"type":"message","id":"m%d","v":%d}`, i, v)
}

// TestUnionFromMatchesWhole: the union planned a salvaged line at a time is the one planned on
// the salvage held whole, for keyed and unkeyed logs, over last-good copies and salvages that
// share, repeat, update and lack records; over its budget it says so.
func TestUnionFromMatchesWhole(t *testing.T) {
	rng := rand.New(rand.NewSource(3))
	rec := unionRec
	gen := func(n int) []byte {
		var b []byte
		for range n {
			i := rng.Intn(12)
			b = append(b, rec(i, rng.Intn(3))...)
			if rng.Intn(9) == 0 {
				b = append(b, "\r"...)
			}
			b = append(b, '\n')
			if rng.Intn(15) == 0 {
				b = append(b, "\n  \nnot json\n"...)
			}
		}
		if rng.Intn(5) == 0 {
			b = bytes.TrimSuffix(b, []byte("\n"))
		}
		return b
	}
	for _, p := range []Profile{keyedLog{plain{jsonl: true}}, plain{jsonl: true}} {
		for range 400 {
			lg, salv := gen(rng.Intn(12)), gen(1+rng.Intn(12))
			want := unionRef(p, lg, salv)
			got, err := UnionFrom(p, lg, bytes.NewReader(salv), int64(len(salv)), 0)
			if err != nil || !bytes.Equal(got, want) || (got == nil) != (want == nil) {
				t.Fatalf("%T: last-good %q, salvage %q:\nunion %q (%v)\nwant  %q", p, lg, salv, got, err, want)
			}
			if u := Union(p, lg, salv); !bytes.Equal(u, want) {
				t.Fatalf("%T: Union %q, want %q", p, u, want)
			}
		}
	}
	if Union(keyedLog{plain{jsonl: true}}, []byte(rec(1, 0)+"\n"), nil) != nil {
		t.Fatal("a union with nothing salvaged")
	}
	// Only the records the copy lacks count against the budget: a salvage of 1,000 records
	// the copy has and two it lacks fits in 200 bytes.
	{
		p := keyedLog{plain{jsonl: true}}
		var lg, salv []byte
		for i := range 1000 {
			lg = append(lg, rec(1+i%6, 0)+"\n"...)
		}
		salv = append(bytes.Clone(lg), rec(8, 1)+"\n"+rec(9, 1)+"\n"...)
		u, err := UnionFrom(p, lg, bytes.NewReader(salv), int64(len(salv)), 200)
		if want := unionRef(p, lg, salv); err != nil || !bytes.Equal(u, want) {
			t.Fatalf("a salvage mostly in the copy: %v, union of %d bytes, want %d", err, len(u), len(want))
		}
	}
	// Over the budget: refused, not cut short.
	p := keyedLog{plain{jsonl: true}}
	salv := []byte(rec(1, 0) + "\n" + rec(2, 0) + "\n" + rec(3, 0) + "\n")
	if _, err := UnionFrom(p, nil, bytes.NewReader(salv), int64(len(salv)), 40); err != ErrUnionTooLarge {
		t.Fatalf("over budget: %v", err)
	}
	if u, err := UnionFrom(p, nil, bytes.NewReader(salv), int64(len(salv)), len(salv)); err != nil || !bytes.Equal(u, salv) {
		t.Fatalf("within budget: %q %v", u, err)
	}
}

// TestUnionCountsMatchHeld: the counts UnionCounts takes from the copy's and the salvage's
// lines are those Records gives of the copy and of UnionFrom's union held whole, and it says
// a union is refused where UnionFrom refuses one; where it says it cannot count exactly
// (an unterminated record, a line over the window), the held bytes are ones it could
// miscount.
func TestUnionCountsMatchHeld(t *testing.T) {
	rng := rand.New(rand.NewSource(5))
	rec := unionRec
	const window = 512 // lines longer take the long lines' way (withWindow)
	long := `{"type":"message","id":"long","text":"` + strings.Repeat("x", window+10) + `"}`
	gen := func(n int) []byte {
		var b []byte
		for range n {
			switch rng.Intn(40) {
			case 0:
				b = append(b, long...)
			case 1:
				b = append(b, "not json"...)
			default:
				b = append(b, rec(rng.Intn(12), rng.Intn(3))...)
			}
			if rng.Intn(9) == 0 {
				b = append(b, "\r"...)
			}
			b = append(b, '\n')
		}
		if rng.Intn(6) == 0 {
			b = bytes.TrimSuffix(b, []byte("\n"))
		}
		return b
	}
	exact, inexact, refused, same, spliced := 0, 0, 0, 0, 0
	withWindow(window, func() {
		for _, p := range []Profile{keyedLog{plain{jsonl: true}}, plain{jsonl: true}} {
			for range 600 {
				lg, salv := gen(rng.Intn(14)), gen(1+rng.Intn(14))
				if rng.Intn(3) == 0 { // a salvage of the copy's own lines, as a lost write leaves
					salv = nil
					for _, l := range bytes.SplitAfter(lg, []byte("\n")) {
						if rng.Intn(3) > 0 && bytes.HasSuffix(l, []byte("\n")) {
							salv = append(salv, l...)
						}
					}
				}
				budget := []int{0, 60, 200, 1 << 20}[rng.Intn(4)]
				uc, err := UnionCounts(p, bytes.NewReader(lg), int64(len(lg)), bytes.NewReader(salv), int64(len(salv)), budget)
				c, u, union, ok := uc.Copy, uc.Union, uc.Made, uc.Exact
				if err != nil {
					t.Fatal(err)
				}
				held, herr := UnionFrom(p, lg, bytes.NewReader(salv), int64(len(salv)), budget)
				if herr != nil && herr != ErrUnionTooLarge {
					t.Fatal(herr)
				}
				// The union said as a splice of the copy is the union held.
				sp, serr := UnionSplice(p, bytes.NewReader(lg), int64(len(lg)), bytes.NewReader(salv), int64(len(salv)), budget)
				switch {
				case errors.Is(serr, ErrHoldCandidate):
					if !bytes.Contains(lg, []byte(`"long"`)) {
						t.Fatalf("%T: copy %q: refused as over the window", p, lg)
					}
				case serr != nil || herr != nil:
					if serr != herr {
						t.Fatalf("%T: copy %q, salvage %q, budget %d: splice %v, UnionFrom %v", p, lg, salv, budget, serr, herr)
					}
				default:
					b, err := sp.Bytes(bytes.NewReader(lg))
					if err != nil || !bytes.Equal(b, held) || sp.Size() != int64(len(held)) {
						t.Fatalf("%T: copy %q, salvage %q: splice %q (%v), UnionFrom %q", p, lg, salv, b, err, held)
					}
					spliced++
				}
				if !ok {
					inexact++
					continue
				}
				exact++
				if want := Records(p, lg); c != want {
					t.Fatalf("%T: copy %q: %d records counted, Records says %d", p, lg, c, want)
				}
				if union != (herr == nil) {
					t.Fatalf("%T: copy %q, salvage %q, budget %d: union %v, UnionFrom %v", p, lg, salv, budget, union, herr)
				}
				if !union {
					refused++
					continue
				}
				if want := Records(p, held); u != want {
					t.Fatalf("%T: copy %q, salvage %q: union of %d records counted, Records of %q says %d", p, lg, salv, u, held, want)
				}
				// Said the same, it is (the other way, it may say no: a version replaced
				// in place by the same bytes).
				if uc.Same {
					same++
					if !bytes.Equal(held, lg) {
						t.Fatalf("%T: copy %q, salvage %q: said the same, union %q", p, lg, salv, held)
					}
				}
			}
		}
	})
	if exact < 300 || inexact < 50 || refused < 20 || same < 20 || spliced < 500 {
		t.Fatalf("cases: %d counted, %d not, %d refused, %d unions the copy, %d spliced", exact, inexact, refused, same, spliced)
	}
}
