package lock

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/sessionmedic/sessionmedic/internal/resolve"
	"golang.org/x/sys/unix"
)

// Lock files live in the users' trees, and the apps running as those users open them:
// one this process creates must be theirs, never the daemon's (DESIGN §4 "Trust"), or the
// app could no longer open its own lock. Every lock file is opened, created, stat'ed and
// unlinked through the resolver (internal/resolve): never through a symlink in any
// component below its rule root, and run as root below a root another user owns, as that
// user. One that is not a regular file (a FIFO, a device) is refused without being opened.

// giveToDir gives the file open as fd, which this process has just created in the
// directory of path, that directory's owner and group, when this process runs as root and
// they differ. A chown that fails is an error: the caller removes the file.
func giveToDir(fd int, path string) error {
	if os.Geteuid() != 0 {
		return nil // what a non-root process creates is its own, as the apps' own writes are
	}
	st, err := resolve.Lstat(filepath.Dir(path))
	if err != nil {
		return err
	}
	var fst unix.Stat_t
	if err := unix.Fstat(fd, &fst); err != nil {
		return fmt.Errorf("fstat %s: %w", path, err)
	}
	if fst.Uid == st.Uid && fst.Gid == st.Gid {
		return nil
	}
	if err := unix.Fchown(fd, int(st.Uid), int(st.Gid)); err != nil {
		return fmt.Errorf("chown %s to its directory's owner %d:%d: %w", path, st.Uid, st.Gid, err)
	}
	return nil
}

// errNotRegularLock: a lock file that is a FIFO, a device, a directory or a socket.
var errNotRegularLock = errors.New("not a regular file: refused")

// openLock opens path with flags through the resolver, refusing anything but a regular
// file: one that exists is stat'ed first, so a device is never opened, and the descriptor
// is stat'ed again (it may have been swapped in between).
func openLock(path string, flags int, perm uint32) (int, error) {
	if st, err := resolve.Lstat(path); err == nil && st.Mode&unix.S_IFMT != unix.S_IFREG {
		if st.Mode&unix.S_IFMT == unix.S_IFLNK {
			return -1, &os.PathError{Op: "open", Path: path, Err: unix.ELOOP}
		}
		return -1, &os.PathError{Op: "open", Path: path, Err: errNotRegularLock}
	}
	for {
		fd, err := resolve.Open(path, flags|unix.O_NONBLOCK|unix.O_NOCTTY, perm)
		if err == unix.EINTR {
			continue
		}
		if err != nil {
			return -1, &os.PathError{Op: "open", Path: path, Err: err}
		}
		var st unix.Stat_t
		if err := unix.Fstat(fd, &st); err != nil || st.Mode&unix.S_IFMT != unix.S_IFREG {
			unix.Close(fd)
			if err == nil {
				err = errNotRegularLock
			}
			return -1, &os.PathError{Op: "open", Path: path, Err: err}
		}
		return fd, nil
	}
}

// openOrCreate opens path with flags (never through a symlink, see openLock), creating it
// with perm when it does not exist: exclusively, then given to its directory's owner
// (giveToDir).
func openOrCreate(path string, flags int, perm uint32) (int, error) {
	for {
		fd, err := openLock(path, flags, 0)
		switch {
		case err == nil:
			return fd, nil
		case !errors.Is(err, unix.ENOENT):
			return -1, err
		}
		fd, err = openLock(path, flags|unix.O_CREAT|unix.O_EXCL, perm)
		switch {
		case errors.Is(err, unix.EEXIST):
			continue // created meanwhile by the app: open it as it is
		case err != nil:
			return -1, err
		}
		if err := giveToDir(fd, path); err != nil {
			unix.Close(fd)
			_ = resolve.Unlink(path)
			return -1, err
		}
		return fd, nil
	}
}
