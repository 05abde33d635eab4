package fsio

import (
	"bufio"
	"crypto/sha256"
	"encoding/hex"
	"io"
	"os"

	"github.com/sessionmedic/sessionmedic/internal/panics"
)

// Copies made by the kernel. A heal writes most of a big file as ranges of its original (the
// quarantine's copy, a salvage's kept records, a tail cut's prefix): read into user space,
// hashed and written back, each range costs two copies of its bytes and a SHA-256 pass. A
// FileContent written into a file is copied by the kernel instead (copy_file_range: one copy
// inside the page cache, or none where the file system shares extents — a reflink on XFS,
// Btrfs, bcachefs) and computes no hash: its caller knows the sha256 of the bytes from the
// plan, and what keeps them that version is the identity check that brackets every write
// (the original is re-checked before the copy is used, as it is for a streamed write).

// FileContent is a Content that can also write itself straight into a file.
type FileContent interface {
	Content
	// CopyOut writes the content to dst at its offset, the original's ranges copied from src
	// by the kernel where it can. It computes no hash.
	CopyOut(dst, src *os.File) error
}

// CopyRange copies n bytes of src at off to dst at dst's offset: by the kernel where it can,
// else through a buffer. A src shorter than off+n is io.ErrUnexpectedEOF.
func CopyRange(dst, src *os.File, off, n int64) error {
	done, err := kernelCopy(dst, src, off, n)
	if err != nil || done == n {
		return err
	}
	k, err := io.CopyBuffer(onlyWriter{dst}, io.NewSectionReader(src, off+done, n-done), make([]byte, min(bufSize, n-done)))
	if err == nil && k != n-done {
		err = io.ErrUnexpectedEOF
	}
	return err
}

// onlyWriter hides dst's ReadFrom (which would try the kernel copy again from a reader it
// cannot use, then copy through its own buffer).
type onlyWriter struct{ w io.Writer }

func (o onlyWriter) Write(p []byte) (int, error) { return o.w.Write(p) }

// CopyOut writes the range by the kernel's copy.
func (c Range) CopyOut(dst, src *os.File) error { return CopyRange(dst, src, c.Off, c.N) }

// CopyOut writes the bytes.
func (c Bytes) CopyOut(dst, _ *os.File) error {
	_, err := dst.Write(c)
	return err
}

// CopyOut copies the other file by the kernel's copy; a file that changed since is
// ErrChanged.
func (c FileAt) CopyOut(dst, _ *os.File) error {
	f, err := OpenStable(c.Path, c.ID)
	if err != nil {
		return err
	}
	defer f.Close()
	if err := CopyRange(dst, f, 0, c.ID.Size); err != nil {
		return err
	}
	if !StillSame(f, c.ID) {
		return ErrChanged
	}
	return nil
}

// writeContent writes c to f, reading the original from src: by the kernel's copy when
// kernel lets it and both allow it (sum is then ""), else through a buffer (when buffered)
// with the sha256 WriteOut gives.
func writeContent(f *os.File, c Content, src io.ReaderAt, kernel, buffered bool) (sum string, err error) {
	if fc, ok := c.(FileContent); ok && kernel {
		if of, ok := src.(*os.File); ok && of != nil {
			return "", fc.CopyOut(f, of)
		}
	}
	if !buffered {
		return c.WriteOut(f, src)
	}
	w := bufio.NewWriterSize(f, bufSize)
	if sum, err = c.WriteOut(w, src); err == nil {
		err = w.Flush()
	}
	return sum, err
}

// kernelWrites: writeContent writes c from src by the kernel's copy, and takes no sum.
func kernelWrites(c Content, src io.ReaderAt) bool {
	_, fc := c.(FileContent)
	of, file := src.(*os.File)
	return fc && file && of != nil
}

// ResumedSum is a Content whose first bytes are known to hash to a sha256 state (those of
// the original it starts with, hashed as the plan read it): its sum goes on from that state,
// reading only the bytes after them.
type ResumedSum interface {
	Content
	// SumState is the state of the sha256 of the content's first at bytes (nil: none known).
	SumState() (at int64, state []byte)
	// WriteFrom writes the content's bytes from offset at on to w, reading the original
	// from src.
	WriteFrom(w io.Writer, src io.ReaderAt, at int64) error
}

// ContentSum is the sha256 of c as it is written from src, read and hashed without being
// written anywhere (for a ResumedSum, from its known state on).
func ContentSum(c Content, src io.ReaderAt) (string, error) {
	if rs, ok := c.(ResumedSum); ok {
		if at, st := rs.SumState(); st != nil {
			h, err := ResumeSHA256(st)
			if err != nil {
				return "", err
			}
			if err := rs.WriteFrom(h, src, at); err != nil {
				return "", err
			}
			return hex.EncodeToString(h.Sum(nil)), nil
		}
	}
	sum, err := c.WriteOut(io.Discard, src)
	if err != nil || sum != "" {
		return sum, err
	}
	h := sha256.New() // a Content that does not hash what it writes (Bytes)
	if _, err := c.WriteOut(h, src); err != nil {
		return "", err
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}

// sumAside is a ContentSum taken on its own goroutine.
type sumAside struct {
	done   chan struct{}
	sum    string
	err    error
	caught panics.Slot
}

func sumBeside(c Content, src io.ReaderAt) *sumAside {
	a := &sumAside{done: make(chan struct{})}
	go func() {
		defer close(a.done)
		defer a.caught.Capture()
		a.sum, a.err = ContentSum(c, src)
	}()
	return a
}

// wait is the sum, once taken (a panic taking it is raised again here). It may be called
// again.
func (a *sumAside) wait() (string, error) {
	<-a.done
	a.caught.Rethrow()
	return a.sum, a.err
}
