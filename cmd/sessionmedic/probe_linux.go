package main

import (
	"os"

	"golang.org/x/sys/unix"
)

// probeWrite proves dir writable. Here with an unnamed file (O_TMPFILE): a crash or a power
// cut can leave no probe behind. Where the file system has no O_TMPFILE, a named one.
func probeWrite(dir string) error {
	fd, err := unix.Open(dir, unix.O_TMPFILE|unix.O_WRONLY|unix.O_CLOEXEC, 0o600)
	switch err {
	case nil:
		return unix.Close(fd)
	case unix.EOPNOTSUPP, unix.EISDIR, unix.EINVAL:
		return probeNamed(dir)
	}
	return &os.PathError{Op: "open", Path: dir, Err: err}
}
