package format

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"hash"
	"io"
	"sync"
	"sync/atomic"
)

// bgHash is a SHA-256 of what is written to it, computed on a goroutine of its own: a plan's
// pass over a big file (the original's sum while it is walked for a salvage, the salvage's
// sum while it is judged) then costs the walk or the hash, whichever is slower, not both.
// Write copies its bytes into one of a few small buffers (held: at most bgHashBufs ×
// bgHashBuf, 1 MiB, taken from a pool that the next hash reuses); the goroutine is
// started by newBGHash and ended by Sum or Close, one of which the creator always calls.
type bgHash struct {
	work  chan []byte
	free  chan []byte
	done  chan struct{}
	h     hash.Hash
	made  int
	shut  bool
	marks []string // the sums at each Mark, in order (read after Sum or Close)
	// upToMark, when set before the first Write, is written what the hash is, on its
	// goroutine, up to the first Mark.
	upToMark io.Writer
}

// bgHashBufs buffers of bgHashBuf bytes: enough for the hash to keep pace, small enough that
// the heap the collector's goal is reckoned from hardly grows.
const (
	bgHashBufs = 4
	bgHashBuf  = 256 << 10
)

var bgHashPool = sync.Pool{New: func() any { b := make([]byte, bgHashBuf); return &b }}

func newBGHash() *bgHash {
	b := &bgHash{work: make(chan []byte, bgHashBufs), free: make(chan []byte, bgHashBufs), done: make(chan struct{}), h: sha256.New()}
	go func() {
		defer close(b.done)
		for p := range b.work {
			if p == nil {
				b.marks = append(b.marks, hex.EncodeToString(b.h.Sum(nil)))
				b.upToMark = nil
				continue
			}
			b.h.Write(p)
			if b.upToMark != nil {
				b.upToMark.Write(p)
			}
			b.free <- p
		}
	}()
	return b
}

func (b *bgHash) Write(p []byte) (int, error) {
	n := len(p)
	for len(p) > 0 {
		var buf []byte
		select {
		case buf = <-b.free:
		default:
			if b.made < bgHashBufs {
				b.made++
				buf = *bgHashPool.Get().(*[]byte)
			} else {
				buf = <-b.free
			}
		}
		k := copy(buf[:cap(buf)], p)
		b.work <- buf[:k]
		p = p[k:]
	}
	return n, nil
}

// Mark takes the sum of what was written so far (see marks); the hash goes on. A tail cut's
// result is the original's first bytes: both sums come from one pass.
func (b *bgHash) Mark() { b.work <- nil }

// Sum waits for what was written to be hashed and returns its hex sha256.
func (b *bgHash) Sum() string {
	b.Close()
	return hex.EncodeToString(b.h.Sum(nil))
}

// Close ends the goroutine (after it hashed what was written).
func (b *bgHash) Close() {
	if !b.shut {
		b.shut = true
		close(b.work)
		<-b.done
		for ; b.made > 0; b.made-- {
			buf := <-b.free
			buf = buf[:cap(buf)]
			bgHashPool.Put(&buf)
		}
	}
}

// AsideHash is the sha256 of the first n bytes of a reader, read in order in blocks on a
// goroutine of its own (HashAside): a judge or a walk that reads the same bytes, on several
// CPUs or in no set order, runs beside it (the bytes are the same as long as the file is the
// version the caller checks it is, after). Wait gives the sum; Stop ends the read early, and
// waits for it. The creator calls one of them, and may call both.
type AsideHash struct {
	stop atomic.Bool
	done chan struct{}
	sum  string
	err  error
}

var errAsideStopped = errors.New("stopped")

// HashAside starts the hash of the first n bytes of r.
func HashAside(r io.ReaderAt, n int64) *AsideHash {
	a := &AsideHash{done: make(chan struct{})}
	go func() {
		defer close(a.done)
		h := sha256.New()
		bp := bgHashPool.Get().(*[]byte)
		defer bgHashPool.Put(bp)
		buf := *bp
		for off := int64(0); off < n; {
			if a.stop.Load() {
				a.err = errAsideStopped
				return
			}
			k, err := r.ReadAt(buf[:min(int64(len(buf)), n-off)], off)
			h.Write(buf[:k])
			if off += int64(k); off < n && (err != nil || k == 0) {
				if a.err = err; err == nil || err == io.EOF {
					a.err = io.ErrUnexpectedEOF // shorter than it was
				}
				return
			}
		}
		a.sum = hex.EncodeToString(h.Sum(nil))
	}()
	return a
}

// Wait is the hex sha256 of the bytes, once read.
func (a *AsideHash) Wait() (string, error) {
	<-a.done
	return a.sum, a.err
}

// Stop ends the read, if it is still going, and waits for it to end.
func (a *AsideHash) Stop() {
	a.stop.Store(true)
	<-a.done
}
