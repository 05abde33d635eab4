package heal

import (
	"context"
	"errors"
	"fmt"
	"hash/fnv"
	"os"
	"path/filepath"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// Every process healing under one state directory (the daemon, a `heal` beside it, a second
// `heal`) takes a lock on the path it is about to heal before it looks at it again: one
// byte of state_dir/paths.lock, at an offset hashed from the path, held as an open file
// description lock (F_OFD_SETLK). The kernel drops it when the holder dies; two goroutines
// of one process never share one (each acquisition opens the file anew), so a release never
// drops another's lock. Two paths that hash alike only wait for each other.

const pathLockFile = "paths.lock"

// pathLockPoll is how often a held path lock is tried again; pathLockWait bounds the wait
// (the holder is healing that one file).
const (
	pathLockPoll = 5 * time.Millisecond
	pathLockWait = 2 * time.Minute
)

type pathLock struct{ f *os.File }

func pathLockOffset(path string) int64 {
	h := fnv.New64a()
	h.Write([]byte(path))
	return int64(h.Sum64() & (1<<62 - 1))
}

// lockPath takes the state directory's lock on path, waiting while another process holds
// it, until ctx is done or pathLockWait has passed (then an errBusy).
func (e *Engine) lockPath(ctx context.Context, path string) (*pathLock, error) {
	f, err := os.OpenFile(filepath.Join(e.StateDir, pathLockFile), os.O_RDWR|os.O_CREATE|syscall.O_CLOEXEC|syscall.O_NOFOLLOW, 0o600)
	if errors.Is(err, os.ErrNotExist) {
		if err = os.MkdirAll(e.StateDir, 0o700); err == nil {
			f, err = os.OpenFile(filepath.Join(e.StateDir, pathLockFile), os.O_RDWR|os.O_CREATE|syscall.O_CLOEXEC|syscall.O_NOFOLLOW, 0o600)
		}
	}
	if err != nil {
		return nil, fmt.Errorf("state lock: %w", err)
	}
	lk := unix.Flock_t{Type: unix.F_WRLCK, Whence: 0, Start: pathLockOffset(path), Len: 1}
	deadline := time.Now().Add(pathLockWait)
	for try := 0; ; try++ {
		err := unix.FcntlFlock(f.Fd(), unix.F_OFD_SETLK, &lk)
		if err == nil {
			return &pathLock{f: f}, nil
		}
		if !errors.Is(err, unix.EAGAIN) && !errors.Is(err, unix.EACCES) && !errors.Is(err, unix.EINTR) {
			f.Close()
			return nil, fmt.Errorf("state lock: %w", err)
		}
		if try == 0 {
			e.step("path-busy", path)
		}
		if time.Now().After(deadline) {
			f.Close()
			return nil, busyErr("another sessionmedic is healing %s", path)
		}
		t := time.NewTimer(pathLockPoll)
		select {
		case <-ctx.Done():
			t.Stop()
			f.Close()
			return nil, busyErr("interrupted while another sessionmedic heals %s", path)
		case <-t.C:
		}
	}
}

// release drops the lock (closing the only descriptor of its open file description).
func (l *pathLock) release() {
	if l != nil {
		l.f.Close()
	}
}
