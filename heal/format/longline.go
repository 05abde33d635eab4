package format

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"unicode"
	"unicode/utf8"

	"github.com/sessionmedic/sessionmedic/heal/jsonv"
)

// Long lines. A JSONL line longer than LineWindow is never held: the walker judges it from
// the file, streaming (judgeLong), exactly as judgeLine judges a line it holds, and hands
// its record checklist a skeleton of it (jsonv.Skeleton: every string over SkeletonString
// bytes cut to its first units). A checklist reads a record's members, never the whole of
// a string that long (a tool's output, an image's base64).
//
// A record over maxSkeleton (16 MiB) of an app that tells what its checks read
// (SkeletonFielder) has the skeleton of that alone (jsonv.FieldsSkeleton: every other
// member's value left empty — a tool's output as thousands of lines, many images). A
// record whose skeleton would be over maxSkeleton (more than 16 MiB of members, numbers and
// strings under SkeletonString) has its strings over SkeletonShort cut instead (as a
// document's long element has: jsonv.WalkCut), still never an id, a type or a time. Only a
// record whose skeleton is over maxSkeleton that way too (16 MiB of members, numbers and
// strings under 64 KiB, of what its app reads) is its own skeleton: the line is read whole,
// up to maxHeldRecord bytes, and the checklist reads it as it reads a line held. Only a
// longer one cannot be judged streaming (ErrNoStream).
const (
	LineWindow     = 8 << 20  // a longer line is judged streaming
	SkeletonString = 1 << 20  // a longer string is cut in a long record's skeleton
	SkeletonShort  = 64 << 10 // ... or a string longer than this, when that skeleton is over maxSkeleton
)

// maxSkeleton, skeletonShort and maxHeldRecord are variables so that tests can lower them
// (never in parallel ones).
var (
	maxSkeleton   = 16 << 20      // a long record whose skeleton would be larger has its strings cut shorter ...
	skeletonShort = SkeletonShort // ... at this many bytes; one whose skeleton is still larger is read whole ...
	maxHeldRecord = MaxLine       // ... up to this many bytes; a longer one cannot be judged
)

// lineWindow is LineWindow, made smaller by tests (never in parallel ones) so that short
// lines take the long lines' way.
var lineWindow = LineWindow

// longJudge is what a walker needs to judge a line longer than window streaming; nil in a
// walker that holds every line (up to MaxLine).
type longJudge struct {
	r      lineRules // the dialect, and what JSON Lines allow
	window int       // LineWindow (smaller in tests)
	skel   bool      // the lines' records are read by a checklist: make their skeletons
	cuts   bool      // ... with where they were cut, also of a record torn of its '\n' (SplitAtLong)
}

// longLine is a line judged streaming: n bytes from its start (its '\n' not counted), and
// what judgeLine would say of it. skel is the skeleton of its record when asked for.
type longLine struct {
	n          int64 // the line's length
	body       int64 // ... without a final '\r'
	terminated bool
	blank      bool
	record     bool // the body is a valid object record (ValidRecord), whether terminated or not
	nul        bool // the line is a run of NUL bytes (NULRun)
	fault      *lineFault
	skel       []byte
	cuts       jsonv.Cuts // where skel's strings were cut (longJudge.cuts)
	verr       error      // the line's JSON error (nil: a valid value)
	first      byte       // its first byte after leading white space
}

// errTooBig: a record too large to judge streaming (its skeleton is over maxSkeleton, and
// the line over maxHeldRecord).
var errTooBig = errors.New("record too large to judge")

// judgeLong judges the line starting at start of r (which ends at end) as judgeLine would,
// reading it through a window of StreamBuf bytes. A number or literal over MaxLine, or a
// record over maxHeldRecord whose skeleton is over maxSkeleton, is ErrNoStream.
func (lj *longJudge) judgeLong(r io.ReaderAt, start, end int64) (*longLine, error) {
	// Where the line ends.
	ll := &longLine{}
	buf := make([]byte, min(int64(StreamBuf), max(end-start, 1), 64<<10))
	pos := start
	for pos < end {
		k, err := r.ReadAt(buf[:min(int64(len(buf)), end-pos)], pos)
		if i := bytes.IndexByte(buf[:k], '\n'); i >= 0 {
			pos += int64(i)
			ll.terminated = true
			break
		}
		pos += int64(k)
		if err == io.EOF || k == 0 {
			break
		}
		if err != nil {
			return nil, err
		}
	}
	ll.n = pos - start
	// The body: without a final '\r'.
	body := ll.n
	if body > 0 {
		if _, err := r.ReadAt(buf[:1], start+body-1); err != nil {
			return nil, err
		}
		if buf[0] == '\r' {
			body--
		}
	}
	ll.body = body
	// Buffers no larger than the line (a small window in tests makes many short long lines).
	bufSize := int(min(int64(StreamBuf), body+1))
	first, err := firstNonSpace(io.NewSectionReader(r, start, body), min(64<<10, bufSize))
	if err != nil {
		return nil, err
	}
	if first < 0 {
		ll.blank = true
		return ll, nil
	}
	if first == 0 {
		if ll.nul, err = AllNULAt(r, start, body); err != nil {
			return nil, err
		}
	}
	_, verr := jsonv.ValidReader(io.NewSectionReader(r, start, body), lj.r.d, bufSize, MaxLine)
	if errors.Is(verr, jsonv.ErrTokenTooLong) {
		return nil, ErrNoStream
	}
	var je *jsonv.Error
	if verr != nil && !errors.As(verr, &je) {
		return nil, verr // a read error
	}
	ll.verr, ll.first = verr, byte(first)
	ll.fault, ll.record = lj.r.judge(start, ll.n, verr, byte(first), ll.terminated)
	if lj.skel && (ll.fault == nil || lj.cuts && verr == nil) {
		if ll.skel, ll.cuts, err = lj.skeleton(r, start, body, bufSize); err != nil {
			return nil, err
		}
	}
	return ll, nil
}

// skeleton is the skeleton of the valid record of body bytes at start of r: its strings over
// SkeletonString cut; where that is over maxSkeleton, its strings over skeletonShort; where
// that is too, the record read whole (heldRecord). A record over maxSkeleton of an app that
// tells what its checks read (SkeletonFielder) has the skeleton of that alone
// (jsonv.FieldsSkeleton), cut the same ways; and each cut's skeleton is measured first
// (FieldsSkeletonSize), so that none is held in vain. cuts: where its strings were cut
// (and, of the app's skeleton, its other values emptied), when the judge keeps them.
func (lj *longJudge) skeleton(r io.ReaderAt, start, body int64, bufSize int) (skel []byte, cuts jsonv.Cuts, err error) {
	reader := func() *bufio.Reader {
		return bufio.NewReaderSize(io.NewSectionReader(r, start, body), min(64<<10, bufSize))
	}
	keep, fields := SkeletonString, (*jsonv.Fields)(nil)
	if body > int64(maxSkeleton) {
		// A skeleton no larger than its record fits; a larger record's may not: each cut's
		// is measured before one is copied, and a record whose skeletons are all too large
		// is read whole without one copied in vain (keep 0). Its app's checks read no more
		// than its fields: every other value is left empty.
		keep, fields = 0, lj.r.fields
		for _, k := range []int{SkeletonString, skeletonShort} {
			_, err := jsonv.FieldsSkeletonSize(reader(), lj.r.d, fields, k, maxSkeleton)
			if err == nil {
				keep = k
				break
			}
			if !errors.Is(err, jsonv.ErrTooLarge) {
				return nil, jsonv.Cuts{}, err
			}
		}
	}
	if keep > 0 {
		if lj.cuts {
			skel, cuts, err = jsonv.FieldsSkeletonCuts(reader(), lj.r.d, fields, keep, maxSkeleton)
		} else {
			skel, err = jsonv.FieldsSkeleton(reader(), lj.r.d, fields, keep, maxSkeleton)
		}
		if !errors.Is(err, jsonv.ErrTooLarge) {
			return skel, cuts, err
		}
	}
	skel, err = heldRecord(r, start, body) // nothing cut: no cuts
	return skel, jsonv.Cuts{}, err
}

// heldRecord is the line of body bytes at start of r read whole, as the skeleton of a record
// whose skeleton would be over maxSkeleton: nothing cut, its checklist reading it as it reads
// a line held. A line over maxHeldRecord is ErrNoStream.
func heldRecord(r io.ReaderAt, start, body int64) ([]byte, error) {
	if body > int64(maxHeldRecord) {
		return nil, fmt.Errorf("%w: %w", ErrNoStream, errTooBig)
	}
	return readLine(r, start, body)
}

// firstNonSpace is the first byte of r after what bytes.TrimSpace trims (-1: none).
func firstNonSpace(r io.Reader, size int) (int, error) {
	buf := make([]byte, max(size, 8))
	var carry []byte
	for {
		k, err := r.Read(buf[len(carry):])
		copy(buf, carry)
		b := buf[:len(carry)+k]
		carry = nil
		for i := 0; i < len(b); {
			c := b[i]
			if c < utf8.RuneSelf {
				if !asciiSpace[c] {
					return int(c), nil
				}
				i++
				continue
			}
			if !utf8.FullRune(b[i:]) && err == nil {
				carry = append([]byte(nil), b[i:]...)
				break
			}
			rn, size := utf8.DecodeRune(b[i:])
			if !unicode.IsSpace(rn) {
				return int(c), nil
			}
			i += size
		}
		if err == io.EOF {
			if len(carry) > 0 {
				return int(carry[0]), nil
			}
			return -1, nil
		}
		if err != nil {
			return 0, err
		}
	}
}

// asciiSpace is bytes.TrimSpace's ASCII set.
var asciiSpace = [256]bool{'\t': true, '\n': true, '\v': true, '\f': true, '\r': true, ' ': true}

// judgeAny is judgeLine of a line held, or what judgeLong found of a long one (body is then
// its record's skeleton, when one was asked for).
func judgeAny(d lineRules, off int64, line []byte, terminated bool, long *longLine) (body []byte, blank bool, f *lineFault) {
	if long != nil {
		return long.skel, long.blank, long.fault
	}
	return judgeLine(d, off, line, terminated)
}

// SetLineWindow makes lines longer than n take the long lines' way until restore is called:
// for the tests of the packages whose strategies read lines (never in parallel ones).
func SetLineWindow(n int) (restore func()) {
	was := lineWindow
	lineWindow = n
	return func() { lineWindow = was }
}

// SetRecordLimits makes a long record whose skeleton would be over skeleton bytes read whole
// as its own skeleton, up to held bytes (a longer one cannot be judged streaming), until
// restore is called: for the tests of the packages whose strategies read lines (never in
// parallel ones).
func SetRecordLimits(skeleton, held int) (restore func()) {
	s, h := maxSkeleton, maxHeldRecord
	maxSkeleton, maxHeldRecord = skeleton, held
	return func() { maxSkeleton, maxHeldRecord = s, h }
}

// SetSkeletonShort makes a long record whose skeleton would be over the bound have its
// strings over n bytes cut, until restore is called: for the tests of the packages whose
// strategies read lines (never in parallel ones).
func SetSkeletonShort(n int) (restore func()) {
	was := skeletonShort
	skeletonShort = n
	return func() { skeletonShort = was }
}
