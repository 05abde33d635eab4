package format

import (
	"bufio"
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"io"

	"github.com/sessionmedic/sessionmedic/heal/jsonv"
)

// The generic profiles: JSON is one strict RFC 8259 document, JSONLog JSON Lines
// (jsonlines.org: a JSON value per line, of any kind, the last line's '\n' optional), appended
// to. Syntax is all their checklist is.
var (
	JSON    Profile = generic{name: "json"}
	JSONLog Profile = generic{name: "jsonl", jsonl: true}
)

type generic struct {
	name  string
	jsonl bool
}

func (p generic) Name() string                  { return p.name }
func (p generic) JSONL() bool                   { return p.jsonl }
func (generic) Dialect() jsonv.Dialect          { return jsonv.Dialect{} }
func (p generic) EmptyIsDamage() bool           { return !p.jsonl }
func (p generic) AppendOnly() bool              { return p.jsonl }
func (generic) Plain() bool                     { return true }
func (generic) CheckLines(File, []Line) Verdict { return OK() }

// JSONLines: the generic JSONL profile is JSON Lines.
func (p generic) JSONLines() bool { return p.jsonl }

// KeepLines is the JSONL salvage of data: every valid record line byte for byte (a last one
// given its '\n'), but the records p says are kept elsewhere, and the whole records a
// [Splitter] finds on the other lines ([SplitLine]), each on its own line; nil when none is
// left.
func KeepLines(p Profile, path string, data []byte) []byte {
	out, _ := KeepLinesFigures(p, path, data)
	return out
}

// KeepLinesFigures is KeepLines, with what it keeps and loses (see [PlanKeep]).
func KeepLinesFigures(p Profile, path string, data []byte) ([]byte, KeepFigures) {
	r := bytes.NewReader(data)
	s, fig, err := planKeep(p, path, r, int64(len(data)), memWalker(data))
	if err != nil || s == nil {
		return nil, fig
	}
	out, err := s.Bytes(r)
	if err != nil {
		return nil, fig
	}
	return out, fig
}

// ValidLines is the JSONL salvage of an original of Size bytes streamed from it (an
// [fsio.Content]): each valid record line, byte for byte, ended by '\n'.
type ValidLines struct {
	Profile Profile
	Size    int64
}

func (c ValidLines) WriteOut(w io.Writer, src io.ReaderAt) (string, error) {
	h := sha256.New()
	bw := bufio.NewWriterSize(io.MultiWriter(w, h), StreamBuf)
	err := validLines(c.Profile, src, c.Size, func(start, n int64, line []byte, _ bool) error {
		if line != nil {
			if _, err := bw.Write(line); err != nil {
				return err
			}
		} else if _, err := io.Copy(bw, io.NewSectionReader(src, start, n)); err != nil {
			return err // a long line, copied from src
		}
		return bw.WriteByte('\n')
	})
	if err == nil {
		err = bw.Flush()
	}
	if err != nil {
		return "", err
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}

// validLines calls fn with each valid record line of the size bytes of r, the salvage
// ValidLines keeps: its n bytes at start (its '\n' not counted), held (line), or, longer than
// LineWindow, judged from r and never held (line nil).
func validLines(p Profile, r io.ReaderAt, size int64, fn func(start, n int64, line []byte, terminated bool) error) error {
	lj := &longJudge{r: rulesOf(p), window: lineWindow}
	return readWalker(r, size, min(StreamBuf, lineWindow), MaxLine, lj)(0, size, false,
		func(start int64, line []byte, terminated bool, long *longLine) error {
			switch {
			case long != nil && long.record:
				return fn(start, long.n, nil, long.terminated)
			case long == nil && ValidRecord(p, line):
				return fn(start, int64(len(line)), line, terminated)
			}
			return nil
		})
}

// FirstDuplicate is the first line of data (its index in lines) that is byte for byte an
// earlier record line ('\r' aside), or -1.
func FirstDuplicate(lines []Line) int {
	seen := map[string]bool{}
	for i, l := range lines {
		if l.Val == nil {
			continue
		}
		k := string(bytes.TrimRight(l.Raw, "\r"))
		if seen[k] {
			return i
		}
		seen[k] = true
	}
	return -1
}

// ValidLinesSplice is [ValidLines] said as a splice of the original (size bytes of r): each
// valid record line's range, and a '\n' after an unterminated one.
func ValidLinesSplice(p Profile, r io.ReaderAt, size int64) (*Splice, error) {
	sp := &Splice{}
	err := validLines(p, r, size, func(start, n int64, _ []byte, terminated bool) error {
		if terminated {
			sp.AddRange(start, n+1)
		} else {
			sp.AddRange(start, n)
			sp.AddData([]byte{'\n'})
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return sp, nil
}
