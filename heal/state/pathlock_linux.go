package state

import (
	"context"
	"errors"
	"fmt"
	"hash/fnv"
	"os"
	"path/filepath"
	"syscall"
	"time"

	"github.com/sessionmedic/sessionmedic/heal/fsio"
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

// PathLock is a path's lock, held until Release.
type PathLock struct{ f *os.File }

func pathLockOffset(path string) int64 {
	h := fnv.New64a()
	h.Write([]byte(path))
	return int64(h.Sum64() & (1<<62 - 1))
}

// LockPath takes the lock of the state directory dir on path, waiting while another process
// holds it, until ctx is done or pathLockWait has passed (then an [fsio.ErrBusy]). busy, when
// set, is called once when the lock is found held, before the wait.
func LockPath(ctx context.Context, dir, path string, busy func()) (*PathLock, error) {
	f, err := os.OpenFile(filepath.Join(dir, pathLockFile), os.O_RDWR|os.O_CREATE|syscall.O_CLOEXEC|syscall.O_NOFOLLOW, 0o600)
	if errors.Is(err, os.ErrNotExist) {
		if err = os.MkdirAll(dir, 0o700); err == nil {
			f, err = os.OpenFile(filepath.Join(dir, pathLockFile), os.O_RDWR|os.O_CREATE|syscall.O_CLOEXEC|syscall.O_NOFOLLOW, 0o600)
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
			return &PathLock{f: f}, nil
		}
		if !errors.Is(err, unix.EAGAIN) && !errors.Is(err, unix.EACCES) && !errors.Is(err, unix.EINTR) {
			f.Close()
			return nil, fmt.Errorf("state lock: %w", err)
		}
		if try == 0 && busy != nil {
			busy()
		}
		if time.Now().After(deadline) {
			f.Close()
			return nil, fmt.Errorf("%w: another sessionmedic is healing %s", fsio.ErrBusy, path)
		}
		t := time.NewTimer(pathLockPoll)
		select {
		case <-ctx.Done():
			t.Stop()
			f.Close()
			return nil, fmt.Errorf("%w: interrupted while another sessionmedic heals %s", fsio.ErrBusy, path)
		case <-t.C:
		}
	}
}

// Release drops the lock (closing the only descriptor of its open file description). A nil
// lock is none.
func (l *PathLock) Release() {
	if l != nil {
		l.f.Close()
	}
}
