//go:build !linux

package resolve

import "golang.org/x/sys/unix"

// openNoSymlinks opens the absolute path real without following a symlink in any of its
// components: a walk from / one component at a time.
func openNoSymlinks(real string, flags int, perm uint32) (int, error) {
	return walkOpen(real, flags, perm, unix.O_RDONLY)
}

// DirSearch opens a directory only to look up names in it.
const DirSearch = unix.O_RDONLY | unix.O_DIRECTORY

// openBeneath opens rel (relative, cleaned) below the directory open as dirfd without
// following a symlink: a walk.
func openBeneath(dirfd int, rel string, flags int, perm uint32) (int, error) {
	return walkOpenAt(dirfd, rel, flags, perm, unix.O_RDONLY)
}

// WalkOnly is for the tests of kernels without openat2: here every open is a walk already.
func WalkOnly(bool) bool { return true }

// statOnly opens a name to fstat it, never blocking on a FIFO.
const statOnly = unix.O_RDONLY | unix.O_NONBLOCK
