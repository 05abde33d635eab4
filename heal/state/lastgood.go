package state

import (
	"bytes"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"io"
	"os"
	"path/filepath"
	"sort"
	"sync"

	"github.com/sessionmedic/sessionmedic/heal/fsio"
)

// LastGood is state_dir/last-good: sessionmedic's own copy of the last version of each file
// it saw healthy, keyed by a hash of the path.
type LastGood struct {
	Root         string
	MaxFileBytes int64 // 0 = no limit

	idx     *lgIndex               // which copies exist, so that a scan does not probe for every file
	fs      fsio.FS                // writes the copies
	ownTemp func(base string) bool // whether a name is one of sessionmedic's own temps
}

// NewLastGood returns the last-good store under root, keeping copies of up to maxFileBytes
// (0 = no limit), which fs writes. It indexes the copies that exist at its first use, and
// removes the temps there that ownTemp (given a base name) says are sessionmedic's own.
func NewLastGood(root string, maxFileBytes int64, fs fsio.FS, ownTemp func(base string) bool) LastGood {
	return LastGood{Root: root, MaxFileBytes: maxFileBytes, idx: &lgIndex{}, fs: fs, ownTemp: ownTemp}
}

// lgIndex knows which copies exist, and for those this engine wrote, a hash of their bytes.
// It is compact (a 16-byte key and 8 bytes per copy): a daemon watching 100,000 sessions
// keeps one entry for each.
type lgIndex struct {
	once sync.Once
	mu   sync.Mutex
	m    map[[16]byte]uint64 // key: the copy's name; value: sha256 prefix of its bytes, 0 = unknown
}

func (x *lgIndex) load(root string, ownTemp func(string) bool) {
	x.once.Do(func() {
		x.m = map[[16]byte]uint64{}
		ents, _ := os.ReadDir(root)
		for _, e := range ents {
			if k, err := hex.DecodeString(e.Name()); err == nil && len(k) == 16 {
				x.m[[16]byte(k)] = 0
			} else if n := e.Name(); ownTemp != nil && ownTemp(n) {
				// A copy whose rename a crash or a power cut lost: never read, only in the way.
				// (Another process writing one now just writes its copy again next time.)
				os.Remove(filepath.Join(root, n))
			}
		}
	})
}

func (x *lgIndex) get(k [16]byte) (sum uint64, ok bool) {
	x.mu.Lock()
	defer x.mu.Unlock()
	sum, ok = x.m[k]
	return
}

func (x *lgIndex) set(k [16]byte, sum uint64) {
	x.mu.Lock()
	defer x.mu.Unlock()
	x.m[k] = sum
}

func (x *lgIndex) del(k [16]byte) {
	x.mu.Lock()
	defer x.mu.Unlock()
	delete(x.m, k)
}

func pathKey(path string) [16]byte {
	s := sha256.Sum256([]byte(path))
	return [16]byte(s[:16])
}

// copyKey is the key of path's copy: a hash of the path its rule root's real path gives it
// (fsio.RealPath), so that a symlinked root retargeted to another tree, once reloaded,
// never meets the copies of the tree it pointed to before.
func copyKey(path string) [16]byte { return pathKey(fsio.RealPath(path)) }

// CopyName is the file name of path's last-good copy in the store.
func CopyName(path string) string {
	k := copyKey(path)
	return hex.EncodeToString(k[:])
}

// Has reports whether a copy of path is kept.
func (l LastGood) Has(path string) bool { return l.Root != "" && l.has(path) }

func (l LastGood) has(path string) bool {
	if l.idx == nil {
		return true
	}
	l.idx.load(l.Root, l.ownTemp)
	_, ok := l.idx.get(copyKey(path))
	return ok
}

func (l LastGood) file(path string) string {
	return filepath.Join(l.Root, CopyName(path))
}

// Path is where path's last-good copy is kept ("" when no copies are kept): read from there
// streaming, a big copy is never held.
func (l LastGood) Path(path string) string {
	if l.Root == "" {
		return ""
	}
	return l.file(path)
}

// Size is the size of path's last-good copy; ok is false when there is none.
func (l LastGood) Size(path string) (size int64, ok bool) {
	if l.Root == "" || !l.has(path) {
		return 0, false
	}
	st, err := os.Lstat(l.file(path))
	if err != nil || !st.Mode().IsRegular() {
		return 0, false
	}
	return st.Size(), true
}

// Get returns the last-good copy of path, or nil.
func (l LastGood) Get(path string) []byte {
	if l.Root == "" || !l.has(path) {
		return nil
	}
	b, err := os.ReadFile(l.file(path))
	if err != nil {
		return nil
	}
	return b
}

// Load reads path's last-good copy straight from disk, even one another process wrote after
// the index was loaded (for planning a repair, where it matters).
func (l LastGood) Load(path string) []byte {
	if l.Root == "" {
		return nil
	}
	b, err := os.ReadFile(l.file(path))
	if err != nil {
		return nil
	}
	return b
}

// Put records data as path's last-good copy (atomically, without fsync: see fsio.FS.ReplaceAtomic;
// skipped when unchanged or too large).
func (l LastGood) Put(path string, data []byte) error {
	if l.Root == "" || (l.MaxFileBytes > 0 && int64(len(data)) > l.MaxFileBytes) {
		return nil
	}
	full := sha256.Sum256(data)
	sum := binary.LittleEndian.Uint64(full[:8]) | 1 // never 0, which means unknown
	k := copyKey(path)
	if l.idx != nil {
		l.idx.load(l.Root, l.ownTemp)
		if old, ok := l.idx.get(k); ok && old == sum {
			return nil // the copy already holds these bytes
		} else if ok && old == 0 {
			if cur := l.Load(path); cur != nil && bytes.Equal(cur, data) {
				l.idx.set(k, sum)
				return nil
			}
		}
	} else if cur := l.Load(path); cur != nil && bytes.Equal(cur, data) {
		return nil
	}
	if err := l.fs.MkdirAllSync(l.Root); err != nil {
		return err
	}
	if err := l.fs.ReplaceAtomic(l.file(path), data, 0o600); err != nil {
		return err
	}
	if l.idx != nil {
		l.idx.set(k, sum)
	}
	l.clearGone(path) // seen again: no longer deleted
	return nil
}

// PutFrom is Put of the size bytes of src, copied streaming, never held (a big file's copy).
// known is their hex sha256 when the caller has it (a heal's result, hashed when it was
// planned): then they are copied by the kernel (see fsio.FileContent), not read through.
// unchanged is asked once they are copied, before the copy is put in place: false (the file
// moved meanwhile, so the bytes may be of two versions) leaves the old copy as it was.
func (l LastGood) PutFrom(path string, src io.ReaderAt, size int64, known string, unchanged func() bool) error {
	if l.Root == "" || (l.MaxFileBytes > 0 && size > l.MaxFileBytes) {
		return nil
	}
	k := copyKey(path)
	old, ok := uint64(0), false
	if l.idx != nil {
		l.idx.load(l.Root, l.ownTemp)
		old, ok = l.idx.get(k)
	}
	if ok && old == 0 && l.holds(path, src, size) {
		// A copy of unknown bytes (kept before this process started) that already holds
		// these: read, never written again (a restart over a big tree writes nothing).
		return nil
	}
	if err := l.fs.MkdirAllSync(l.Root); err != nil {
		return err
	}
	var sum uint64
	placed := false
	err := l.fs.ReplaceAtomicFrom(l.file(path), fsio.Range{Off: 0, N: size}, src, 0o600, known != "", func(hexSum string) bool {
		if hexSum == "" {
			hexSum = known
		}
		if full, err := hex.DecodeString(hexSum); err == nil && len(full) >= 8 {
			sum = binary.LittleEndian.Uint64(full[:8]) | 1 // as Put keys it (0: unknown)
		}
		placed = unchanged() && (!ok || old != sum) // a copy already holding these bytes is left as it is
		return placed
	})
	if err != nil || !placed {
		return err
	}
	if l.idx != nil {
		l.idx.set(k, sum)
	}
	l.clearGone(path)
	return nil
}

// holds reports whether path's copy is exactly the size bytes of src, compared a block at a
// time.
func (l LastGood) holds(path string, src io.ReaderAt, size int64) bool {
	f, err := os.Open(l.file(path))
	if err != nil {
		return false
	}
	defer f.Close()
	if st, err := f.Stat(); err != nil || !st.Mode().IsRegular() || st.Size() != size {
		return false
	}
	const block = 1 << 20
	a, b := make([]byte, min(size, block)), make([]byte, min(size, block))
	for off := int64(0); off < size; off += block {
		n := int(min(block, size-off))
		if _, err := src.ReadAt(a[:n], off); err != nil && !(err == io.EOF && off+int64(n) == size) {
			return false
		}
		if _, err := f.ReadAt(b[:n], off); err != nil && !(err == io.EOF && off+int64(n) == size) {
			return false
		}
		if !bytes.Equal(a[:n], b[:n]) {
			return false
		}
	}
	return true
}

// keyOf is the key of a copy's file name.
func keyOf(name string) ([16]byte, bool) {
	k, err := hex.DecodeString(name)
	if err != nil || len(k) != 16 {
		return [16]byte{}, false
	}
	return [16]byte(k), true
}

// Prune removes the oldest copies while their total is over maxBytes (0 = no limit).
func (l LastGood) Prune(maxBytes int64) (removed int, err error) {
	removed, _, err = l.PruneBytes(maxBytes)
	return removed, err
}

// PruneBytes is Prune, also returning the bytes on disk it freed. A copy counts what it
// occupies on disk, never less than it holds.
func (l LastGood) PruneBytes(maxBytes int64) (removed int, freed int64, err error) {
	removed, freed, _, err = l.PruneBytesLeft(maxBytes)
	return removed, freed, err
}

// PruneBytesLeft is PruneBytes, also returning what the copies left occupy (what the rest of
// maxBytes may hold: the snapshots of SQLite stores share it).
func (l LastGood) PruneBytesLeft(maxBytes int64) (removed int, freed, left int64, err error) {
	if maxBytes <= 0 || l.Root == "" {
		return 0, 0, 0, nil
	}
	ents, err := os.ReadDir(l.Root)
	if err != nil {
		if os.IsNotExist(err) {
			return 0, 0, 0, nil
		}
		return 0, 0, 0, err
	}
	type copyInfo struct {
		path  string
		size  int64
		mtime int64
	}
	var all []copyInfo
	var total int64
	for _, e := range ents {
		if fi, err := e.Info(); err == nil && fi.Mode().IsRegular() {
			n := max(blocksOf(fi), fi.Size())
			all = append(all, copyInfo{filepath.Join(l.Root, e.Name()), n, fi.ModTime().UnixNano()})
			total += n
		}
	}
	sort.Slice(all, func(i, j int) bool { return all[i].mtime < all[j].mtime })
	for _, c := range all {
		if total <= maxBytes {
			break
		}
		if err := os.Remove(c.path); err != nil {
			return removed, freed, total, err
		}
		if l.idx != nil {
			if k, err := hex.DecodeString(filepath.Base(c.path)); err == nil && len(k) == 16 {
				l.idx.load(l.Root, l.ownTemp)
				l.idx.del([16]byte(k))
			}
		}
		total -= c.size
		freed += c.size
		removed++
	}
	return removed, freed, total, nil
}
