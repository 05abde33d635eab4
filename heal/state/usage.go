package state

import (
	"io/fs"
	"path/filepath"
	"syscall"
)

// DiskUsage is what the files under root occupy on disk: their allocated blocks, as du
// counts them, never less than 0. A quarantined copy of a sparse file written out whole
// occupies all of its size; retention bounds count that, not what the app's file held.
func DiskUsage(root string) int64 {
	var n int64
	filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return nil
		}
		if fi, err := d.Info(); err == nil {
			n += max(blocksOf(fi), fi.Size())
		}
		return nil
	})
	return n
}

// blocksOf is the bytes fi's blocks occupy (0 where the system does not say).
func blocksOf(fi fs.FileInfo) int64 {
	if st, ok := fi.Sys().(*syscall.Stat_t); ok {
		return int64(st.Blocks) * 512
	}
	return 0
}
