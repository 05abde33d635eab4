package format

import (
	"bufio"
	"crypto/sha256"
	"encoding/hex"
	"io"
	"os"
	"reflect"
	"sort"

	"github.com/sessionmedic/sessionmedic/heal/fsio"
)

// Splice is a repaired file described as bytes of the original and bytes held in memory, in
// order: what a JSONL salvage keeps of a file it never holds whole (the original's record
// lines as ranges of it, the records it rebuilt — split from glued lines, rejoined — as
// bytes). It is an [fsio.Content] of the original, and, with the original at hand, a
// reader of the result (At).
type Splice struct {
	pieces []piece
	size   int64
	// sumState is the sha256 state of the result's first sumAt bytes (ResumeSum), nil when
	// not known.
	sumAt    int64
	sumState []byte
}

// piece is a run of the result: n bytes of the original at off, or data.
type piece struct {
	at   int64 // where it starts in the result
	off  int64 // in the original; -1 for data
	n    int64
	data []byte
}

// Size is the result's length.
func (s *Splice) Size() int64 { return s.size }

// AddRange appends n bytes of the original at off, joining them to the last piece when they
// follow it there.
func (s *Splice) AddRange(off, n int64) {
	if n <= 0 {
		return
	}
	if k := len(s.pieces); k > 0 && s.pieces[k-1].off >= 0 && s.pieces[k-1].off+s.pieces[k-1].n == off {
		s.pieces[k-1].n += n
	} else {
		s.pieces = append(s.pieces, piece{at: s.size, off: off, n: n})
	}
	s.size += n
}

// AddData appends bytes held in memory.
func (s *Splice) AddData(b []byte) {
	if len(b) == 0 {
		return
	}
	if k := len(s.pieces); k > 0 && s.pieces[k-1].off < 0 {
		s.pieces[k-1].data = append(s.pieces[k-1].data, b...)
		s.pieces[k-1].n += int64(len(b))
	} else {
		s.pieces = append(s.pieces, piece{at: s.size, off: -1, n: int64(len(b)), data: append([]byte(nil), b...)})
	}
	s.size += int64(len(b))
}

// addHeld appends bytes held in memory without copying them: b is the splice's from then on
// (the caller never writes it again).
func (s *Splice) addHeld(b []byte) {
	if len(b) == 0 {
		return
	}
	s.pieces = append(s.pieces, piece{at: s.size, off: -1, n: int64(len(b)), data: b})
	s.size += int64(len(b))
}

// Prefix: the result is the original's first Size bytes (a tail cut).
func (s *Splice) Prefix() bool {
	return len(s.pieces) == 0 || len(s.pieces) == 1 && s.pieces[0].off == 0
}

// LinesPrefix says whether salvaged, of size n, is a [Splice.At] reader over damaged that
// keeps damaged's first n bytes only, ending where a line of damaged ends (n is 0 or
// damaged's byte n-1 is '\n'): every line of salvaged is then a whole line of damaged, at
// the same place. A reader it cannot tell so of is not (false).
func LinesPrefix(salvaged, damaged io.ReaderAt, n int64) bool {
	sr, ok := salvaged.(spliceReader)
	if !ok || !sr.s.Prefix() || sr.s.Size() != n || !sameReader(sr.src, damaged) {
		return false
	}
	if n == 0 {
		return true
	}
	var b [1]byte
	k, _ := damaged.ReadAt(b[:], n-1)
	return k == 1 && b[0] == '\n'
}

// sameReader: a and b are the same reader (the same pointer, or equal values of a comparable
// type; a reader of a type not comparable is never the same).
func sameReader(a, b io.ReaderAt) bool {
	ta := reflect.TypeOf(a)
	return ta != nil && ta == reflect.TypeOf(b) && ta.Comparable() && a == b
}

// ResumeSum says the original's first at bytes, which the result starts with, hash to the
// sha256 state st (an AsideHash's, StateBefore): the result's sum goes on from there
// (fsio.ResumedSum). A state of more bytes than the result keeps of the original is not
// taken.
func (s *Splice) ResumeSum(at int64, st []byte) {
	if st != nil && s.KeepsFirst(at) {
		s.sumAt, s.sumState = at, st
	}
}

// SumState is the state ResumeSum gave, and of how many first bytes (fsio.ResumedSum).
func (s *Splice) SumState() (at int64, state []byte) { return s.sumAt, s.sumState }

// WriteFrom writes the result's bytes from offset at on to w, reading the original's ranges
// from src (fsio.ResumedSum).
func (s *Splice) WriteFrom(w io.Writer, src io.ReaderAt, at int64) error {
	_, err := io.CopyBuffer(w, io.NewSectionReader(s.At(src), at, s.size-at), make([]byte, min(max(s.size-at, 1), StreamBuf)))
	return err
}

// FirstKept is how many of the original's first bytes the result starts with.
func (s *Splice) FirstKept() int64 {
	if len(s.pieces) == 0 || s.pieces[0].off != 0 {
		return 0
	}
	return s.pieces[0].n
}

// KeepsFirst: the result starts with the original's first n bytes.
func (s *Splice) KeepsFirst(n int64) bool {
	return n <= 0 || len(s.pieces) > 0 && s.pieces[0].off == 0 && s.pieces[0].n >= n
}

// WriteOut writes the result, reading the original's ranges from src.
func (s *Splice) WriteOut(w io.Writer, src io.ReaderAt) (string, error) {
	h := sha256.New()
	// A buffer of the block's size, or of the result's when it is smaller: a small file's
	// salvage does not zero a megabyte to be written.
	bw := bufio.NewWriterSize(io.MultiWriter(w, h), int(min(StreamBuf, max(s.size, 64))))
	for _, p := range s.pieces {
		var err error
		if p.off < 0 {
			_, err = bw.Write(p.data)
		} else {
			_, err = io.Copy(bw, io.NewSectionReader(src, p.off, p.n))
		}
		if err != nil {
			return "", err
		}
	}
	if err := bw.Flush(); err != nil {
		return "", err
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}

// writeTo writes the result to w, read from src a block at a time (At), without hashing it
// (a search of it).
func (s *Splice) writeTo(w io.Writer, src io.ReaderAt) error { return s.WriteFrom(w, src, 0) }

// CopyOut writes the result to dst, the original's ranges copied from src by the kernel (see
// fsio.FileContent): a salvage of a big file writes its kept records without reading them.
func (s *Splice) CopyOut(dst, src *os.File) error {
	for _, p := range s.pieces {
		var err error
		if p.off < 0 {
			_, err = dst.Write(p.data)
		} else {
			err = fsio.CopyRange(dst, src, p.off, p.n)
		}
		if err != nil {
			return err
		}
	}
	return nil
}

// Bytes is the result, read from src.
func (s *Splice) Bytes(src io.ReaderAt) ([]byte, error) {
	out := make([]byte, s.size)
	_, err := s.At(src).ReadAt(out, 0)
	if err == io.EOF {
		err = nil
	}
	return out, err
}

// At is the result as a reader, the original's ranges read from src.
func (s *Splice) At(src io.ReaderAt) io.ReaderAt { return spliceReader{s, src} }

type spliceReader struct {
	s   *Splice
	src io.ReaderAt
}

func (r spliceReader) ReadAt(b []byte, off int64) (int, error) {
	ps := r.s.pieces
	i := sort.Search(len(ps), func(i int) bool { return ps[i].at+ps[i].n > off })
	n := 0
	for ; i < len(ps) && n < len(b); i++ {
		p := ps[i]
		from := off + int64(n) - p.at
		want := min(int64(len(b)-n), p.n-from)
		if p.off < 0 {
			n += copy(b[n:], p.data[from:from+want])
			continue
		}
		k, err := r.src.ReadAt(b[n:n+int(want)], p.off+from)
		n += k
		if err != nil && !(err == io.EOF && int64(k) == want) {
			if err == io.EOF {
				err = io.ErrUnexpectedEOF // the original is shorter than when it was planned
			}
			return n, err
		}
	}
	if n < len(b) {
		return n, io.EOF
	}
	return n, nil
}

// Through is s made of inner's original: s's ranges are of the bytes inner gives (a rewrite
// of a salvage), the result's of the bytes inner was made from. Nil inner is the original
// itself (s as it is).
func (s *Splice) Through(inner *Splice) *Splice {
	if inner == nil {
		return s
	}
	out := &Splice{}
	for _, p := range s.pieces {
		if p.off < 0 {
			out.AddData(p.data)
			continue
		}
		off, end := p.off, p.off+p.n
		// The first of inner's pieces that ends past off.
		i := sort.Search(len(inner.pieces), func(i int) bool {
			q := inner.pieces[i]
			return q.at+q.n > off
		})
		for ; i < len(inner.pieces) && off < end; i++ {
			q := inner.pieces[i]
			from, to := off-q.at, min(end, q.at+q.n)-q.at
			if q.off < 0 {
				out.AddData(q.data[from:to])
			} else {
				out.AddRange(q.off+from, to-from)
			}
			off = q.at + to
		}
	}
	return out
}
