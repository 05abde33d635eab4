package resolve

import (
	"sync/atomic"

	"golang.org/x/sys/unix"
)

// noOpenat2 is set once openat2 answered ENOSYS (kernels before 5.6, some sandboxes).
var noOpenat2 atomic.Bool

// openNoSymlinks opens the absolute path real without following a symlink in any of its
// components: openat2 with RESOLVE_NO_SYMLINKS (and no magic links: /proc/<pid>/fd/N), else
// a walk from / one component at a time.
func openNoSymlinks(real string, flags int, perm uint32) (int, error) {
	if !noOpenat2.Load() {
		how := unix.OpenHow{Flags: uint64(flags), Resolve: unix.RESOLVE_NO_SYMLINKS | unix.RESOLVE_NO_MAGICLINKS}
		if flags&unix.O_CREAT != 0 {
			how.Mode = uint64(perm)
		}
		fd, err := unix.Openat2(unix.AT_FDCWD, real, &how)
		if err != unix.ENOSYS && err != unix.EPERM { // EPERM: a seccomp filter that does not know it
			return fd, err
		}
		noOpenat2.Store(true)
	}
	return walkOpen(real, flags, perm, unix.O_PATH)
}

// DirSearch opens a directory only to look up names in it.
const DirSearch = unix.O_PATH | unix.O_DIRECTORY

// openBeneath opens rel (relative, cleaned) below the directory open as dirfd without
// following a symlink or leaving it: openat2 RESOLVE_BENEATH|RESOLVE_NO_SYMLINKS, else a
// walk.
func openBeneath(dirfd int, rel string, flags int, perm uint32) (int, error) {
	if !noOpenat2.Load() {
		how := unix.OpenHow{Flags: uint64(flags), Resolve: unix.RESOLVE_BENEATH | unix.RESOLVE_NO_SYMLINKS | unix.RESOLVE_NO_MAGICLINKS}
		if flags&unix.O_CREAT != 0 {
			how.Mode = uint64(perm)
		}
		if rel == "" {
			rel = "."
		}
		fd, err := unix.Openat2(dirfd, rel, &how)
		if err != unix.ENOSYS && err != unix.EPERM {
			return fd, err
		}
		noOpenat2.Store(true)
	}
	return walkOpenAt(dirfd, rel, flags, perm, unix.O_PATH)
}

// WalkOnly makes every open take the walk instead of openat2 (on) or lets openat2 be tried
// again (off), and reports whether the walk was forced before: for the tests of kernels
// without openat2.
func WalkOnly(on bool) bool { return noOpenat2.Swap(on) }

// statOnly opens a name only to fstat it (openat2 refuses any other flag with O_PATH).
const statOnly = unix.O_PATH
