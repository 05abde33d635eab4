package format

import (
	"bytes"
	"io"

	"github.com/sessionmedic/sessionmedic/heal/jsonv"
)

// The lines of a JSONL file, judged in place: a big file is read in blocks into one reused
// buffer and every complete line of a block is validated where it lies; only the line a
// block's end cuts is carried to the front of the buffer for the next read. A file held in
// memory is walked without a copy.

// lineFunc is called for each line (without its '\n') starting at start; terminated says a
// '\n' ended it. A line longer than its walker's window (longJudge) is not held: line is
// nil and long says what it is. A non-nil error ends the walk and is returned by it.
type lineFunc func(start int64, line []byte, terminated bool, long *longLine) error

// tailStep is how far past a walk's limit its first read there goes: only the end of the
// line the limit cuts is wanted. Each further read doubles it, up to the buffer.
const tailStep = 16 << 10

// lineFault is what is wrong with one line of a JSONL file, its line number aside.
type lineFault struct {
	kind   string
	off    int64
	format string // the line number is its first verb
	arg    any    // nil: none
}

// verdict is the fault of line number n.
func (f *lineFault) verdict(n int) Verdict {
	if f.arg == nil {
		return Damage(f.kind, f.off, f.format, n)
	}
	return Damage(f.kind, f.off, f.format, n, f.arg)
}

// lineRules is what a JSONL profile's reader takes for a line: its JSON dialect, and for JSON
// Lines ([JSONLines]) a record of any JSON value and a last line without its '\n'.
type lineRules struct {
	d        jsonv.Dialect
	anyValue bool          // a record may be any JSON value, not only an object
	openLast bool          // the last line needs no '\n'
	fields   *jsonv.Fields // what the app's checks read of a record (SkeletonFielder); nil: all of it
}

// JSONLines is a JSONL Profile whose lines are JSON Lines (jsonlines.org): each a JSON value
// of any kind, the last one with or without its '\n' (the generic `format: jsonl` rule).
type JSONLines interface {
	JSONLines() bool
}

// rulesOf is the line rules of p.
func rulesOf(p Profile) lineRules {
	r := lineRules{d: p.Dialect()}
	if sf, ok := p.(SkeletonFielder); ok {
		r.fields = sf.SkeletonFields()
	}
	if jl, ok := p.(JSONLines); ok && jl.JSONLines() {
		r.anyValue, r.openLast = true, true
	}
	return r
}

// judgeLine judges a line (without its '\n') of a JSONL file starting at off: blank, a
// record (body is the line without a final '\r'), or a fault. An unterminated line that does
// not hold a record is a torn last line; one that does is whole only where r.openLast.
func judgeLine(r lineRules, off int64, line []byte, terminated bool) (body []byte, blank bool, f *lineFault) {
	return judgeLineKeys(r, off, line, terminated, nil)
}

// judgeLineKeys is judgeLine that, with keys, also gives the offsets in body of the keys of
// a record that is an object (jsonv.ValidTop).
func judgeLineKeys(r lineRules, off int64, line []byte, terminated bool, keys *[]int32) (body []byte, blank bool, f *lineFault) {
	body = line
	if len(body) > 0 && body[len(body)-1] == '\r' {
		body = body[:len(body)-1]
	}
	trimmed := bytes.TrimSpace(body)
	if len(trimmed) == 0 {
		return body, true, nil
	}
	var verr error
	if keys != nil {
		verr = jsonv.ValidTop(body, r.d, keys)
	} else {
		verr = jsonv.Valid(body, r.d)
	}
	f, _ = r.judge(off, int64(len(line)), verr, trimmed[0], terminated)
	return body, false, f
}

// judge is the fault (nil: none) of a line that is not blank, n bytes at off, whose body's
// syntax check gave verr and whose first byte past leading whitespace is first; record says
// the body is a record whatever its ending ([ValidRecord]). judgeLine and judgeLong both
// judge so.
func (r lineRules) judge(off, n int64, verr error, first byte, terminated bool) (f *lineFault, record bool) {
	if verr == nil && first != '{' && !r.anyValue {
		verr = ErrNotObject // as Inspect: an unterminated one is a torn last line
	}
	switch {
	case verr != nil && !terminated:
		return &lineFault{KindTruncated, off, "torn last line %d: %v", verr}, false
	case verr != nil:
		if e, ok := verr.(*jsonv.Error); ok && e.Kind == jsonv.ErrInvalidUTF8 {
			return &lineFault{KindInvalidUTF8, off + e.Offset, "line %d: %s", e.Msg}, false
		}
		return &lineFault{KindMalformedRecord, off, "line %d: %v", verr}, false
	case !terminated && !r.openLast:
		return &lineFault{KindTruncated, off + n, "last line %d has no terminating newline", nil}, true
	}
	return nil, true
}

// walker walks the lines of a range of bytes that start in [from, limit). With skip, from
// is inside a line that started earlier (the byte before a block), which is passed over
// without being held: the walk begins after the first '\n' at or after from. Lines are
// given in place and are valid only during the call.
type walker func(from, limit int64, skip bool, fn lineFunc) error

// memWalker walks data, which it never copies.
func memWalker(data []byte) walker {
	return func(from, limit int64, skip bool, fn lineFunc) error {
		i, lim := int(from), int(min(limit, int64(len(data))))
		if skip {
			k := bytes.IndexByte(data[i:lim], '\n')
			if k < 0 {
				return nil
			}
			i += k + 1
		}
		for i < lim {
			k := bytes.IndexByte(data[i:], '\n')
			if k < 0 {
				return fn(int64(i), data[i:len(data):len(data)], false, nil)
			}
			if err := fn(int64(i), data[i:i+k:i+k], true, nil); err != nil {
				return err
			}
			i += k + 1
		}
		return nil
	}
}

// readWalker walks bytes [0, end) of r through a buffer of block bytes, which it reuses
// from walk to walk. A line longer than the buffer grows it, up to maxHeld bytes: a longer
// line is errHeld when maxHeld < MaxLine, else [ErrNoStream]. A read that ends before end
// (the file shrank) ends the bytes there; any other read error ends the walk.
//
// With lj, a line that fills a buffer of lj.window bytes is not held further: it is judged
// from r streaming (judgeLong) and handed to fn as a *longLine.
func readWalker(r io.ReaderAt, end int64, block, maxHeld int, lj *longJudge) walker {
	buf := make([]byte, min(int64(block), max(end, 1)))
	return func(from, limit int64, skip bool, fn lineFunc) error {
		end := end
		pos := from      // the offset of buf[0]
		have, ls := 0, 0 // bytes in buf; where the current line starts
		seen := 0        // bytes after ls known to hold no '\n'
		step := tailStep
		for {
			for {
				k := bytes.IndexByte(buf[ls+seen:have], '\n')
				if skip {
					if k < 0 {
						break
					}
					ls, seen, skip = ls+seen+k+1, 0, false
					continue
				}
				start := pos + int64(ls)
				if start >= limit {
					return nil
				}
				if k < 0 {
					seen = have - ls
					break
				}
				e := ls + seen + k
				if err := fn(start, buf[ls:e:e], true, nil); err != nil {
					return err
				}
				ls, seen = e+1, 0
			}
			if pos+int64(have) >= end {
				if start := pos + int64(ls); !skip && ls < have && start < limit {
					return fn(start, buf[ls:have:have], false, nil)
				}
				return nil
			}
			if skip {
				// No line of this walk has started yet: nothing is held.
				pos += int64(have)
				have, ls, seen = 0, 0, 0
				if pos >= limit {
					return nil
				}
			} else {
				n := copy(buf, buf[ls:have])
				pos += int64(ls)
				have, ls = n, 0
				if have == len(buf) && lj != nil && have >= lj.window {
					// A long line: judged from the file, never held; the walk goes on after it.
					start := pos
					if start >= limit {
						return nil
					}
					ll, err := lj.judgeLong(r, start, end)
					if err != nil {
						return err
					}
					if err := fn(start, nil, ll.terminated, ll); err != nil {
						return err
					}
					pos, have, ls, seen = start+ll.n+1, 0, 0, 0
					if !ll.terminated || pos >= end || pos >= limit {
						return nil // the next line (if any) is another walk's
					}
				} else if have == len(buf) {
					if have > MaxLine {
						return ErrNoStream
					}
					if maxHeld < MaxLine && have >= maxHeld {
						return errHeld
					}
					size := min(2*len(buf), maxHeld+1, MaxLine+1)
					if lj != nil {
						size = min(size, max(lj.window, len(buf)+1))
					}
					nb := make([]byte, size)
					copy(nb, buf[:have])
					buf = nb
				}
			}
			// Near the limit, only the end of the line it cuts is wanted: a read goes no
			// further than a step past the limit, and the step doubles while that line
			// goes on.
			want := int64(len(buf) - have)
			if reach := limit - pos - int64(have) + int64(step); reach < want {
				want = reach
				if pos+int64(have) >= limit {
					step *= 2
				}
			}
			want = min(want, end-pos-int64(have))
			k, err := r.ReadAt(buf[have:have+int(want)], pos+int64(have))
			have += k
			switch {
			case err == io.EOF && int64(k) < want:
				end = pos + int64(have)
			case err != nil && err != io.EOF:
				return err
			}
		}
	}
}
