package lock

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/sessionmedic/sessionmedic/internal/resolve"
	"golang.org/x/sys/unix"
)

// publish writes body to an unnamed file in path's directory (O_TMPFILE), fsyncs it and
// links it in as path: the name appears with its bytes durable, or not at all. ok is false
// when the file system cannot do it (the caller falls back to O_EXCL); err is fs.ErrExist
// (wrapped) when path exists.
func publish(path string, perm os.FileMode, body []byte, faults func(op, path string) error) (snap snapshot, ok bool, err error) {
	fd, err := resolve.Open(filepath.Dir(path), unix.O_TMPFILE|unix.O_WRONLY|unix.O_CLOEXEC, uint32(perm.Perm()))
	if err != nil {
		// EOPNOTSUPP, EISDIR (kernels before 3.11), EINVAL: no O_TMPFILE here.
		return snapshot{}, false, nil
	}
	f := os.NewFile(uintptr(fd), path)
	defer f.Close()
	if err := giveToDir(fd, path); err != nil {
		return snapshot{}, true, err
	}
	if _, err := f.Write(body); err != nil {
		return snapshot{}, true, fmt.Errorf("write %s: %w", path, err)
	}
	if err := f.Sync(); err != nil {
		return snapshot{}, true, fmt.Errorf("fsync %s: %w", path, err)
	}
	fi, err := f.Stat()
	if err != nil {
		return snapshot{}, true, err
	}
	if faults != nil {
		if err := faults("link", path); err != nil {
			return snapshot{}, true, err
		}
	}
	// Through /proc (no privilege needed), else by descriptor (needs CAP_DAC_READ_SEARCH);
	// into the directory reached through the resolver.
	err = resolve.At(path, "link", func(dfd int, name string) error {
		err := unix.Linkat(unix.AT_FDCWD, fmt.Sprintf("/proc/self/fd/%d", fd), dfd, name, unix.AT_SYMLINK_FOLLOW)
		if err != nil && !errors.Is(err, unix.EEXIST) {
			err = unix.Linkat(fd, "", dfd, name, unix.AT_EMPTY_PATH)
		}
		return err
	})
	switch {
	case errors.Is(err, unix.EEXIST):
		return snapshot{}, true, &os.LinkError{Op: "link", Old: "O_TMPFILE", New: path, Err: err}
	case err != nil:
		return snapshot{}, false, nil // neither way works here: O_EXCL instead
	}
	id, _ := idOf(fi)
	return snapshot{data: append([]byte(nil), body...), id: id, size: int64(len(body))}, true, nil
}
