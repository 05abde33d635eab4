package fsio

import (
	"bytes"
	"crypto/sha256"
	"encoding"
	"encoding/hex"
	"hash"
	"io"
)

// What a temp file receives, as bytes in memory or as bytes of the original, and the writers
// that hash and compare a stream of the original's bytes on the way.

// Bytes is content held in memory.
type Bytes []byte

// WriteOut does not compute the hash ("": the bytes are the caller's own).
func (c Bytes) WriteOut(w io.Writer, _ io.ReaderAt) (string, error) {
	_, err := w.Write(c)
	return "", err
}

// Range is the bytes [Off, Off+N) of the original.
type Range struct{ Off, N int64 }

func (c Range) WriteOut(w io.Writer, src io.ReaderAt) (string, error) {
	h := sha256.New()
	n, err := io.CopyBuffer(io.MultiWriter(w, h), io.NewSectionReader(src, c.Off, c.N), make([]byte, bufSize))
	if err != nil {
		return "", err
	}
	if n != c.N {
		return "", io.ErrUnexpectedEOF
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}

// PrefixMatch measures how much of Data the stream written to it starts with: N is the
// common prefix so far.
type PrefixMatch struct {
	Data []byte
	// At, when Data is nil, holds the bytes instead: Size bytes of it, read as they are
	// compared. A read that fails ends the match (Err).
	At   io.ReaderAt
	Size int64
	N    int64 // common prefix so far
	Err  error
	done bool
	buf  []byte
}

func (m *PrefixMatch) Write(p []byte) (int, error) {
	if m.done {
		return len(p), nil
	}
	var rest []byte
	if m.At != nil && m.Data == nil {
		want := min(int64(len(p)), m.Size-m.N)
		if int64(cap(m.buf)) < want {
			m.buf = make([]byte, want)
		}
		rest = m.buf[:want]
		if n, err := m.At.ReadAt(rest, m.N); int64(n) < want {
			if err == nil {
				err = io.ErrUnexpectedEOF
			}
			m.Err, m.done = err, true
			return len(p), nil
		}
	} else {
		rest = m.Data[min(int64(len(m.Data)), m.N):]
	}
	k := CommonPrefix(p, rest)
	m.N += int64(k)
	if k < len(p) {
		m.done = true
	}
	return len(p), nil
}

// CommonPrefix is the length of the longest common prefix of a and b.
func CommonPrefix(a, b []byte) int {
	n := 0
	for n < len(a) && n < len(b) && a[n] == b[n] {
		n++
	}
	return n
}

// RangeHash hashes the bytes [from, to) of the stream written to it.
type RangeHash struct {
	from, to, pos int64
	h             hash.Hash
}

// NewRangeHash hashes the bytes [from, to) of what is written to it.
func NewRangeHash(from, to int64) *RangeHash {
	return &RangeHash{from: from, to: to, h: sha256.New()}
}

func (r *RangeHash) Write(p []byte) (int, error) {
	lo, hi := max(r.from-r.pos, 0), min(r.to-r.pos, int64(len(p)))
	if lo < hi {
		r.h.Write(p[lo:hi])
	}
	r.pos += int64(len(p))
	return len(p), nil
}

// Sum is the hex sha256 of the range.
func (r *RangeHash) Sum() string { return hex.EncodeToString(r.h.Sum(nil)) }

// MarkHash is the sha256 of everything written to it, which also takes the sum of its first
// At bytes on the way (a sum leaves the hash going on): a file's sum and a prefix's, in one
// pass over the bytes instead of two. Before, when set, is written those first At bytes.
type MarkHash struct {
	At     int64
	Before io.Writer
	pos    int64
	h      hash.Hash
	mark   string
}

// NewMarkHash hashes what is written to it, and its first at bytes.
func NewMarkHash(at int64) *MarkHash { return &MarkHash{At: at, h: sha256.New()} }

func (m *MarkHash) Write(p []byte) (int, error) {
	n := len(p)
	if m.mark == "" {
		k := min(m.At-m.pos, int64(len(p)))
		if m.Before != nil {
			m.Before.Write(p[:k])
		}
		m.h.Write(p[:k])
		m.pos += k
		p = p[k:]
		if m.pos == m.At {
			m.mark = hex.EncodeToString(m.h.Sum(nil))
		}
	}
	m.h.Write(p)
	m.pos += int64(len(p))
	return n, nil
}

// Sum is the hex sha256 of all that was written.
func (m *MarkHash) Sum() string { return hex.EncodeToString(m.h.Sum(nil)) }

// State is the state of the sha256 of all that was written (SHA256State), from which a
// hash of those bytes and more goes on (ResumedSum).
func (m *MarkHash) State() ([]byte, error) { return SHA256State(m.h) }

// SHA256State is the state of h, a crypto/sha256 hash, once what was written to it: the
// bytes ResumeSHA256 goes on from.
func SHA256State(h hash.Hash) ([]byte, error) {
	return h.(encoding.BinaryMarshaler).MarshalBinary()
}

// ResumeSHA256 is a sha256 that goes on from state (SHA256State's): as if the bytes hashed
// then had been written to it.
func ResumeSHA256(state []byte) (hash.Hash, error) {
	h := sha256.New()
	if err := h.(encoding.BinaryUnmarshaler).UnmarshalBinary(state); err != nil {
		return nil, err
	}
	return h, nil
}

// MarkSum is the hex sha256 of the first At bytes written ("" while fewer were).
func (m *MarkHash) MarkSum() string {
	if m.mark == "" && m.pos == m.At {
		return m.Sum()
	}
	return m.mark
}

// FirstNonWS records the first byte after offset From that is not JSON whitespace: C, when
// Found.
type FirstNonWS struct {
	From, pos int64
	C         byte
	Found     bool
}

func (f *FirstNonWS) Write(p []byte) (int, error) {
	for i := max(f.From-f.pos, 0); !f.Found && i < int64(len(p)); i++ {
		if c := p[i]; c != ' ' && c != '\t' && c != '\n' && c != '\r' {
			f.C, f.Found = p[i], true
		}
	}
	f.pos += int64(len(p))
	return len(p), nil
}

// ContainsWriter reports (Found) whether Needle occurs in what is written to it. It holds
// no more than twice the needle's length, whatever is written: each write is searched where
// it is, and the needle across writes in the bytes around their boundary.
type ContainsWriter struct {
	Needle []byte
	carry  []byte // the last len(Needle)-1 bytes written
	edge   []byte // scratch: carry and the start of the next write
	Found  bool
}

func (c *ContainsWriter) Write(p []byte) (int, error) {
	if c.Found {
		return len(p), nil
	}
	k := len(c.Needle) - 1
	if k < 0 {
		c.Found = true
		return len(p), nil
	}
	if len(c.carry) > 0 {
		c.edge = append(append(c.edge[:0], c.carry...), p[:min(len(p), k)]...)
		if bytes.Contains(c.edge, c.Needle) {
			c.Found, c.carry = true, nil
			return len(p), nil
		}
	}
	if bytes.Contains(p, c.Needle) {
		c.Found, c.carry = true, nil
		return len(p), nil
	}
	if len(p) >= k {
		c.carry = append(c.carry[:0], p[len(p)-k:]...)
	} else {
		c.carry = append(c.carry, p...)
		c.carry = c.carry[:copy(c.carry, c.carry[max(0, len(c.carry)-k):])]
	}
	return len(p), nil
}

// FileAt is the content of another regular file (a backup), the version id names: opened at
// path when it is written out, never held; a file that changed since is ErrChanged. Part,
// when set, is the part of that file it is (a Range, a splice of it), else the whole file.
type FileAt struct {
	Path string
	ID   Identity
	Part Content
}

func (c FileAt) WriteOut(w io.Writer, _ io.ReaderAt) (string, error) {
	f, err := OpenStable(c.Path, c.ID)
	if err != nil {
		return "", err
	}
	defer f.Close()
	part := c.Part
	if part == nil {
		part = Range{Off: 0, N: c.ID.Size}
	}
	sum, err := part.WriteOut(w, f)
	if err != nil {
		return "", err
	}
	if !StillSame(f, c.ID) {
		return "", ErrChanged
	}
	return sum, nil
}

// SameBytes reports whether the first n bytes of a and b are the same, read a block at a time.
func SameBytes(a, b io.ReaderAt, n int64) (bool, error) {
	const block = 1 << 20
	x, y := make([]byte, min(max(n, 1), block)), make([]byte, min(max(n, 1), block))
	for off := int64(0); off < n; {
		m := min(int64(len(x)), n-off)
		if k, err := a.ReadAt(x[:m], off); int64(k) < m {
			return false, readErr(err)
		}
		if k, err := b.ReadAt(y[:m], off); int64(k) < m {
			return false, readErr(err)
		}
		if !bytes.Equal(x[:m], y[:m]) {
			return false, nil
		}
		off += m
	}
	return true, nil
}

// readErr is the error of a read that came short (io.ErrUnexpectedEOF when it said none).
func readErr(err error) error {
	if err == nil || err == io.EOF {
		return io.ErrUnexpectedEOF
	}
	return err
}
