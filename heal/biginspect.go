package heal

import (
	"bufio"
	"bytes"
	"errors"
	"io"
	"os"
	"syscall"

	"github.com/sessionmedic/sessionmedic/heal/fsio"
	"github.com/sessionmedic/sessionmedic/heal/jsonv"
	"github.com/sessionmedic/sessionmedic/policy"
)

// Big files (DESIGN §10: memory stays bounded whatever the file's size). A damaged generic JSON
// or JSONL file larger than bigFile is judged, planned and healed from the file itself, never
// held in memory: its salvage is described as the bytes of the original it keeps (a JSON
// document's first value, a JSONL file's valid lines, the bytes after a byte order mark), and
// every step of the heal protocol that needs those bytes — the quarantine copy, the hashes of
// the journal, the temp file, the put-back of an app's late write, the verification — streams
// them from the original's descriptor. The result is byte for byte what the in-memory plan
// would write. Candidates from elsewhere (a backup, the last-good copy, itself bounded by
// last_good.max_file_bytes) stay in memory; the salvage+last-good union is not planned for a
// big file (it would index every record of the file).
const bigFile = 8 << 20

// errNoStream: the file cannot be judged streaming (a record or token over maxLine); the
// caller falls back to reading it whole.
var errNoStream = errors.New("cannot be judged streaming")

// bigAbove is the size above which a file is planned streaming.
func (e *Engine) bigAbove() int64 {
	if e.bigThreshold > 0 {
		return e.bigThreshold
	}
	return bigFile
}

// bigEligible: the types whose whole checklist is the syntax (and, for JSONL, one record per
// line), so a streaming pass judges them exactly as inspectBytes does.
func bigEligible(t fileType) bool { return t == ftJSON || t == ftJSONL }

// openStable opens the regular file at path (not following a final symlink) and checks that
// it is still the version id names.
func openStable(path string, id Identity) (*os.File, error) {
	f, err := os.OpenFile(path, os.O_RDONLY|syscall.O_NOFOLLOW|syscall.O_NONBLOCK|syscall.O_CLOEXEC, 0)
	if err != nil {
		if errors.Is(err, syscall.ELOOP) {
			return nil, fsio.ErrNotRegular
		}
		return nil, err
	}
	fi, err := f.Stat()
	if err != nil || !fi.Mode().IsRegular() || !fsio.IdentityOf(fi).Same(id) {
		f.Close()
		return nil, fsio.ErrChanged
	}
	return f, nil
}

// stillSame reports whether the open file is still the version id names.
func stillSame(f *os.File, id Identity) bool {
	fi, err := f.Stat()
	return err == nil && fsio.IdentityOf(fi).Same(id)
}

// streamVerdict judges bytes [off, size) of f as inspectBytes judges them (without a last-good
// copy) for a big-eligible type. firstEnd is, for JSON, the end of the first complete value
// (relative to off) when the damage is trailing garbage, else -1.
func streamVerdict(f io.ReaderAt, off, size int64, t fileType) (v Verdict, firstEnd int64, err error) {
	n := size - off
	if n == 0 {
		if t.emptyIsDamage() {
			return damaged(KindEmpty, 0, "file is empty"), -1, nil
		}
		return healthy(), -1, nil
	}
	head := make([]byte, min(n, 3))
	if _, err := f.ReadAt(head, off); err != nil {
		return Verdict{}, -1, err
	}
	if head[0] == 0 {
		all, err := allNULAt(f, off, n)
		if err != nil {
			return Verdict{}, -1, err
		}
		if all {
			return damaged(KindNULFilled, 0, "file is %d NUL bytes", n), -1, nil
		}
	}
	if bytes.HasPrefix(head, bom) {
		return damaged(KindBOM, 0, "file starts with a UTF-8 byte order mark"), -1, nil
	}
	sr := io.NewSectionReader(f, off, n)
	if t.jsonl() {
		v := healthy()
		line := 0
		err := eachLine(sr, func(start int64, l []byte, terminated bool) error {
			line++
			body := bytes.TrimSuffix(l, []byte("\r"))
			trimmed := bytes.TrimSpace(body)
			if len(trimmed) == 0 {
				return nil
			}
			lerr := jsonv.Valid(body, t.dialect())
			if lerr == nil && trimmed[0] != '{' {
				lerr = errNotObject
			}
			switch {
			case lerr != nil && !terminated:
				v = damaged(KindTruncated, start, "torn last line %d: %v", line, lerr)
			case lerr != nil:
				if e, ok := lerr.(*jsonv.Error); ok && e.Kind == jsonv.ErrInvalidUTF8 {
					v = damaged(KindInvalidUTF8, start+e.Offset, "line %d: %s", line, e.Msg)
				} else {
					v = damaged(KindMalformedRecord, start, "line %d: %v", line, lerr)
				}
			case !terminated:
				v = damaged(KindTruncated, n, "last line %d has no terminating newline", line)
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
	end, err := jsonv.ValidReader(sr, t.dialect(), streamBuf, maxLine)
	if errors.Is(err, jsonv.ErrTokenTooLong) {
		return Verdict{}, -1, errNoStream
	}
	var je *jsonv.Error
	if err != nil && !errors.As(err, &je) {
		return Verdict{}, -1, err
	}
	if err == nil {
		return healthy(), -1, nil
	}
	if je.Kind == jsonv.ErrTrailing {
		firstEnd = end
	} else {
		firstEnd = -1
	}
	return syntaxVerdict(err, 0), firstEnd, nil
}

var errStop = errors.New("stop")

func allNULAt(f io.ReaderAt, off, n int64) (bool, error) {
	buf := make([]byte, min(n, streamBuf))
	for pos := int64(0); pos < n; {
		k, err := f.ReadAt(buf[:min(int64(len(buf)), n-pos)], off+pos)
		if k > 0 && !allNUL(buf[:k]) {
			return false, nil
		}
		pos += int64(k)
		if err != nil && !(err == io.EOF && pos == n) {
			return false, err
		}
	}
	return true, nil
}

// eachLine calls fn for each line of r as jsonv.Lines does (start is the line's offset; the
// '\n' is not part of line). A line longer than maxLine is errNoStream.
func eachLine(r io.Reader, fn func(start int64, line []byte, terminated bool) error) error {
	br := bufio.NewReaderSize(r, streamBuf)
	var off int64
	var long []byte
	for {
		chunk, err := br.ReadSlice('\n')
		if err == bufio.ErrBufferFull {
			if len(long)+len(chunk) > maxLine {
				return errNoStream
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

// inspectBig judges a big-eligible file over the big size streaming. done is false when the
// caller is to go on with its own reading: the file is small, not there, not regular, over
// max_file_size, cannot be judged streaming, or is healthy and wanted whole (for its last-good
// copy, or for the JSONL checks against that copy).
// wholeLimit is the largest plain JSON or JSONL file read whole: a healthy one needs its
// bytes up to there (JSONL: the line-aligned prefix check against last-good; JSON: its
// last-good copy), and a larger one is judged streaming.
func (e *Engine) wholeLimit(r *policy.Rule, typ fileType) int64 {
	if typ.jsonl() {
		return streamThreshold
	}
	if lg := e.LastGood.MaxFileBytes; r.KeepLastGood && r.Mode != policy.ModeObserve {
		if lg == 0 {
			return planLimit
		}
		return min(lg, planLimit)
	}
	return e.bigAbove()
}

func (e *Engine) inspectBig(t Target, in *inspection) (done bool) {
	st, err := fsio.StatIdentity(t.Path)
	maxSize := t.Rule.Limits.MaxFileSize
	if err != nil || st.Size <= e.bigAbove() || (maxSize > 0 && st.Size > maxSize) {
		return false
	}
	f, err := os.OpenFile(t.Path, os.O_RDONLY|syscall.O_NOFOLLOW|syscall.O_NONBLOCK|syscall.O_CLOEXEC, 0)
	if err != nil {
		return false
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil || !fi.Mode().IsRegular() {
		return false
	}
	id := fsio.IdentityOf(fi)
	if id.Size <= e.bigAbove() || (maxSize > 0 && id.Size > maxSize) {
		return false
	}
	v, firstEnd, err := streamVerdict(f, 0, id.Size, in.ctx.typ)
	if err != nil {
		return false
	}
	if !stillSame(f, id) {
		in.verdict = busy("file changed while it was read")
		return true
	}
	if v.Status == Healthy {
		if in.ctx.typ.jsonl() {
			if id.Size <= streamThreshold {
				return false // read whole: the line-aligned prefix check against last-good
			}
			if !e.oneShot {
				e.inc.rememberFile(t.Path, in.ctx.typ, id)
			}
		} else if lg := e.LastGood.MaxFileBytes; t.Rule.KeepLastGood && t.Rule.Mode != policy.ModeObserve && (lg == 0 || id.Size <= lg) && id.Size <= planLimit {
			return false // read whole for the last-good copy
		}
		in.id, in.verdict, in.incremental = id, v, true // no bytes held
		if appendOnly(in.ctx.typ) {
			e.inc.full.Add(1)
		}
		return true
	}
	if appendOnly(in.ctx.typ) {
		e.inc.full.Add(1)
	}
	e.inc.drop(t.Path)
	in.id, in.verdict, in.big, in.bigEnd = id, v, true, firstEnd
	return true
}

// What a temp file receives (an fsio.Content): bytes in memory, or bytes of the original.
