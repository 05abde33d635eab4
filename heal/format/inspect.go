package format

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"slices"

	"github.com/sessionmedic/sessionmedic/heal/fsio"
	"github.com/sessionmedic/sessionmedic/heal/jsonv"
)

// BOM is the UTF-8 byte order mark, which no app writes and every strict reader refuses. It
// is never written.
var BOM = []byte{0xEF, 0xBB, 0xBF}

// AllNUL: b is non-empty and all NUL bytes (a file the kernel extended but never wrote).
func AllNUL(b []byte) bool {
	for _, c := range b {
		if c != 0 {
			return false
		}
	}
	return len(b) > 0
}

// Inspect judges a file's content with its profile's full checklist.
func Inspect(p Profile, f File, data []byte) Verdict {
	if v, done, _ := judgeFront(p, f, data, int64(len(data)), func() (bool, error) { return AllNUL(data), nil }); done {
		return v
	}
	var v Verdict
	if p.JSONL() {
		v = inspectJSONL(p, f, data)
	} else {
		v = inspectJSON(p, f, data)
	}
	if v.Status == Healthy && p.JSONL() && f.LastGood != nil {
		size, n := int64(len(data)), int64(len(f.LastGood))
		if cut, warning, _ := LostWriteOf(p, bytes.NewReader(data), size, bytes.NewReader(f.LastGood), n); cut {
			return LostWrite(size, n)
		} else if warning != "" {
			v.Warnings = append(v.Warnings, warning)
		}
	}
	return v
}

// LostWrite is the verdict on a file of size bytes, sound in its own, that is a strict
// line-aligned prefix of its last-good copy of n bytes (and truncated, its app says).
func LostWrite(size, n int64) Verdict {
	return Damage(KindTruncated, size, "a strict line-aligned prefix of the last-good copy (%d of %d bytes)", size, n)
}

// LostWriteOf judges the size bytes of r, a JSONL file of profile p sound in its own bytes,
// against the n bytes of its last-good copy (lastGood): truncated (a lost write) when they
// are a non-empty strict prefix of the copy that ends on a line boundary, unless p's app
// removes its last records itself and says the copy's tail is such (PrefixJudge: warning
// says why). Both are read a block at a time, neither held.
func LostWriteOf(p Profile, r io.ReaderAt, size int64, lastGood io.ReaderAt, n int64) (truncated bool, warning string, err error) {
	if size == 0 || n <= size {
		return false, "", nil
	}
	var last [1]byte
	if _, err := r.ReadAt(last[:], size-1); err != nil {
		return false, "", err
	}
	if last[0] != '\n' {
		return false, "", nil
	}
	same, err := fsio.SameBytes(r, lastGood, size)
	if errors.Is(err, io.ErrUnexpectedEOF) {
		return false, "", nil // the copy came short: not this copy
	}
	if err != nil || !same {
		return false, "", err
	}
	if j, ok := p.(PrefixJudge); ok {
		if cut, why, err := j.TruncatedTail(io.NewSectionReader(lastGood, size, n-size), n-size); err == nil && !cut {
			return false, why, nil
		}
	}
	return true, "", nil
}

// judgeFront is what is judged of a file of size bytes before any record of it: its
// profile's skip (asked of head, its first bytes or all of them), an empty file, one of NUL
// bytes only (allNUL), one that starts with a byte order mark. done is false when none of
// these decides.
func judgeFront(p Profile, f File, head []byte, size int64, allNUL func() (bool, error)) (v Verdict, done bool, err error) {
	if s, ok := p.(Skipper); ok {
		if reason := s.SkipReason(f.Path, head); reason != "" {
			return Skip("%s", reason), true, nil
		}
	}
	if size == 0 {
		if e, ok := p.(EmptyChecker); ok {
			return e.CheckEmpty(f), true, nil
		}
		if p.EmptyIsDamage() {
			return Damage(KindEmpty, 0, "file is empty"), true, nil
		}
		return OK(), true, nil
	}
	if all, err := allNUL(); err != nil || all {
		return Damage(KindNULFilled, 0, "file is %d NUL bytes", size), true, err
	}
	if bytes.HasPrefix(head, BOM) {
		return Damage(KindBOM, 0, "file starts with a UTF-8 byte order mark"), true, nil
	}
	return Verdict{}, false, nil
}

func inspectJSON(p Profile, f File, data []byte) Verdict {
	if err := jsonv.Valid(data, p.Dialect()); err != nil {
		return SyntaxVerdict(err, 0)
	}
	if p.Plain() {
		return OK() // no checklist reads the tree: valid is all there is to know
	}
	v, _, err := checkDocValid(p, f, data)
	if err != nil {
		return Unjudged("unreadable: %v", err)
	}
	return v
}

// Line is one line of a JSONL file as the checklists see it.
type Line struct {
	Start, End int // bytes of the line including its '\n'
	Raw        []byte
	Val        *jsonv.Value // nil when the line is blank or malformed
	Terminated bool
	Blank      bool
	Err        error
	long       *longInfo // a long line's (SplitAtLong): Raw is its record's skeleton
}

// longInfo is what maps a long line's skeleton back to the file: where its strings were
// cut, and the dialect they are read in.
type longInfo struct {
	cuts jsonv.Cuts
	d    jsonv.Dialect
}

// Long: the line is longer than LineWindow and was not held ([SplitAtLong]): Raw and Val
// are its record's skeleton (nil when it holds none), whose long strings are cut.
func (l *Line) Long() bool { return l.long != nil }

// Off is the offset in the file of offset x of Raw (where a value, member or key of Val
// starts or ends).
func (l *Line) Off(x int) int64 {
	if l.long != nil {
		x = l.long.cuts.Orig(x)
	}
	return int64(l.Start + x)
}

// StrOf is the string v (a string of Val) holds, as the file holds it: v.Str, or decoded from
// the file's bytes where a long line's skeleton cut it (as RawOf reads them).
func (l *Line) StrOf(r io.ReaderAt, v *jsonv.Value) (string, error) {
	if l.long == nil || l.long.cuts.Whole(v.Start, v.End) {
		return v.Str, nil
	}
	b, err := l.RawOf(r, v)
	if err != nil {
		return "", err
	}
	w, err := jsonv.Parse(b, l.long.d)
	if err != nil {
		return "", err
	}
	return w.Str, nil
}

// RawOf is the bytes of v, a value of Val, as the file holds them: from Raw, or read from r
// (the file the line was read from) where a long line's skeleton cut a string of v. A value
// over maxValue bytes is not held: ErrNoStream.
func (l *Line) RawOf(r io.ReaderAt, v *jsonv.Value) ([]byte, error) {
	if l.long == nil || l.long.cuts.Whole(v.Start, v.End) {
		return bytes.Clone(v.Raw(l.Raw)), nil
	}
	start, n := l.Off(v.Start), l.Off(v.End)-l.Off(v.Start)
	if n > int64(maxValue) {
		return nil, fmt.Errorf("%w: a value of %d bytes", ErrNoStream, n)
	}
	b := make([]byte, n)
	if n, err := r.ReadAt(b, start); n < len(b) {
		if err == nil || err == io.EOF {
			err = io.ErrUnexpectedEOF
		}
		return nil, err
	}
	return b, nil
}

// anyObject stands for a valid object record whose contents no checklist reads.
var anyObject = &jsonv.Value{Type: jsonv.Object}

// ErrNotObject: a JSONL line is valid JSON but not an object.
var ErrNotObject = errors.New("record is not a JSON object")

// Split validates every line; the records' trees are parsed only for profiles whose
// checklists read them (a plain profile's records get a placeholder object).
func Split(data []byte, p Profile) []Line { return split(data, p, !p.Plain()) }

// split is Split, parsing the records' trees only when trees is set (else each valid record
// gets a placeholder object): counting records and comparing their bytes need no tree.
func split(data []byte, p Profile, trees bool) []Line {
	d, anyValue := p.Dialect(), rulesOf(p).anyValue
	var out []Line
	jsonv.Lines(data, func(start int, line []byte, terminated bool) bool {
		out = append(out, splitLine(d, anyValue, !trees, start, line, terminated))
		return true
	})
	return out
}

// splitLine is one line of Split: line (its '\n' not in it) at start.
func splitLine(d jsonv.Dialect, anyValue, plain bool, start int, line []byte, terminated bool) Line {
	l := Line{Start: start, End: start + len(line), Raw: line, Terminated: terminated}
	if terminated {
		l.End++
	}
	body := bytes.TrimSuffix(line, []byte("\r"))
	trimmed := bytes.TrimSpace(body)
	switch {
	case len(trimmed) == 0:
		l.Blank = true
	case jsonv.Valid(body, d) != nil:
		l.Err = jsonv.Valid(body, d)
	case trimmed[0] != '{' && !anyValue:
		l.Err = ErrNotObject
	case plain, trimmed[0] != '{':
		l.Val = anyObject
	default:
		if v, err := jsonv.Parse(body, d); err != nil {
			l.Err = err
		} else {
			l.Val = v
		}
	}
	return l
}

func inspectJSONL(p Profile, f File, data []byte) Verdict {
	if _, ok := p.(SequenceChecker); ok {
		if _, ok := p.(RecordChecker); ok {
			// The checklist runs record by record whatever the size: the same pass as a
			// streamed file's.
			return judgeRecords(p, f.Path, func(fn lineFunc) error { return memWalker(data)(0, int64(len(data)), false, fn) })
		}
	}
	if p.Plain() {
		// Syntax is all there is to check: judged in place, on several CPUs when large.
		// (A walk of bytes in memory neither reads nor holds: it has no error to return.)
		if v, err := plainLines(int64(len(data)), rulesOf(p), func(int) walker { return memWalker(data) }); err == nil {
			return v
		}
	}
	lines := Split(data, p)
	for i, l := range lines {
		if l.Blank {
			continue
		}
		if l.Err != nil {
			if !l.Terminated {
				return Damage(KindTruncated, int64(l.Start), "torn last line %d: %v", i+1, l.Err)
			}
			if e, ok := l.Err.(*jsonv.Error); ok && e.Kind == jsonv.ErrInvalidUTF8 {
				return Damage(KindInvalidUTF8, int64(l.Start)+e.Offset, "line %d: %s", i+1, e.Msg)
			}
			return Damage(KindMalformedRecord, int64(l.Start), "line %d: %v", i+1, l.Err)
		}
		if !l.Terminated && !rulesOf(p).openLast {
			return Damage(KindTruncated, int64(len(data)), "last line %d has no terminating newline", i+1)
		}
	}
	if p.Plain() {
		return OK()
	}
	return p.CheckLines(f, lines)
}

// IsLinePrefix: data is a non-empty strict prefix of full that ends on a line boundary.
func IsLinePrefix(data, full []byte) bool {
	return len(data) > 0 && len(data) < len(full) && data[len(data)-1] == '\n' && bytes.HasPrefix(full, data)
}

// Records counts the history a file holds, for choosing between plans and measuring loss:
// a JSONL file's valid records, a JSON document's count by its profile (0 when it is not a
// valid object).
func Records(p Profile, data []byte) int {
	if p.JSONL() {
		n := 0
		for _, l := range split(data, p, false) {
			if l.Val != nil {
				n++
			}
		}
		return n
	}
	if jsonv.Valid(data, p.Dialect()) != nil {
		return 0
	}
	if p.Plain() {
		if data = bytes.TrimSpace(data); len(data) > 0 && data[0] == '{' {
			return 1
		}
		return 0
	}
	_, n, _ := checkDocValid(p, File{}, data)
	return n
}

// RecordsAt is Records of the JSONL file r holds (size bytes), read streaming: a line
// longer than the line window is judged through it, never held.
func RecordsAt(p Profile, r io.ReaderAt, size int64) (int, error) {
	n := 0
	lj := &longJudge{r: rulesOf(p), window: lineWindow}
	err := readWalker(r, size, min(StreamBuf, lineWindow), MaxLine, lj)(0, size, false,
		func(_ int64, line []byte, _ bool, long *longLine) error {
			if long != nil && long.record || long == nil && ValidRecord(p, line) {
				n++
			}
			return nil
		})
	return n, err
}

// ValidRecord: a line (without its '\n') that Split gives a value: a valid object record.
func ValidRecord(p Profile, line []byte) bool { return ValidRecordKeys(p, line, nil) }

// ValidRecordKeys is ValidRecord that, with keys, also gives the offsets in the line of the
// keys of the record's members (jsonv.ValidTop), as a record's judge does (judgeLineKeys).
func ValidRecordKeys(p Profile, line []byte, keys *[]int32) bool {
	body := bytes.TrimSuffix(line, []byte("\r"))
	trimmed := bytes.TrimSpace(body)
	if len(trimmed) == 0 || trimmed[0] != '{' && !rulesOf(p).anyValue {
		return false
	}
	if keys != nil {
		return jsonv.ValidTop(body, p.Dialect(), keys) == nil
	}
	return jsonv.Valid(body, p.Dialect()) == nil
}

// ParseLine is the Line Split gives of one line of p's (line without its '\n', at start).
func ParseLine(p Profile, start int, line []byte, terminated bool) Line {
	return splitLine(p.Dialect(), rulesOf(p).anyValue, p.Plain(), start, line, terminated)
}

// backBlock is the block EachLineBack reads at a time.
var backBlock = 64 << 10

// EachLineBack calls fn with the lines of r's size bytes, as EachLine gives them, last first:
// read backward a block at a time, one line held at a time (line is fn's only until it
// returns). Stop ends the walk without an error; a line over MaxLine is ErrNoStream. A walk
// that stops at the last lines reads only them.
func EachLineBack(r io.ReaderAt, size int64, fn func(start int64, line []byte, terminated bool) error) error {
	return eachLineBack(r, size, MaxLine, func(start, _ int64, line []byte, terminated, _ bool) error {
		return fn(start, line, terminated)
	})
}

// eachLineBack is EachLineBack of the lines up to window bytes long: a longer one is given
// as long, its bytes [start, body) neither read nor held (body: where its '\n' or the end
// is), or is ErrNoStream when window is MaxLine.
func eachLineBack(r io.ReaderAt, size, window int64, fn func(start, body int64, line []byte, terminated, long bool) error) error {
	var buf []byte  // r's bytes [off, off+len(buf))
	var off int64   // where buf starts
	var held []byte // a line longer than a block, read whole
	load := func(end int64) error {
		n := min(int64(backBlock), end)
		if cap(buf) < int(n) {
			buf = make([]byte, n)
		}
		buf, off = buf[:n], end-n
		_, err := r.ReadAt(buf, off)
		if err == io.EOF {
			err = nil
		}
		return err
	}
	covers := func(from, to int64) bool { return off <= from && to <= off+int64(len(buf)) && buf != nil }
	for end := size; end > 0; {
		if !covers(end-1, end) {
			if err := load(end); err != nil {
				return err
			}
		}
		terminated := buf[end-1-off] == '\n'
		body := end
		if terminated {
			body--
		}
		// The line starts after the last '\n' before body.
		start, x := int64(0), body
		for x > 0 {
			if !covers(x-1, x) {
				if err := load(x); err != nil {
					return err
				}
			}
			if i := bytes.LastIndexByte(buf[:x-off], '\n'); i >= 0 {
				start = off + int64(i) + 1
				break
			}
			x = off
			if window >= MaxLine && body-x > MaxLine {
				return ErrNoStream
			}
		}
		var line []byte
		long := false
		switch {
		case covers(start, body):
			line = buf[start-off : body-off]
		case body-start > window && window < MaxLine:
			long = true // not held
		case body-start > MaxLine:
			return ErrNoStream
		default:
			held = slices.Grow(held[:0], int(body-start))[:body-start]
			if _, err := r.ReadAt(held, start); err != nil && err != io.EOF {
				return err
			}
			line = held
		}
		if err := fn(start, body, line, terminated, long); err != nil {
			if err == Stop {
				return nil
			}
			return err
		}
		end = start
	}
	return nil
}
