package format

import (
	"errors"
	"io"
	"os"
	"sync"
	"sync/atomic"

	"github.com/sessionmedic/sessionmedic/heal/fsio"
	"github.com/sessionmedic/sessionmedic/internal/panics"
)

// asideBuf is the size of an AsideHash's read buffer, taken from a pool that the next hash
// reuses.
const asideBuf = 256 << 10

var asidePool = sync.Pool{New: func() any { b := make([]byte, asideBuf); return &b }}

// AsideHash is the sha256 of the first n bytes of a reader, read in order in blocks on a
// goroutine of its own (HashAside): a judge or a walk that reads the same bytes, on several
// CPUs or in no set order, runs beside it (the bytes are the same as long as the file is the
// version the caller checks it is, after). Wait gives the sum; Stop ends the read early, and
// waits for it. The creator calls one of them, and may call both.
type AsideHash struct {
	stop    atomic.Bool
	done    chan struct{}
	sum     string
	markSum string
	mu      sync.Mutex
	states  []hashState // the hash's state at each multiple of asideStateEvery, in order (mu)
	err     error
	caught  panics.Slot // the read's panic, raised again by Wait and Stop
}

// hashState is the state of an AsideHash's sha256 once the first at bytes were hashed.
type hashState struct {
	at    int64
	state []byte
}

// asideStateEvery is how far apart an AsideHash keeps its states (about 110 bytes each: 25
// for 100 MB); tests make it smaller (SetHashStateEvery).
var asideStateEvery int64 = 4 << 20

// SetHashStateEvery makes an AsideHash keep its state every n bytes until restore is called:
// for the tests of the packages whose sums go on from it (never in parallel ones).
func SetHashStateEvery(n int64) (restore func()) {
	was := asideStateEvery
	asideStateEvery = n
	return func() { asideStateEvery = was }
}

var errAsideStopped = errors.New("stopped")

// HashAside starts the hash of the first n bytes of r.
func HashAside(r io.ReaderAt, n int64) *AsideHash { return hashAside(r, n, 0, nil) }

// HashAsideFile is HashAside of f, which it closes once the read ends: the hash may outlive
// its caller's descriptor of the file (a plan that hands it to the heal that applies it).
func HashAsideFile(f *os.File, n int64) *AsideHash { return HashAsideFileMark(f, n, 0) }

// HashAsideFileMark is HashAsideFile that also takes the sum of the first mark bytes
// (MarkSum).
func HashAsideFileMark(f *os.File, n, mark int64) *AsideHash {
	a := hashAside(f, n, mark, nil)
	go func() {
		<-a.done
		f.Close()
	}()
	return a
}

// hashAside is HashAside that also takes the sum of the first mark bytes (MarkSum), and
// writes them to upToMark when it is set (fsio.MarkHash).
func hashAside(r io.ReaderAt, n, mark int64, upToMark io.Writer) *AsideHash {
	a := &AsideHash{done: make(chan struct{})}
	go func() {
		defer close(a.done)
		defer a.caught.Capture()
		h := fsio.NewMarkHash(mark)
		h.Before = upToMark
		bp := asidePool.Get().(*[]byte)
		defer asidePool.Put(bp)
		buf := *bp
		for off := int64(0); off < n; {
			if a.stop.Load() {
				a.err = errAsideStopped
				return
			}
			k, err := r.ReadAt(buf[:min(int64(len(buf)), n-off)], off)
			a.write(h, buf[:k], off)
			if off += int64(k); off < n && (err != nil || k == 0) {
				if a.err = err; err == nil || err == io.EOF {
					a.err = io.ErrUnexpectedEOF // shorter than it was
				}
				return
			}
		}
		a.sum, a.markSum = h.Sum(), h.MarkSum()
	}()
	return a
}

// Wait is the hex sha256 of the bytes, once read.
func (a *AsideHash) Wait() (string, error) {
	<-a.done
	a.caught.Rethrow()
	return a.sum, a.err
}

// write hashes b, the bytes at off, keeping the hash's state at each multiple of
// asideStateEvery it passes.
func (a *AsideHash) write(h *fsio.MarkHash, b []byte, off int64) {
	for len(b) > 0 {
		next := (off/asideStateEvery + 1) * asideStateEvery
		k := min(int64(len(b)), next-off)
		h.Write(b[:k])
		b, off = b[k:], off+k
		if off == next {
			if st, err := h.State(); err == nil {
				a.mu.Lock()
				a.states = append(a.states, hashState{off, st})
				a.mu.Unlock()
			}
		}
	}
}

// StateBefore, after Wait, is the state of the sha256 of the reader's first at bytes, the
// most it kept of them: at is at most n (0 and nil when it kept none that far). Before the
// read ends, it is the most it kept so far.
func (a *AsideHash) StateBefore(n int64) (at int64, state []byte) {
	a.mu.Lock()
	defer a.mu.Unlock()
	for _, s := range a.states {
		if s.at > n {
			break
		}
		at, state = s.at, s.state
	}
	return at, state
}

// MarkSum, after Wait, is the hex sha256 of the first mark bytes.
func (a *AsideHash) MarkSum() string { return a.markSum }

// Stop ends the read, if it is still going, and waits for it to end.
func (a *AsideHash) Stop() {
	a.stop.Store(true)
	<-a.done
	a.caught.Rethrow()
}
