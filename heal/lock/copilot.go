package lock

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"path/filepath"
	"regexp"
	"sort"

	"github.com/sessionmedic/sessionmedic/internal/resolve"
	"golang.org/x/sys/unix"
)

// GitHub Copilot CLI (copilot-cli.md, "Lock protocol and liveness"): while a process has a
// session open it holds flock(LOCK_EX) on <session>/inuse.<pid>.hold for its life; every
// load or send of a session is done under flock(LOCK_EX) of
// <session-state>/.session-operation-locks/<id>.lock (created 0666 and never unlinked). The
// inuse files' presence means nothing (a dead process leaves them, the next run removes
// them): only the flocks do.

var copilotHoldRe = regexp.MustCompile(`^inuse\.([0-9]+)\.hold$`)

// CopilotMaxEntries bounds the entries of a session directory read to find its holds.
const CopilotMaxEntries = 4096

// copilotMaxHolds bounds the inuse.*.hold files looked at in one session directory: more is
// not a shape Copilot leaves, and is busy.
const copilotMaxHolds = 64

// CopilotLive reports whether a Copilot CLI process has the session in dir open: some
// inuse.<pid>.hold in it is flocked (tried with flock(LOCK_EX|LOCK_NB) and let go at once
// when had). why names the file. A hold that is a symlink, or not a regular file, is
// live: it is nothing Copilot made, and nothing to open.
func CopilotLive(dir string) (live bool, why string, err error) {
	names, more, err := resolve.Names(dir, CopilotMaxEntries)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return false, "", nil
		}
		return false, "", err
	}
	if more {
		return true, fmt.Sprintf("%s has more than %d entries: Copilot leaves a handful; not judged", dir, CopilotMaxEntries), nil
	}
	var holds []string
	for _, name := range names {
		if copilotHoldRe.MatchString(name) {
			holds = append(holds, name)
		}
	}
	if len(holds) > copilotMaxHolds {
		return true, fmt.Sprintf("%d inuse.*.hold files in %s (more than %d: not judged)", len(holds), dir, copilotMaxHolds), nil
	}
	sort.Strings(holds)
	for _, name := range holds {
		p := filepath.Join(dir, name)
		fd, err := openLock(p, unix.O_RDONLY, 0)
		if errors.Is(err, fs.ErrNotExist) {
			continue // its process ended and removed it
		}
		if err != nil {
			return true, fmt.Sprintf("%s cannot be tried (%v)", p, err), nil
		}
		ok, err := flockNB(fd, unix.LOCK_EX)
		if ok {
			err = unlockClose(fd)
		} else {
			_ = unix.Close(fd)
		}
		if err != nil {
			return false, "", fmt.Errorf("flock %s: %w", p, err)
		}
		if !ok {
			pid := copilotHoldRe.FindStringSubmatch(name)[1]
			return true, "Copilot CLI process " + pid + " has the session open (" + p + " is locked)", nil
		}
	}
	return false, "", nil
}

// Copilot takes the session's operation lock as Copilot does, after and again under it
// checking that no Copilot process has the session open ([CopilotLive]): flock
// LOCK_EX|LOCK_NB on <session-state>/.session-operation-locks/<id>.lock, opened O_WRONLY
// (created 0644, given to the directory's owner, when missing; never unlinked). Busy is
// polled until o.Wait. When .session-operation-locks does not exist (no Copilot ever loaded
// a session there) only liveness is checked and nothing is held; one that is a symlink or
// not a directory is an error. dir is the session directory, whose base name is id.
func Copilot(ctx context.Context, dir, id string, o Options) (Held, error) {
	if !codexThreadIDRe.MatchString(id) || filepath.Base(dir) != id {
		return nil, fmt.Errorf("copilot session lock: %q is not a session directory", dir)
	}
	locks := filepath.Join(filepath.Dir(dir), ".session-operation-locks")
	opLock := filepath.Join(locks, id+".lock")
	return acquire(ctx, o, filepath.Join(dir, "events.jsonl"), func() (Held, error) {
		if live, why, err := CopilotLive(dir); err != nil || live {
			if err != nil {
				return nil, err
			}
			return nil, busy(dir, why)
		}
		st, err := resolve.Lstat(locks)
		switch {
		case errors.Is(err, fs.ErrNotExist):
			return nothingHeld{}, nil
		case err != nil:
			return nil, err
		case st.Mode&unix.S_IFMT != unix.S_IFDIR:
			return nil, fmt.Errorf("copilot operation locks %s: not a directory", locks)
		}
		if o.Probe {
			if err := probeFlock(opLock, unix.LOCK_EX, "a Copilot CLI process is loading or sending the session"); err != nil {
				return nil, err
			}
			return nothingHeld{}, nil
		}
		fd, err := openOrCreate(opLock, unix.O_WRONLY, 0o644)
		if err != nil {
			return nil, err
		}
		ok, err := flockNB(fd, unix.LOCK_EX)
		if err != nil || !ok {
			_ = unix.Close(fd)
			if err != nil {
				return nil, fmt.Errorf("flock %s: %w", opLock, err)
			}
			return nil, busy(opLock, "a Copilot CLI process is loading or sending the session")
		}
		h := &flockHeld{fd: fd} // LOCK_UN and close on Release; the file stays
		if live, why, err := CopilotLive(dir); err != nil || live {
			rerr := h.Release()
			if err != nil {
				return nil, errors.Join(err, rerr)
			}
			return nil, errors.Join(busy(dir, why), rerr)
		}
		return h, nil
	})
}
