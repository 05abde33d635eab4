//go:build linux || darwin || freebsd

package resolve

import (
	"strings"

	"golang.org/x/sys/unix"
)

// walkOpen opens the absolute path real from /, each directory with dirFlag|O_DIRECTORY|
// O_NOFOLLOW, the last component with flags|O_NOFOLLOW: a symlink anywhere is ELOOP (or
// ENOTDIR), as openat2's RESOLVE_NO_SYMLINKS would say.
func walkOpen(real string, flags int, perm uint32, dirFlag int) (int, error) {
	fd, err := unix.Open("/", dirFlag|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return -1, err
	}
	rel := strings.Trim(real, "/")
	if rel == "" {
		// real is "/": reopen it with the caller's flags.
		unix.Close(fd)
		return unix.Open("/", flags|unix.O_CLOEXEC, perm)
	}
	defer unix.Close(fd)
	return walkOpenAt(fd, rel, flags, perm, dirFlag)
}

// walkOpenAt opens rel (relative, cleaned, no "..") below the directory open as dirfd, one
// component at a time, never following a symlink. dirfd stays open.
func walkOpenAt(dirfd int, rel string, flags int, perm uint32, dirFlag int) (int, error) {
	if rel == "" || rel == "." {
		return unix.Openat(dirfd, ".", flags|unix.O_CLOEXEC, perm)
	}
	parts := strings.Split(rel, "/")
	fd := dirfd
	for i, c := range parts {
		last := i == len(parts)-1
		var nfd int
		var err error
		if last {
			nfd, err = unix.Openat(fd, c, flags|unix.O_NOFOLLOW|unix.O_CLOEXEC, perm)
		} else {
			nfd, err = unix.Openat(fd, c, dirFlag|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
			if err == unix.ENOTDIR {
				err = unix.ELOOP // a symlink where a directory was (or a file): refused alike
			}
		}
		if fd != dirfd {
			unix.Close(fd)
		}
		if err != nil {
			return -1, err
		}
		fd = nfd
	}
	return fd, nil
}
