//go:build linux || darwin || freebsd

package fsio

import (
	"strings"

	"golang.org/x/sys/unix"
)

// walkOpen opens the absolute path real from /, each directory with dirFlag|O_DIRECTORY|
// O_NOFOLLOW, the last component with flags|O_NOFOLLOW: a symlink anywhere is ELOOP (or
// ENOTDIR), as openat2's RESOLVE_NO_SYMLINKS would say.
func walkOpen(real string, flags int, perm uint32, dirFlag int) (int, error) {
	parts := strings.Split(strings.Trim(real, "/"), "/")
	fd, err := unix.Open("/", dirFlag|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return -1, err
	}
	for i, c := range parts {
		if c == "" {
			continue
		}
		last := i == len(parts)-1
		var nfd int
		if last {
			nfd, err = unix.Openat(fd, c, flags|unix.O_NOFOLLOW|unix.O_CLOEXEC, perm)
		} else {
			nfd, err = unix.Openat(fd, c, dirFlag|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
			if err == unix.ENOTDIR {
				err = unix.ELOOP // a symlink where a directory was (or a file): refused alike
			}
		}
		unix.Close(fd)
		if err != nil {
			return -1, err
		}
		fd = nfd
	}
	if len(parts) == 0 || parts[0] == "" {
		// real is "/": fd is / opened as a directory; reopen it with the caller's flags.
		unix.Close(fd)
		return unix.Open("/", flags|unix.O_CLOEXEC, perm)
	}
	return fd, nil
}
