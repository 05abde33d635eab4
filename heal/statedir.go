package heal

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/sessionmedic/sessionmedic/heal/fsio"
	"github.com/sessionmedic/sessionmedic/heal/state"
)

// The engine's state directory (DESIGN §8) is heal/state's: the quarantine, the journal of
// heals in flight, the last-good copies, the hands-off marks, the per-path lock. What follows
// joins it to the engine.

// Manifest describes one quarantined file (see [state.Manifest]).
type Manifest = state.Manifest

// Recovered says how one unfinished heal was resolved at start-up (see [state.Recovered]).
type Recovered = state.Recovered

func sha(b []byte) string {
	s := sha256.Sum256(b)
	return hex.EncodeToString(s[:])
}

// quarantineFile quarantines a file too big to hold: its bytes are copied streaming from the
// file at path, which must be the version id names, and hash to wantSHA (the bytes the plan
// was made from). Anything else is busy: the file changed.
//
// A tail cut (keep > 0: the plan keeps the file's first keep bytes, whose sha256 is keepSHA)
// quarantines only the bytes it removes (see [state.Quarantine.PutTail]): the rest stay in the
// file, untouched.
func (e *Engine) quarantineFile(m *Manifest, path string, id Identity, wantSHA string, keep int64, keepSHA string, now time.Time) (string, error) {
	f, err := fsio.OpenStable(path, id)
	if errors.Is(err, fsio.ErrChanged) {
		return "", busyErr("%s changed since it was read", path)
	}
	if err != nil {
		return "", fmt.Errorf("quarantine: %w", err)
	}
	defer f.Close()
	// Copied by the kernel (no hash computed): the bytes are the version the plan read and
	// hashed as long as the file is still that version once they are copied.
	still := func(sum string) error {
		if (sum != "" && sum != wantSHA) || !fsio.StillSame(f, id) {
			return busyErr("%s changed since it was read", path)
		}
		return nil
	}
	var dir string
	if keep > 0 {
		dir, err = e.Quarantine.PutTail(m, id.Size, keep, f, wantSHA, keepSHA, still, now)
	} else {
		dir, err = e.Quarantine.PutFrom(m, id.Size, fsio.Range{Off: 0, N: id.Size}, f, wantSHA, still, now)
	}
	if err != nil && !errors.Is(err, errBusy) {
		// A copy cut short by the file's own change (an app without a lock that rewrites
		// it in place, truncating it first) failed for that change: the heal backs off.
		if serr := still(""); serr != nil {
			return "", serr
		}
	}
	return dir, err
}

// lockPath takes the state directory's lock on path (see [state.LockPath]), and reports the
// step "path-busy" when another process holds it. The state directory is created first with
// its parent fsynced: the quarantine and the journal under it are only durable once the
// directory's own entry is (a power cut could otherwise take the whole tree away after a
// heal renamed over a session file).
func (e *Engine) lockPath(ctx context.Context, path string) (*state.PathLock, error) {
	if err := e.fs.MkdirAllSync(e.StateDir); err != nil {
		return nil, fmt.Errorf("state dir: %w", err)
	}
	return state.LockPath(ctx, e.StateDir, path, func() { e.step("path-busy", path) })
}

// quarantineLinked keeps the original of a replace in quarantine by giving its inode a second
// name there (see [state.Quarantine.PutLinked], [fsio.Dir.LinkAway]): no byte is copied,
// and the rename that follows leaves the original's bytes where they are, under that name
// alone. Only a replace links: a cut in place (a tail cut beside a writer, or under a lease)
// would cut the entry too, and copies. linked is false, and nothing is kept, where the file
// cannot be linked there (the state directory on another file system, a file of another
// user, one with other names, one changed since it was read): the caller copies. id is the
// file's identity once linked (its ctime and link count changed with the link), which the
// heal's later checks compare with.
func (e *Engine) quarantineLinked(m *Manifest, ed *edit, root string, now time.Time) (linked bool, id Identity, err error) {
	if ed.missing || ed.big == nil || ed.tailCut() || ed.big.oldSHA == "" {
		return false, Identity{}, nil
	}
	d, err := e.fs.OpenParent(root, ed.path)
	if err != nil {
		return false, Identity{}, nil // the copy says why, or finds it
	}
	defer d.Close()
	if d.Insecure() != "" {
		return false, Identity{}, nil
	}
	_, err = e.Quarantine.PutLinked(m, ed.oldID.Size, ed.big.oldSHA, func(dst string) (*os.File, error) {
		f, got, err := d.LinkAway(filepath.Base(ed.path), dst, ed.oldID)
		id = got
		return f, err
	}, now)
	if errors.Is(err, fsio.ErrNotLinked) {
		return false, Identity{}, nil
	}
	return err == nil, id, err
}
