package fsio

import (
	"os"

	"golang.org/x/sys/unix"
)

// WriteLease takes a write lease on f, opened for writing (fcntl F_SETLEASE): it is granted
// only while no other descriptor has the file open, and while it is held any other open of
// the file waits until it is released. Between the two, nobody but the holder can change the
// file's bytes: a cut made then is proven safe against an app that appends without a lock
// (its open waits, then its append lands after the cut). The holder must be the file's owner
// or have CAP_LEASE; a file system without leases refuses. Any refusal is ErrNoLease.
func WriteLease(f *os.File) error {
	if _, err := unix.FcntlInt(f.Fd(), unix.F_SETLEASE, unix.F_WRLCK); err != nil {
		return ErrNoLease
	}
	return nil
}

// ReleaseLease releases f's lease (closing f releases it too).
func ReleaseLease(f *os.File) {
	_, _ = unix.FcntlInt(f.Fd(), unix.F_SETLEASE, unix.F_UNLCK)
}
