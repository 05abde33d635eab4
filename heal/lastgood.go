package heal

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"os"
	"path/filepath"
	"sort"
	"sync"
)

// LastGood is state_dir/last-good: sessionmedic's own copy of the last version of each file
// it saw healthy, keyed by a hash of the path.
type LastGood struct {
	Root         string
	MaxFileBytes int64 // 0 = no limit

	idx *lgIndex // which copies exist, so that a scan does not probe for every file
}

type lgIndex struct {
	once  sync.Once
	known sync.Map // file name -> struct{}
}

func (l LastGood) has(name string) bool {
	if l.idx == nil {
		return true
	}
	l.idx.once.Do(func() {
		ents, _ := os.ReadDir(l.Root)
		for _, e := range ents {
			l.idx.known.Store(e.Name(), struct{}{})
		}
	})
	_, ok := l.idx.known.Load(name)
	return ok
}

func (l LastGood) file(path string) string {
	s := sha256.Sum256([]byte(path))
	return filepath.Join(l.Root, hex.EncodeToString(s[:16]))
}

// Get returns the last-good copy of path, or nil.
func (l LastGood) Get(path string) []byte {
	if l.Root == "" || !l.has(filepath.Base(l.file(path))) {
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

// Put records data as path's last-good copy (durably; skipped when unchanged or too large).
func (l LastGood) Put(path string, data []byte) error {
	if l.Root == "" || (l.MaxFileBytes > 0 && int64(len(data)) > l.MaxFileBytes) {
		return nil
	}
	if old := l.Get(path); old != nil && bytes.Equal(old, data) {
		return nil
	}
	if err := mkdirAllSync(l.Root); err != nil {
		return err
	}
	if err := replaceDurable(l.file(path), data, 0o600); err != nil {
		return err
	}
	if l.idx != nil {
		l.has("") // load the index before adding to it
		l.idx.known.Store(filepath.Base(l.file(path)), struct{}{})
	}
	return nil
}

// Prune removes the oldest copies while their total is over maxBytes (0 = no limit).
func (l LastGood) Prune(maxBytes int64) (removed int, err error) {
	if maxBytes <= 0 || l.Root == "" {
		return 0, nil
	}
	ents, err := os.ReadDir(l.Root)
	if err != nil {
		if os.IsNotExist(err) {
			return 0, nil
		}
		return 0, err
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
			all = append(all, copyInfo{filepath.Join(l.Root, e.Name()), fi.Size(), fi.ModTime().UnixNano()})
			total += fi.Size()
		}
	}
	sort.Slice(all, func(i, j int) bool { return all[i].mtime < all[j].mtime })
	for _, c := range all {
		if total <= maxBytes {
			break
		}
		if err := os.Remove(c.path); err != nil {
			return removed, err
		}
		if l.idx != nil {
			l.idx.known.Delete(filepath.Base(c.path))
		}
		total -= c.size
		removed++
	}
	return removed, nil
}
