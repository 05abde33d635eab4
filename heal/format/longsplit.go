package format

import (
	"bytes"
	"fmt"
	"io"

	"github.com/sessionmedic/sessionmedic/heal/jsonv"
)

// Lines of any length for the strategies that rewrite records (rebuild-header,
// add-ordinals, drop-invalid-entries): a line longer than LineWindow is never held. It is
// judged from the file as the checklist judges it (judgeLong), and given as a Line whose Raw
// and Val are its record's skeleton (a string over SkeletonString cut), with the map back to
// the file's offsets (Line.Off) and the file's own bytes of a value a cut touched
// (Line.RawOf). Every other line is the one Split gives.

// maxValue is the longest value a long line's Line.RawOf reads from the file (MaxLine, as a
// number or literal a walker holds); tests make it smaller.
var maxValue = MaxLine

// SplitAtLong calls fn with each line of r's size bytes as Split gives it, read streaming:
// one line at a time (l.Raw and l.Val are fn's only until it returns), and none longer than
// LineWindow held: such a line is given as its skeleton ([Line.Long]). want, when set, is
// asked of each line's bytes (a long line's skeleton; a long line with none, blank or
// damaged, is given without asking) before it is validated and built. It stops at the first
// error fn returns (Stop: with none).
func SplitAtLong(p Profile, r io.ReaderAt, size int64, want func(line []byte) bool, fn func(l Line) error) error {
	lj := &longJudge{r: rulesOf(p), window: lineWindow, skel: true, cuts: true}
	err := readWalker(r, size, min(StreamBuf, lineWindow), MaxLine, lj)(0, size, false, splitter(p, want, fn))
	if err == Stop {
		err = nil
	}
	return err
}

// SplitBackLong is SplitAtLong of r's lines last first, as [EachLineBack] reads them: Stop
// ends the walk without an error.
func SplitBackLong(p Profile, r io.ReaderAt, size int64, want func(line []byte) bool, fn func(l Line) error) error {
	lj := &longJudge{r: rulesOf(p), window: lineWindow, skel: true, cuts: true}
	split := splitter(p, want, fn)
	err := eachLineBack(r, size, int64(lineWindow), func(start, _ int64, line []byte, terminated, long bool) error {
		if !long {
			return split(start, line, terminated, nil)
		}
		ll, err := lj.judgeLong(r, start, size)
		if err != nil {
			return err
		}
		return split(start, nil, ll.terminated, ll)
	})
	if err == Stop {
		err = nil
	}
	return err
}

// splitter is the walk of SplitAtLong: each line built as Split builds it (a long one from
// its skeleton), given to fn where want wants it.
func splitter(p Profile, want func(line []byte) bool, fn func(l Line) error) lineFunc {
	d, anyValue, plain := p.Dialect(), rulesOf(p).anyValue, p.Plain()
	return func(start int64, line []byte, terminated bool, long *longLine) error {
		if long != nil {
			l := longSplitLine(d, anyValue, plain, start, long)
			if want != nil && l.Raw != nil && !want(l.Raw) {
				return nil
			}
			return fn(l)
		}
		if want != nil && !want(line) {
			return nil
		}
		return fn(splitLine(d, anyValue, plain, int(start), line, terminated))
	}
}

// longSplitLine is splitLine of a line judgeLong judged (with its record's skeleton and
// cuts): what splitLine gives of the line held, its record's tree built from the skeleton.
func longSplitLine(d jsonv.Dialect, anyValue, plain bool, start int64, ll *longLine) Line {
	l := Line{Start: int(start), End: int(start + ll.n), Terminated: ll.terminated, long: &longInfo{cuts: ll.cuts, d: d}}
	if ll.terminated {
		l.End++
	}
	switch {
	case ll.blank:
		l.Blank = true
	case ll.verr != nil:
		l.Err = ll.verr
	case ll.first != '{' && !anyValue:
		l.Err = ErrNotObject
	case plain, ll.first != '{':
		l.Raw, l.Val = ll.skel, anyObject
	default:
		l.Raw = ll.skel
		if v, err := jsonv.Parse(bytes.TrimSuffix(ll.skel, []byte("\r")), d); err != nil {
			l.Err = fmt.Errorf("the skeleton of a long record: %w", err) // not for a valid record
		} else {
			l.Val = v
		}
	}
	return l
}

// giveHeld gives fn a line held, as EachLineLong gives it: end is where the next starts.
func giveHeld(fn func(start, end int64, line []byte, terminated, long bool) error, start int64, line []byte, terminated bool) error {
	end := start + int64(len(line))
	if terminated {
		end++
	}
	return fn(start, end, line, terminated, false)
}

// giveLong gives fn a line judged from the file (ll), as EachLineLong gives it: its record's
// skeleton, empty when it is blank, nil when it holds no value.
func giveLong(fn func(start, end int64, line []byte, terminated, long bool) error, start int64, ll *longLine) error {
	end := start + ll.n
	if ll.terminated {
		end++
	}
	skel := ll.skel
	if ll.blank {
		skel = []byte{}
	}
	return fn(start, end, skel, ll.terminated, true)
}

// EachLineBackLong is [EachLineLong] read from the end: the same lines, the last first, each
// given as EachLineLong gives it — long (its record's skeleton, judged from the file) when it
// fills the window without its '\n', as the forward walk finds it (eachLineBack alone gives a
// line in its block held at any length).
func EachLineBackLong(p Profile, r io.ReaderAt, size int64, fn func(start, end int64, line []byte, terminated, long bool) error) error {
	lj := &longJudge{r: rulesOf(p), window: lineWindow, skel: true, cuts: true}
	w := int64(lineWindow)
	err := eachLineBack(r, size, w, func(start, body int64, line []byte, terminated, long bool) error {
		if n := body - start; n > w || n == w && terminated {
			long = true
		}
		if !long {
			return giveHeld(fn, start, line, terminated)
		}
		ll, err := lj.judgeLong(r, start, size)
		if err != nil {
			return err
		}
		return giveLong(fn, start, ll)
	})
	if err == Stop {
		err = nil
	}
	return err
}

// EachLineLong calls fn with each line of r's size bytes as [EachLineAt] gives them, but a
// line longer than LineWindow, which is never held: it is given as long, line being its
// record's skeleton when it holds a valid value, empty when it is blank, else nil. end is
// where the next line starts. Stop ends the walk without an error.
func EachLineLong(p Profile, r io.ReaderAt, size int64, fn func(start, end int64, line []byte, terminated, long bool) error) error {
	lj := &longJudge{r: rulesOf(p), window: lineWindow, skel: true, cuts: true}
	err := readWalker(r, size, min(StreamBuf, lineWindow), MaxLine, lj)(0, size, false,
		func(start int64, line []byte, terminated bool, ll *longLine) error {
			if ll != nil {
				return giveLong(fn, start, ll)
			}
			return giveHeld(fn, start, line, terminated)
		})
	if err == Stop {
		err = nil
	}
	return err
}

// TrimmedLen is the length of the n bytes of r at start without the '\r's that end them.
func TrimmedLen(r io.ReaderAt, start, n int64) (int64, error) {
	var b [64]byte
	for n > 0 {
		c := min(n, int64(len(b)))
		if k, err := r.ReadAt(b[:c], start+n-c); int64(k) < c {
			if err == nil || err == io.EOF {
				err = io.ErrUnexpectedEOF
			}
			return 0, err
		}
		t := bytes.TrimRight(b[:c], "\r")
		n -= c - int64(len(t))
		if len(t) > 0 {
			break
		}
	}
	return n, nil
}
