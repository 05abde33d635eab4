package lock

import (
	"context"
	"errors"
	"fmt"
	"os"
	"sync"
	"syscall"

	"github.com/gofrs/flock"
)

// testHookFlocked, when set by tests, runs right after flock succeeded and
// before the inode re-check.
var testHookFlocked func(path string)

// Flock takes an exclusive flock(2) on path: open O_RDWR|O_CREAT|O_CLOEXEC
// 0644, flock(LOCK_EX|LOCK_NB), polling until the deadline.
//
// With recheck (nanobot's filelock, which unlinks its file on release), after
// locking it fstats the descriptor and stats the path: they must name the same
// device and inode and st_nlink must be > 0, otherwise the descriptor is
// closed and the whole open+flock starts again. PraisonAI uses
// recheck=false (its file is never unlinked), nanobot recheck=true.
//
// The lock file is never unlinked, on release or ever (rule 3): an
// old-filelock waiter blocked on the inode would otherwise get a lock nobody
// else can see. Release is flock(LOCK_UN) and close.
func Flock(ctx context.Context, path string, recheck bool, o Options) (Held, error) {
	return acquire(ctx, o, path, func() (Held, error) {
		return tryFlock(path, recheck)
	})
}

func tryFlock(path string, recheck bool) (Held, error) {
	// The lock file is created first, if missing, as its directory's owner's (openOrCreate):
	// the app must be able to open it after us. Never through a symlink.
	fd, err := openOrCreate(path, os.O_RDWR, 0o644)
	if err != nil {
		return nil, fmt.Errorf("flock %s: %w", path, err)
	}
	syscall.Close(fd)
	// Each attempt opens the path afresh: the gofrs handle is closed again
	// when the non-blocking flock fails.
	f := flock.New(path,
		flock.SetFlag(os.O_RDWR|os.O_CREATE|syscall.O_NOFOLLOW),
		flock.SetPermissions(0o644))
	ok, err := f.TryLock()
	if err != nil {
		_ = f.Close()
		return nil, fmt.Errorf("flock %s: %w", path, err)
	}
	if !ok {
		return nil, busy(path, "flock held")
	}
	if recheck {
		if testHookFlocked != nil {
			testHookFlocked(path)
		}
		same, err := flockedInodeIsPath(f, path)
		if err != nil {
			_ = f.Close()
			return nil, err
		}
		if !same {
			if err := f.Close(); err != nil {
				return nil, fmt.Errorf("unlock %s: %w", path, err)
			}
			return nil, errRetry
		}
	}
	return &flockHeld{f: f}, nil
}

// flockedInodeIsPath reports whether the locked descriptor still names the
// inode at path and that inode is linked.
func flockedInodeIsPath(f *flock.Flock, path string) (bool, error) {
	fdInfo, err := f.Stat() // fstat of the locked descriptor
	if err != nil {
		return false, fmt.Errorf("fstat %s: %w", path, err)
	}
	st, ok := fdInfo.Sys().(*syscall.Stat_t)
	if !ok {
		return false, fmt.Errorf("fstat %s: no stat_t", path)
	}
	if st.Nlink == 0 {
		return false, nil
	}
	pathInfo, err := os.Stat(path)
	if err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return false, nil
		}
		return false, fmt.Errorf("stat %s: %w", path, err)
	}
	a, _ := idOf(fdInfo)
	b, ok := idOf(pathInfo)
	return ok && a == b, nil
}

type flockHeld struct {
	mu   sync.Mutex
	f    *flock.Flock
	done bool
}

// Release unlocks and closes the descriptor. It never unlinks the file.
func (h *flockHeld) Release() error {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.done {
		return nil
	}
	h.done = true
	return h.f.Close()
}
