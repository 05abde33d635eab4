package heal

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"syscall"

	"github.com/sessionmedic/sessionmedic/heal/fsio"
	"github.com/sessionmedic/sessionmedic/heal/jsonv"
)

// Large append-only logs are validated streaming, so that memory stays bounded whatever the
// file's size: only one line is held at a time. A damaged one is read whole for planning
// only up to planLimit; beyond that the damage is reported and the heal refused.
const (
	streamThreshold = 32 << 20
	planLimit       = 256 << 20
	streamBuf       = 1 << 20
	maxLine         = 64 << 20 // a longer record is reported, not held
)

var errTooLargeToPlan = errors.New("too large to repair in memory")

// streamInspect validates an append-only JSONL file line by line.
func streamInspect(path string, t fileType) (Verdict, Identity, error) {
	f, err := os.OpenFile(path, os.O_RDONLY|syscall.O_NOFOLLOW|syscall.O_NONBLOCK|syscall.O_CLOEXEC, 0)
	if err != nil {
		if errors.Is(err, syscall.ELOOP) {
			err = fsio.ErrNotRegular
		}
		return Verdict{}, Identity{}, err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return Verdict{}, Identity{}, err
	}
	if !fi.Mode().IsRegular() {
		return Verdict{}, Identity{}, fsio.ErrNotRegular
	}
	id := fsio.IdentityOf(fi)
	v := streamLines(bufio.NewReaderSize(io.LimitReader(f, id.Size), streamBuf), t)
	fi2, err := f.Stat()
	if err != nil || !fsio.IdentityOf(fi2).Same(id) {
		return Verdict{}, id, fsio.ErrChanged
	}
	return v, id, nil
}

func streamLines(r *bufio.Reader, t fileType) Verdict {
	d := t.dialect()
	var off int64
	var long []byte // a line longer than the reader's buffer
	n, records := 0, 0
	var schema *Verdict // the first checklist problem; syntax damage anywhere is reported first
	for {
		chunk, err := r.ReadSlice('\n')
		if err == bufio.ErrBufferFull {
			if len(long)+len(chunk) > maxLine {
				return damaged(KindMalformedRecord, off, "line %d is longer than %d bytes", n+1, maxLine)
			}
			long = append(long, chunk...)
			continue
		}
		line := chunk
		if long != nil {
			line = append(long, chunk...)
			long = nil
		}
		if len(line) == 0 && err != nil {
			break
		}
		n++
		terminated := len(line) > 0 && line[len(line)-1] == '\n'
		body := bytes.TrimSuffix(bytes.TrimSuffix(line, []byte("\n")), []byte("\r"))
		if len(bytes.TrimSpace(body)) > 0 {
			verr := jsonv.Valid(body, d)
			if verr == nil && bytes.TrimSpace(body)[0] != '{' {
				verr = errNotObject // as inspectJSONL: an unterminated one is a torn last line
			}
			if verr != nil {
				if !terminated {
					return damaged(KindTruncated, off, "torn last line %d: %v", n, verr)
				}
				if e, ok := verr.(*jsonv.Error); ok && e.Kind == jsonv.ErrInvalidUTF8 {
					return damaged(KindInvalidUTF8, off+e.Offset, "line %d: %s", n, e.Msg)
				}
				return damaged(KindMalformedRecord, off, "line %d: %v", n, verr)
			}
			if !terminated {
				return damaged(KindTruncated, off+int64(len(line)), "last line %d has no terminating newline", n)
			}
			if t == ftOpenClawTranscript && schema == nil {
				if p := transcriptLineProblem(body, records == 0); p != "" {
					v := damaged(KindSchema, off, "line %d: %s", n, p)
					schema = &v
				}
			}
			records++
		}
		off += int64(len(line))
		if err != nil {
			break
		}
	}
	if schema != nil {
		return *schema
	}
	if t == ftOpenClawTranscript && records == 0 {
		return damaged(KindEmpty, 0, "transcript has no header")
	}
	return healthy()
}

// transcriptLineProblem applies the OpenClaw transcript checklist to one record.
func transcriptLineProblem(body []byte, first bool) string {
	v, err := jsonv.Parse(body, jsonv.Dialect{})
	if err != nil {
		return err.Error()
	}
	if first {
		if strOf(v.Get("type")) != "session" || !isStr(v.Get("id")) {
			return "line 1 is not a session header"
		}
		return ""
	}
	if !isStr(v.Get("type")) {
		return "entry has no string type"
	}
	return ""
}

func tooLargeToPlan(size int64) string {
	return fmt.Sprintf("%d bytes: damage in files over %d bytes is reported, not repaired in memory", size, planLimit)
}

// largeVerdict judges a file too large to read whole (over planLimit) that cannot be streamed
// record by record: all NUL bytes is damage (reported, not repaired); anything else is
// skipped with the reason. Memory stays bounded either way.
func largeVerdict(path string) (Verdict, Identity, error) {
	f, err := os.OpenFile(path, os.O_RDONLY|syscall.O_NOFOLLOW|syscall.O_NONBLOCK|syscall.O_CLOEXEC, 0)
	if err != nil {
		return Verdict{}, Identity{}, err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil || !fi.Mode().IsRegular() {
		return Verdict{}, Identity{}, fsio.ErrNotRegular
	}
	id := fsio.IdentityOf(fi)
	buf := make([]byte, streamBuf)
	for {
		n, err := f.Read(buf)
		if !allNUL(buf[:n]) && n > 0 {
			return skipped("%d bytes: a whole JSON document over %d bytes is not validated in memory", id.Size, planLimit), id, nil
		}
		if err == io.EOF || n == 0 {
			break
		}
		if err != nil {
			return Verdict{}, id, err
		}
	}
	return damaged(KindNULFilled, 0, "file is %d NUL bytes", id.Size), id, nil
}
