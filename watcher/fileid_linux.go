package watcher

import (
	"io/fs"
	"syscall"
)

// fileID is a file's identity: device and inode.
type fileID struct{ dev, ino uint64 }

func idOf(fi fs.FileInfo) fileID {
	if st, ok := fi.Sys().(*syscall.Stat_t); ok {
		return fileID{dev: uint64(st.Dev), ino: st.Ino}
	}
	return fileID{}
}
