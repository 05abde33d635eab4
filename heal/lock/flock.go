package lock

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"sync"

	"github.com/sessionmedic/sessionmedic/internal/resolve"
	"golang.org/x/sys/unix"
)

// testHookFlocked, when set by tests, runs right after flock succeeded and
// before the inode re-check.
var testHookFlocked func(path string)

// Flock takes an exclusive flock(2) on path: open O_RDWR|O_CREAT|O_CLOEXEC
// 0644 (through the resolver, see openLock), flock(LOCK_EX|LOCK_NB), polling until the
// deadline.
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
		if o.Probe {
			if err := probeFlock(path, unix.LOCK_EX, "flock held"); err != nil {
				return nil, err
			}
			return nothingHeld{}, nil
		}
		return tryFlock(path, recheck)
	})
}

func tryFlock(path string, recheck bool) (Held, error) {
	// The lock file is created first, if missing, as its directory's owner's (openOrCreate):
	// the app must be able to open it after us. Never through a symlink, and the descriptor
	// opened through the resolver is the one flocked (a library that opens by path again
	// would give a swapped directory a second chance).
	fd, err := openOrCreate(path, unix.O_RDWR, 0o644)
	if err != nil {
		return nil, fmt.Errorf("flock %s: %w", path, err)
	}
	ok, err := flockNB(fd, unix.LOCK_EX)
	if err != nil || !ok {
		unix.Close(fd)
		if err != nil {
			return nil, fmt.Errorf("flock %s: %w", path, err)
		}
		return nil, busy(path, "flock held")
	}
	if recheck {
		if testHookFlocked != nil {
			testHookFlocked(path)
		}
		same, err := flockedInodeIsPath(fd, path)
		if err != nil {
			_ = unlockClose(fd)
			return nil, err
		}
		if !same {
			if err := unlockClose(fd); err != nil {
				return nil, fmt.Errorf("unlock %s: %w", path, err)
			}
			return nil, errRetry
		}
	}
	return &flockHeld{fd: fd}, nil
}

// flockedInodeIsPath reports whether the locked descriptor still names the
// inode at path and that inode is linked.
func flockedInodeIsPath(fd int, path string) (bool, error) {
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil { // fstat of the locked descriptor
		return false, fmt.Errorf("fstat %s: %w", path, err)
	}
	if st.Nlink == 0 {
		return false, nil
	}
	cur, err := resolve.Lstat(path)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return false, nil
		}
		return false, fmt.Errorf("stat %s: %w", path, err)
	}
	return uint64(cur.Dev) == uint64(st.Dev) && cur.Ino == st.Ino, nil
}

type flockHeld struct {
	mu   sync.Mutex
	fd   int
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
	return unlockClose(h.fd)
}
