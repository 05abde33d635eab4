package format

import (
	"hash/maphash"
	"io"
	"os"
	"sync"
	"sync/atomic"

	"github.com/sessionmedic/sessionmedic/heal/fsio"
)

// Incremental validation of append-only JSONL (DESIGN §10): a file that only grew since it
// was last seen healthy — same device and inode, larger or equal size, and the same bytes at
// its head and just before the old end — is validated from the old end only. Anything else
// (truncation, a rewrite, a replacement by rename, an edit seen in the checked windows) falls
// back to a full read. An edit deep inside the prefix that leaves both windows alone is not
// seen by an incremental pass: every fullEvery-th pass of a file is a full one.
const (
	incHead   = 4 << 10  // bytes hashed at the start of the file
	incWindow = 16 << 10 // bytes hashed just before the old end
	fullEvery = 64       // incremental passes between two full validations
)

type incEntry struct {
	dev, ino     uint64
	size         int64
	head, window uint64 // hashes of the checked windows (maphash: the cache lives in memory only)
	passes       int32
	tail         *tailState // the sha256 state and lines of the size bytes, when kept (torninc.go)
}

// AppendCache remembers the append-only files last seen healthy. Its zero value is empty and
// ready; it is safe for concurrent use. Its counters are the caller's to read and to bump.
type AppendCache struct {
	mu    sync.Mutex
	m     map[string]incEntry
	kept  int // bytes of the checklist states the entries keep (tailState.pass), within maxKept
	limit int // maxKept unless set (tests)

	Incremental atomic.Int64 // passes that read only the appended bytes
	Full        atomic.Int64 // full reads of eligible files (counted by the caller)
}

func (c *AppendCache) get(path string) (incEntry, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	e, ok := c.m[path]
	return e, ok
}

func (c *AppendCache) put(path string, e incEntry) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.store(path, e)
}

// maxKept bounds the bytes of the checklist states an AppendCache keeps (tailState.pass; a
// 95 MB Claude Code transcript's is about 1.3 MiB): a state that would pass it is let go
// first from the other entries, and is not kept when it alone would. keptRecordBytes is
// what a state is taken to hold a record when its sequence does not tell (HeldSequence).
const (
	maxKept         = 8 << 20
	keptRecordBytes = 16
)

// store puts e as path's entry (under c.mu), within the bound of the states kept.
func (c *AppendCache) store(path string, e incEntry) {
	if c.m == nil {
		c.m = map[string]incEntry{}
	}
	limit := c.limit
	if limit <= 0 {
		limit = maxKept
	}
	c.kept -= keptBytes(c.m[path])
	if n := keptBytes(e); n > 0 {
		for p, o := range c.m {
			if c.kept+n <= limit {
				break
			}
			if p != path && keptBytes(o) > 0 {
				c.kept -= keptBytes(o)
				o.tail = o.tail.withoutPass()
				c.m[p] = o
			}
		}
		if c.kept+n > limit {
			e.tail = e.tail.withoutPass()
		}
	}
	c.m[path] = e
	c.kept += keptBytes(e)
}

// keptBytes is what e's kept checklist state holds (0: none kept). It is taken once, when
// the state is stored, and kept with it: a state is not given records while it is stored.
func keptBytes(e incEntry) int {
	if e.tail == nil || e.tail.pass == nil {
		return 0
	}
	return e.tail.held
}

// Drop forgets path: its next pass is a full one.
func (c *AppendCache) Drop(path string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.kept -= keptBytes(c.m[path])
	delete(c.m, path)
}

// windowSeed keys the window hashes: they are compared only within this process. It is
// set once at start and never written after.
var windowSeed = maphash.MakeSeed()

// windowHashesOf hashes the head and the last window of data.
func windowHashesOf(data []byte) (head, window uint64) {
	n := int64(len(data))
	return maphash.Bytes(windowSeed, data[:min(n, incHead)]), maphash.Bytes(windowSeed, data[max(0, n-incWindow):])
}

// windowHashes is windowHashesOf for the first size bytes of r.
func windowHashes(r io.ReaderAt, size int64) (head, window uint64, err error) {
	h := make([]byte, min(size, incHead))
	if _, err := r.ReadAt(h, 0); err != nil && err != io.EOF {
		return head, window, err
	}
	start := max(0, size-incWindow)
	w := make([]byte, size-start)
	if _, err := r.ReadAt(w, start); err != nil && err != io.EOF {
		return head, window, err
	}
	return maphash.Bytes(windowSeed, h), maphash.Bytes(windowSeed, w), nil
}

// Remember records a file just validated in full as healthy.
func (c *AppendCache) Remember(path string, t Profile, id fsio.Identity, data []byte) {
	if !t.AppendOnly() || len(data) == 0 || data[len(data)-1] != '\n' {
		c.Drop(path)
		return
	}
	head, window := windowHashesOf(data)
	c.put(path, incEntry{dev: id.Dev, ino: id.Ino, size: int64(len(data)), head: head, window: window})
}

// RememberFile records a large file validated streaming, hashing its windows from disk.
func (c *AppendCache) RememberFile(path string, t Profile, id fsio.Identity) {
	f, err := fsio.OpenStable(path, id) // the version validated, through the resolver
	if err != nil {
		c.Drop(path)
		return
	}
	defer f.Close()
	head, window, err := windowHashes(f, id.Size)
	if err != nil {
		c.Drop(path)
		return
	}
	c.put(path, incEntry{dev: id.Dev, ino: id.Ino, size: id.Size, head: head, window: window})
}

// appended opens the file at path when it is the version the cache remembers, with bytes
// appended or not: the same device and inode, no shorter, within maxSize (0: no bound),
// the same bytes in the checked windows, and what was appended starting a line (bytes
// appended to a last line without its '\n', which JSON Lines allows, continue that line:
// only a full pass judges it). The caller closes f when ok.
func (c *AppendCache) appended(path string, maxSize int64) (prev incEntry, f *os.File, id fsio.Identity, ok bool) {
	prev, found := c.get(path)
	if !found || prev.passes >= fullEvery {
		return prev, nil, id, false
	}
	f, id, err := fsio.OpenRegular(path)
	if err != nil {
		return prev, nil, id, false
	}
	ok = id.Dev == prev.dev && id.Ino == prev.ino && id.Size >= prev.size && (maxSize <= 0 || id.Size <= maxSize)
	if ok {
		head, window, err := windowHashes(f, prev.size)
		ok = err == nil && head == prev.head && window == prev.window
	}
	if ok && prev.size > 0 && id.Size > prev.size {
		var b [1]byte
		_, err := f.ReadAt(b[:], prev.size-1)
		ok = err == nil && b[0] == '\n'
	}
	if !ok {
		f.Close()
		return prev, nil, id, false
	}
	return prev, f, id, true
}

// TryIncremental validates only what was appended to a file last seen healthy. ok is false
// when the file is not a pure append of that version (or is damaged): then the caller reads
// it in full.
func (c *AppendCache) TryIncremental(path string, t Profile, maxSize int64) (id fsio.Identity, ok bool) {
	if !t.AppendOnly() {
		return id, false
	}
	prev, f, id, ok := c.appended(path, maxSize)
	if !ok {
		return id, false
	}
	defer f.Close()
	grown := id.Size - prev.size
	valid := true
	var tail []byte // the appended bytes, when held
	if grown > StreamBuf {
		valid = AppendedValidAt(t, f, prev.size, grown) // judged streaming, never held
	} else if grown > 0 {
		tail = make([]byte, grown)
		n, err := f.ReadAt(tail, prev.size)
		valid = (err == nil || err == io.EOF) && int64(n) == grown && AppendedValid(t, tail)
	}
	if !valid {
		return id, false
	}
	if fi2, err := f.Stat(); err != nil || !fsio.IdentityOf(fi2).Same(id) {
		return id, false
	}
	next := prev
	next.size, next.passes = id.Size, prev.passes+1
	if grown > 0 {
		next.head, next.window, _ = windowHashes(f, id.Size)
		next.tail = nil
		if tail != nil {
			next.tail = prev.tail.extend(tail)
		}
		if pass := c.takePass(path, prev); pass != nil && next.tail != nil {
			next.tail.keepEnd(pass.judged(t, tail, prev.size), id.Size) // next.tail is extend's own
		}
	}
	c.put(path, next)
	c.Incremental.Add(1)
	return id, true
}
