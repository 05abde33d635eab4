package heal

import (
	"bufio"
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"hash"
	"io"

	"github.com/sessionmedic/sessionmedic/heal/format"
	"github.com/sessionmedic/sessionmedic/heal/fsio"
)

// What the temp file of a big file's heal receives, as bytes of the original, and the
// writers that hash and compare it on the way.

// memContent is content held in memory.
type memContent []byte

// Its hash is not computed ("": the bytes are the plan's own).
func (c memContent) WriteOut(w io.Writer, _ io.ReaderAt) (string, error) {
	_, err := w.Write(c)
	return "", err
}

// rangeContent is the bytes [off, off+n) of the original.
type rangeContent struct{ off, n int64 }

func (c rangeContent) WriteOut(w io.Writer, src io.ReaderAt) (string, error) {
	h := sha256.New()
	n, err := io.CopyBuffer(io.MultiWriter(w, h), io.NewSectionReader(src, c.off, c.n), make([]byte, streamBuf))
	if err != nil {
		return "", err
	}
	if n != c.n {
		return "", io.ErrUnexpectedEOF
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}

// validLines is the JSONL salvage of the original of the given size: each valid record line,
// byte for byte, ended by '\n'.
type validLines struct {
	typ  format.Profile
	size int64
}

func (c validLines) WriteOut(w io.Writer, src io.ReaderAt) (string, error) {
	h := sha256.New()
	bw := bufio.NewWriterSize(io.MultiWriter(w, h), streamBuf)
	err := format.EachLine(io.NewSectionReader(src, 0, c.size), func(_ int64, line []byte, _ bool) error {
		if !format.ValidRecord(c.typ, line) {
			return nil
		}
		if _, err := bw.Write(line); err != nil {
			return err
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

// bigEdit is the part of an edit of a big file that stands for its bytes.
type bigEdit struct {
	src     fsio.Content // the new bytes; data is nil unless src is memContent
	oldSHA  string
	newSHA  string
	newSize int64
	prefix  bool // the new bytes are a prefix of the old: a tail cut
}

func (ed *edit) oldSize() int64 {
	if ed.big != nil {
		return ed.oldID.Size
	}
	return int64(len(ed.old))
}

func (ed *edit) newSHA() string {
	if ed.big != nil {
		return ed.big.newSHA
	}
	return sha(ed.data)
}

func (ed *edit) oldSHA() string {
	if ed.big != nil {
		return ed.big.oldSHA
	}
	return sha(ed.old)
}

func (ed *edit) newSize() int64 {
	if ed.big != nil {
		return ed.big.newSize
	}
	return int64(len(ed.data))
}

// tailCut: the new bytes are the old ones cut short (allowed in place beside a writer).
func (ed *edit) tailCut() bool {
	if ed.big != nil {
		return ed.big.prefix
	}
	return bytes.HasPrefix(ed.old, ed.data)
}

func (ed *edit) content() fsio.Content {
	if ed.big != nil {
		return ed.big.src
	}
	return memContent(ed.data)
}

// survey accumulates, in one pass over the original, what the plans of a big file need: the
// hash of the old bytes, and for each candidate the hash of its bytes (ranges of the old ones)
// or how much of the old bytes it keeps (candidates in memory).
type prefixMatch struct {
	data []byte
	n    int64 // common prefix so far
	done bool
}

func (m *prefixMatch) Write(p []byte) (int, error) {
	if m.done {
		return len(p), nil
	}
	rest := m.data[min(int64(len(m.data)), m.n):]
	k := commonPrefix(p, rest)
	m.n += int64(k)
	if k < len(p) {
		m.done = true
	}
	return len(p), nil
}

// rangeHash hashes the bytes [from, to) of the stream written to it.
type rangeHash struct {
	from, to, pos int64
	h             hash.Hash
}

func newRangeHash(from, to int64) *rangeHash {
	return &rangeHash{from: from, to: to, h: sha256.New()}
}

func (r *rangeHash) Write(p []byte) (int, error) {
	lo, hi := max(r.from-r.pos, 0), min(r.to-r.pos, int64(len(p)))
	if lo < hi {
		r.h.Write(p[lo:hi])
	}
	r.pos += int64(len(p))
	return len(p), nil
}

func (r *rangeHash) sum() string { return hex.EncodeToString(r.h.Sum(nil)) }

// firstNonWS records the first byte after offset from that is not JSON whitespace.
type firstNonWS struct {
	from, pos int64
	c         byte
	found     bool
}

func (f *firstNonWS) Write(p []byte) (int, error) {
	for i := max(f.from-f.pos, 0); !f.found && i < int64(len(p)); i++ {
		if c := p[i]; c != ' ' && c != '\t' && c != '\n' && c != '\r' {
			f.c, f.found = p[i], true
		}
	}
	f.pos += int64(len(p))
	return len(p), nil
}
