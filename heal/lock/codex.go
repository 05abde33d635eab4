package lock

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"regexp"
	"sync"
	"time"

	"golang.org/x/sys/unix"
)

// Codex's thread writer lock (codex.md, "Lock protocol"): <home>/thread-writer-locks/<id>.lock
// is flock'ed LOCK_EX for the life of a session that writes the thread's rollout (LOCK_SH by
// a fork reading it), and is only ever opened, created and unlinked under the exclusive
// flock of <home>/thread-writer-locks/.coordination.lock. The files' presence means nothing;
// only the flocks do.

// codexThreadIDRe is a thread id as it names a lock file.
var codexThreadIDRe = regexp.MustCompile(`^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$`)

// codexReleaseWait bounds how long Release waits for the coordination lock (Codex holds it
// for milliseconds) before letting the thread lock go without it.
const codexReleaseWait = 2 * time.Second

// Codex takes the writer lock of thread threadID of the Codex home home, as Codex itself
// does: under the coordination lock (flock LOCK_EX|LOCK_NB on .coordination.lock, opened
// O_RDWR|O_CREAT|O_CLOEXEC 0666), flock LOCK_EX|LOCK_NB on <id>.lock (opened likewise);
// then the coordination lock is released and the thread lock held. Either flock being held
// elsewhere (a writer, a fork reader, a process starting or ending a session) is busy, and
// the whole attempt is polled until o.Wait. The thread-writer-locks directory must exist:
// it is never created, and no file in it is ever unlinked (Codex removes stale ones).
//
// A lock file that is a symlink is refused (an error, not busy).
func Codex(ctx context.Context, home, threadID string, o Options) (Held, error) {
	if !codexThreadIDRe.MatchString(threadID) {
		return nil, fmt.Errorf("codex thread lock: %q is not a thread id", threadID)
	}
	dir := filepath.Join(home, "thread-writer-locks")
	coord := filepath.Join(dir, ".coordination.lock")
	thread := filepath.Join(dir, threadID+".lock")
	return acquire(ctx, o, thread, func() (Held, error) {
		if o.Probe {
			return probeCodex(coord, thread)
		}
		return tryCodex(coord, thread, o.poll())
	})
}

// openLockFile opens (creating) a lock file as Codex does, refusing a symlink.
// One it creates belongs to the owner of its directory (see openOrCreate).
func openLockFile(path string) (int, error) {
	return openOrCreate(path, unix.O_RDWR, 0o666)
}

// flockNB takes how (LOCK_EX or LOCK_SH) on fd without blocking: false when it is held.
func flockNB(fd, how int) (bool, error) {
	for {
		err := unix.Flock(fd, how|unix.LOCK_NB)
		switch {
		case err == nil:
			return true, nil
		case err == unix.EINTR:
			continue
		case errors.Is(err, unix.EWOULDBLOCK):
			return false, nil
		}
		return false, err
	}
}

// lockCoordination opens and flocks the coordination lock: busy when it is held.
func lockCoordination(coord string) (int, error) {
	fd, err := openLockFile(coord)
	if err != nil {
		return -1, err
	}
	ok, err := flockNB(fd, unix.LOCK_EX)
	if err != nil || !ok {
		_ = unix.Close(fd)
		if err != nil {
			return -1, fmt.Errorf("flock %s: %w", coord, err)
		}
		return -1, busy(coord, "coordination lock held")
	}
	return fd, nil
}

// unlockClose lets a flock go and closes its descriptor.
func unlockClose(fd int) error {
	err := unix.Flock(fd, unix.LOCK_UN)
	return errors.Join(err, unix.Close(fd))
}

func tryCodex(coord, thread string, poll time.Duration) (Held, error) {
	cfd, err := lockCoordination(coord)
	if err != nil {
		return nil, err
	}
	// Under the coordination lock nobody creates or unlinks a thread's lock file, so the file
	// opened here is the one every Codex process flocks.
	tfd, err := openLockFile(thread)
	if err != nil {
		return nil, errors.Join(err, unlockClose(cfd))
	}
	ok, err := flockNB(tfd, unix.LOCK_EX)
	if err != nil || !ok {
		_ = unix.Close(tfd)
		cerr := unlockClose(cfd)
		if err != nil {
			return nil, errors.Join(fmt.Errorf("flock %s: %w", thread, err), cerr)
		}
		return nil, busy(thread, "the thread has an active writer or fork reader")
	}
	if err := unlockClose(cfd); err != nil {
		_ = unlockClose(tfd)
		return nil, fmt.Errorf("release %s: %w", coord, err)
	}
	return &codexHeld{coord: coord, fd: tfd, poll: poll}, nil
}

// probeCodex is tryCodex for Options.Probe: the coordination flock, then the thread's, each
// tried on the existing file and let go at once; nothing is created.
func probeCodex(coord, thread string) (Held, error) {
	if err := probeFlock(coord, unix.LOCK_EX, "coordination lock held"); err != nil {
		return nil, err
	}
	if err := probeFlock(thread, unix.LOCK_EX, "the thread has an active writer or fork reader"); err != nil {
		return nil, err
	}
	return nothingHeld{}, nil
}

// codexHeld is a thread writer lock held.
type codexHeld struct {
	mu    sync.Mutex
	coord string
	fd    int
	poll  time.Duration
	done  bool
}

// Release lets the thread lock go as Codex does: under the coordination lock, LOCK_UN and
// close of the thread lock's descriptor. The lock file stays. If the coordination lock cannot
// be had within codexReleaseWait, the thread lock is let go without it (as a process that
// exits does).
func (h *codexHeld) Release() error {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.done {
		return nil
	}
	h.done = true
	cfd := -1
	var cerr error
	deadline := time.Now().Add(codexReleaseWait)
	for {
		fd, err := lockCoordination(h.coord)
		if err == nil {
			cfd = fd
			break
		}
		if !errors.Is(err, ErrBusy) || time.Now().After(deadline) {
			cerr = err
			break
		}
		time.Sleep(h.poll)
	}
	err := unlockClose(h.fd)
	if cfd >= 0 {
		err = errors.Join(err, unlockClose(cfd))
	}
	if err != nil {
		return err
	}
	if cerr != nil && !errors.Is(cerr, ErrBusy) {
		return cerr
	}
	return nil
}
