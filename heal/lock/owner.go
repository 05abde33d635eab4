package lock

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"golang.org/x/sys/unix"
)

// Lock files live in the users' trees, and the apps running as those users open them:
// one this process creates must be theirs, never the daemon's (DESIGN §4 "Trust"), or the
// app could no longer open its own lock. None is ever opened through a symlink.

// giveToDir gives the file open as fd, which this process has just created in the
// directory of path, that directory's owner and group, when this process runs as root and
// they differ. A chown that fails is an error: the caller removes the file.
func giveToDir(fd int, path string) error {
	if os.Geteuid() != 0 {
		return nil // what a non-root process creates is its own, as the apps' own writes are
	}
	var st unix.Stat_t
	if err := unix.Stat(filepath.Dir(path), &st); err != nil {
		return fmt.Errorf("stat %s: %w", filepath.Dir(path), err)
	}
	if st.Uid == 0 && st.Gid == 0 {
		return nil
	}
	if err := unix.Fchown(fd, int(st.Uid), int(st.Gid)); err != nil {
		return fmt.Errorf("chown %s to its directory's owner %d:%d: %w", path, st.Uid, st.Gid, err)
	}
	return nil
}

// openOrCreate opens path with flags (never following a symlink), creating it with perm
// when it does not exist: exclusively, then given to its directory's owner (giveToDir).
func openOrCreate(path string, flags int, perm uint32) (int, error) {
	for {
		fd, err := unix.Open(path, flags|unix.O_CLOEXEC|unix.O_NOFOLLOW, 0)
		switch {
		case err == unix.EINTR:
			continue
		case err == nil:
			return fd, nil
		case !errors.Is(err, unix.ENOENT):
			return -1, fmt.Errorf("open %s: %w", path, err)
		}
		fd, err = unix.Open(path, flags|unix.O_CREAT|unix.O_EXCL|unix.O_CLOEXEC|unix.O_NOFOLLOW, perm)
		switch {
		case err == unix.EINTR, errors.Is(err, unix.EEXIST):
			continue // created meanwhile by the app: open it as it is
		case err != nil:
			return -1, fmt.Errorf("open %s: %w", path, err)
		}
		if err := giveToDir(fd, path); err != nil {
			unix.Close(fd)
			unix.Unlink(path)
			return -1, err
		}
		return fd, nil
	}
}
