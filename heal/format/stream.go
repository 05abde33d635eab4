package format

import (
	"bufio"
	"bytes"
	"errors"
	"io"

	"github.com/sessionmedic/sessionmedic/heal/fsio"
	"github.com/sessionmedic/sessionmedic/heal/jsonv"
)

// Streaming validation keeps memory bounded whatever the file's size: only one line (or, for
// a JSON document, one token) is held at a time.
const (
	StreamBuf = 1 << 20  // the reader's buffer
	MaxLine   = 64 << 20 // a longer record is reported, not held
)

// ErrNoStream: the file cannot be judged streaming (a record or token over MaxLine); the
// caller falls back to reading it whole.
var ErrNoStream = errors.New("cannot be judged streaming")

// errStop ends an EachLine walk early.
var errStop = errors.New("stop")

// StreamInspect validates an append-only JSONL file line by line (see [StreamLines]).
func StreamInspect(path string, p Profile) (Verdict, fsio.Identity, error) {
	f, id, err := fsio.OpenRegular(path)
	if err != nil {
		return Verdict{}, fsio.Identity{}, err
	}
	defer f.Close()
	v := streamLines(bufio.NewReaderSize(io.LimitReader(f, id.Size), StreamBuf), p, path)
	fi2, err := f.Stat()
	if err != nil || !fsio.IdentityOf(fi2).Same(id) {
		return Verdict{}, id, fsio.ErrChanged
	}
	return v, id, nil
}

// StreamLines judges a JSONL file read from r as [Inspect] does (without a last-good copy),
// applying a [RecordChecker]'s checklist record by record. A read error ends the file there.
func StreamLines(r *bufio.Reader, p Profile) Verdict { return streamLines(r, p, "") }

// streamLines is StreamLines of the file at path.
func streamLines(r *bufio.Reader, p Profile, path string) Verdict {
	d := p.Dialect()
	rc, _ := p.(RecordChecker)
	var seq Sequence
	if sc, ok := p.(SequenceChecker); ok {
		seq = sc.NewSequence(path)
	}
	var next int64 // where the next line starts
	var last int64 // where the last record starts
	n, records := 0, 0
	var schema *Verdict // the first checklist problem; syntax damage anywhere is reported first
	var stop Verdict    // the damage that ended the walk
	err := EachLine(r, func(off int64, line []byte, terminated bool) error {
		n++
		next = off + int64(len(line))
		if terminated {
			next++
		}
		body := bytes.TrimSuffix(line, []byte("\r"))
		if len(bytes.TrimSpace(body)) == 0 {
			return nil
		}
		verr := jsonv.Valid(body, d)
		if verr == nil && bytes.TrimSpace(body)[0] != '{' {
			verr = ErrNotObject // as Inspect: an unterminated one is a torn last line
		}
		switch {
		case verr != nil && !terminated:
			stop = Damage(KindTruncated, off, "torn last line %d: %v", n, verr)
		case verr != nil:
			if e, ok := verr.(*jsonv.Error); ok && e.Kind == jsonv.ErrInvalidUTF8 {
				stop = Damage(KindInvalidUTF8, off+e.Offset, "line %d: %s", n, e.Msg)
			} else {
				stop = Damage(KindMalformedRecord, off, "line %d: %v", n, verr)
			}
		case !terminated:
			stop = Damage(KindTruncated, off+int64(len(line)), "last line %d has no terminating newline", n)
		default:
			if rc != nil && schema == nil {
				if prob := rc.RecordProblem(body, records == 0); prob != "" {
					v := Damage(KindSchema, off, "line %d: %s", n, prob)
					schema = &v
				}
			}
			if seq != nil && schema == nil {
				if prob := seq.Record(body); prob != "" {
					v := Damage(KindSchema, off, "line %d: %s", n, prob)
					schema = &v
				}
			}
			records, last = records+1, off
			return nil
		}
		return errStop
	})
	switch {
	case err == errStop:
		return stop
	case errors.Is(err, ErrNoStream):
		return Damage(KindMalformedRecord, next, "line %d is longer than %d bytes", n+1, MaxLine)
	}
	if schema != nil {
		return *schema
	}
	if rc != nil && records == 0 {
		return rc.NoRecords()
	}
	if seq != nil {
		if prob := seq.End(); prob != "" {
			return Damage(KindSchema, last, "%s", prob)
		}
	}
	return OK()
}

// StreamVerdict judges bytes [off, size) of f as [Inspect] judges them (without a last-good
// copy) for a plain profile. firstEnd is, for JSON, the end of the first complete value
// (relative to off) when the damage is trailing garbage, else -1.
func StreamVerdict(f io.ReaderAt, off, size int64, p Profile) (v Verdict, firstEnd int64, err error) {
	n := size - off
	if n == 0 {
		if p.EmptyIsDamage() {
			return Damage(KindEmpty, 0, "file is empty"), -1, nil
		}
		return OK(), -1, nil
	}
	head := make([]byte, min(n, 3))
	if _, err := f.ReadAt(head, off); err != nil {
		return Verdict{}, -1, err
	}
	if head[0] == 0 {
		all, err := AllNULAt(f, off, n)
		if err != nil {
			return Verdict{}, -1, err
		}
		if all {
			return Damage(KindNULFilled, 0, "file is %d NUL bytes", n), -1, nil
		}
	}
	if bytes.HasPrefix(head, BOM) {
		return Damage(KindBOM, 0, "file starts with a UTF-8 byte order mark"), -1, nil
	}
	sr := io.NewSectionReader(f, off, n)
	if p.JSONL() {
		v := OK()
		line := 0
		err := EachLine(sr, func(start int64, l []byte, terminated bool) error {
			line++
			body := bytes.TrimSuffix(l, []byte("\r"))
			trimmed := bytes.TrimSpace(body)
			if len(trimmed) == 0 {
				return nil
			}
			lerr := jsonv.Valid(body, p.Dialect())
			if lerr == nil && trimmed[0] != '{' {
				lerr = ErrNotObject
			}
			switch {
			case lerr != nil && !terminated:
				v = Damage(KindTruncated, start, "torn last line %d: %v", line, lerr)
			case lerr != nil:
				if e, ok := lerr.(*jsonv.Error); ok && e.Kind == jsonv.ErrInvalidUTF8 {
					v = Damage(KindInvalidUTF8, start+e.Offset, "line %d: %s", line, e.Msg)
				} else {
					v = Damage(KindMalformedRecord, start, "line %d: %v", line, lerr)
				}
			case !terminated:
				v = Damage(KindTruncated, n, "last line %d has no terminating newline", line)
			default:
				return nil
			}
			return errStop
		})
		if err != nil && err != errStop {
			return Verdict{}, -1, err
		}
		return v, -1, nil
	}
	end, err := jsonv.ValidReader(sr, p.Dialect(), StreamBuf, MaxLine)
	if errors.Is(err, jsonv.ErrTokenTooLong) {
		return Verdict{}, -1, ErrNoStream
	}
	var je *jsonv.Error
	if err != nil && !errors.As(err, &je) {
		return Verdict{}, -1, err
	}
	if err == nil {
		return OK(), -1, nil
	}
	if je.Kind == jsonv.ErrTrailing {
		firstEnd = end
	} else {
		firstEnd = -1
	}
	return SyntaxVerdict(err, 0), firstEnd, nil
}

// AllNULAt reports whether the n bytes of f at off are all NUL.
func AllNULAt(f io.ReaderAt, off, n int64) (bool, error) {
	buf := make([]byte, min(n, StreamBuf))
	for pos := int64(0); pos < n; {
		k, err := f.ReadAt(buf[:min(int64(len(buf)), n-pos)], off+pos)
		if k > 0 && !AllNUL(buf[:k]) {
			return false, nil
		}
		pos += int64(k)
		if err != nil && !(err == io.EOF && pos == n) {
			return false, err
		}
	}
	return true, nil
}

// EachLine calls fn for each line of r as jsonv.Lines does (start is the line's offset; the
// '\n' is not part of line). A line longer than MaxLine is ErrNoStream. r is read through a
// buffer of StreamBuf bytes, or its own when it is a *bufio.Reader.
func EachLine(r io.Reader, fn func(start int64, line []byte, terminated bool) error) error {
	br, ok := r.(*bufio.Reader)
	if !ok {
		br = bufio.NewReaderSize(r, StreamBuf)
	}
	var off int64
	var long []byte
	for {
		chunk, err := br.ReadSlice('\n')
		if err == bufio.ErrBufferFull {
			if len(long)+len(chunk) > MaxLine {
				return ErrNoStream
			}
			long = append(long, chunk...)
			continue
		}
		line := chunk
		if long != nil {
			line = append(long, chunk...)
			long = nil
		}
		if len(line) > 0 {
			terminated := line[len(line)-1] == '\n'
			body := line
			if terminated {
				body = line[:len(line)-1]
			}
			if ferr := fn(off, body, terminated); ferr != nil {
				return ferr
			}
			off += int64(len(line))
		}
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return err
		}
	}
}

// AppendedValid: every line of tail, appended to a file of an append-only profile after its
// first record, is a complete record the profile's checklist accepts.
func AppendedValid(p Profile, tail []byte) bool {
	if tail[len(tail)-1] != '\n' {
		return false
	}
	rc, _ := p.(RecordChecker)
	ok := true
	jsonv.Lines(tail, func(_ int, line []byte, _ bool) bool {
		body := bytes.TrimSuffix(line, []byte("\r"))
		if len(bytes.TrimSpace(body)) == 0 {
			return true
		}
		if jsonv.Valid(body, p.Dialect()) != nil || bytes.TrimSpace(body)[0] != '{' {
			ok = false
			return false
		}
		if rc != nil && !rc.AppendedOK(body) {
			ok = false
			return false
		}
		return true
	})
	return ok
}
