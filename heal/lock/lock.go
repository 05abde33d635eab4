// Package lock takes the apps' own locks from outside, exactly as each app's
// protocol requires, so that the apps honour them.
//
// Four protocols are provided:
//
//   - [Flock]: flock(2) on a lock file (PraisonAI's FileLock, nanobot's
//     filelock with the inode re-check of cross-cutting rule 3).
//   - [OpenViking]: the PathLock tree token <sid>/.path.ovlock.
//   - [OpenClaw]: the O_EXCL JSON-body sidecars sessions.json.lock and
//     <transcript>.jsonl.lock.
//   - [LockFile]: a generic O_EXCL pid file for custom rules.
//
// Every acquire polls until Options.Wait has passed and then returns a
// [*BusyError] (the lock and its holder) that matches [ErrBusy] under errors.Is;
// cancelling the context stops the polling and returns ctx.Err(). With
// Options.Probe, an acquire only judges whether it could take the lock, writing
// nothing (a dry run's decision). Token files are only ever removed by
// compare-and-remove: the file must still hold the exact bytes (and be the
// same inode) that were read or written. Hold every lock briefly (rule 5).
package lock

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"syscall"
	"time"

	"github.com/sessionmedic/sessionmedic/internal/resolve"
	"golang.org/x/sys/unix"
)

// ErrBusy: the lock is held by someone live; back off and try later.
// Acquire functions return it wrapped with the lock path and the holder;
// test for it with errors.Is.
var ErrBusy = errors.New("lock busy")

// ErrLost is returned by Release or Refresh of a token lock when the lock file
// no longer holds our bytes (someone judged it stale and replaced or removed
// it). The file is left untouched.
var ErrLost = errors.New("lock no longer ours")

// Held is a lock we hold. Release is idempotent-safe to call once; it never
// unlinks a file that is not ours. Calling Release again returns nil.
type Held interface{ Release() error }

// Options common to all protocols.
type Options struct {
	Wait  time.Duration    // poll until this deadline, then ErrBusy (0 = try once)
	Poll  time.Duration    // poll interval, default 50ms
	Stale time.Duration    // token/lockfile protocols: age after which a lock is stale
	Now   func() time.Time // for tests; default time.Now
	// Faults, when set, is told of the durable publication of a lock file ("link", its
	// path) before it happens, as the heal's file operations are (see fsio.FS.Faults); an
	// error it returns fails the acquisition.
	Faults func(op, path string) error
	// Probe judges whether the lock could be taken, and takes nothing that writes: no lock
	// file is created, no token written, no stale one broken (a stale token is free). A flock
	// protocol opens an existing lock file read-only (a missing one is free) and tries the
	// flock it would take, let go at once. It returns a Held that holds nothing, or the busy
	// error the acquisition would have given (a dry run's liveness decision).
	Probe bool
}

// DefaultPoll is the poll interval used when Options.Poll is zero.
const DefaultPoll = 50 * time.Millisecond

func (o Options) now() time.Time {
	if o.Now != nil {
		return o.Now()
	}
	return time.Now()
}

func (o Options) poll() time.Duration {
	if o.Poll > 0 {
		return o.Poll
	}
	return DefaultPoll
}

func (o Options) stale(def time.Duration) time.Duration {
	if o.Stale > 0 {
		return o.Stale
	}
	return def
}

// probeFlock tries, for Options.Probe, the flock how on the lock file path without creating
// it: free (nil) when the file does not exist (where its directory does: the acquisition
// would create it) or the flock could be had (it is let go at once), a busy error naming
// holder when it is held.
func probeFlock(path string, how int, holder string) error {
	fd, err := openLock(path, unix.O_RDONLY, 0)
	if errors.Is(err, os.ErrNotExist) {
		if _, derr := resolve.Lstat(filepath.Dir(path)); derr != nil {
			return fmt.Errorf("flock %s: %w", path, err) // the acquisition's open fails as well
		}
		return nil
	}
	if err != nil {
		return fmt.Errorf("flock %s: %w", path, err)
	}
	ok, err := flockNB(fd, how)
	if ok {
		err = unlockClose(fd)
	} else {
		_ = unix.Close(fd)
	}
	switch {
	case err != nil:
		return fmt.Errorf("flock %s: %w", path, err)
	case !ok:
		return busy(path, holder)
	}
	return nil
}

// errRetry asks the poll loop to try again at once (the state changed under
// us, e.g. a stale lock was just broken or the flock'd inode was unlinked).
var errRetry = errors.New("retry")

// maxImmediate bounds back-to-back immediate retries before the loop sleeps.
const maxImmediate = 8

// BusyError is the busy verdict of a protocol: the lock (or the registry entry, the process,
// the directory) that said so, and what holds it. It matches [ErrBusy] under errors.Is; get
// it with errors.As to say who keeps a file busy.
type BusyError struct {
	Path   string // the lock file, registry entry or directory that said "busy"
	Holder string // who holds it and why that counts as live ("" when unknown)
}

func (e *BusyError) Error() string {
	if e.Holder == "" {
		return ErrBusy.Error() + ": " + e.Path
	}
	return ErrBusy.Error() + ": " + e.Path + " (" + e.Holder + ")"
}

// Is makes a BusyError an ErrBusy.
func (e *BusyError) Is(target error) bool { return target == ErrBusy }

func busy(path, holder string) error { return &BusyError{Path: path, Holder: holder} }

// acquire runs attempt until it succeeds, fails with an error other than
// ErrBusy/errRetry, the wait deadline passes or ctx is done. Deadlines use
// the real clock; Options.Now only feeds staleness judgements and tokens.
func acquire(ctx context.Context, o Options, path string, attempt func() (Held, error)) (Held, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	deadline := time.Now().Add(o.Wait)
	immediate := 0
	var last error
	for {
		h, err := attempt()
		if err == nil {
			return h, nil
		}
		switch {
		case errors.Is(err, errRetry):
			if immediate < maxImmediate {
				immediate++
				if cerr := ctx.Err(); cerr != nil {
					return nil, cerr
				}
				continue
			}
			if last == nil {
				last = busy(path, "lock file keeps changing")
			}
		case errors.Is(err, ErrBusy):
			last = err
		default:
			return nil, err
		}
		immediate = 0
		remaining := time.Until(deadline)
		if o.Wait <= 0 || remaining <= 0 {
			return nil, last
		}
		d := min(o.poll(), remaining)
		t := time.NewTimer(d)
		select {
		case <-ctx.Done():
			t.Stop()
			return nil, ctx.Err()
		case <-t.C:
		}
		if err := ctx.Err(); err != nil {
			return nil, err
		}
	}
}

// fileID names one inode.
type fileID struct {
	dev, ino uint64
}

func idOf(fi os.FileInfo) (fileID, bool) {
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return fileID{}, false
	}
	return fileID{dev: uint64(st.Dev), ino: st.Ino}, true
}

// maxTokenFile bounds how much of a lock file is read; every token body is
// tiny, so a larger file is compared by its first bytes plus its size.
const maxTokenFile = 64 << 10

// snapshot is what one read of a lock file saw.
type snapshot struct {
	data  []byte
	id    fileID
	mtime time.Time
	size  int64
}

// readSnapshot opens path (refusing a symlink), fstats the descriptor and
// reads the body, so data, inode and mtime belong together.
func readSnapshot(path string) (snapshot, error) {
	fd, err := openLock(path, unix.O_RDONLY, 0)
	if err != nil {
		return snapshot{}, err
	}
	f := os.NewFile(uintptr(fd), path)
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return snapshot{}, err
	}
	if !fi.Mode().IsRegular() {
		return snapshot{}, fmt.Errorf("lock file %s is not a regular file", path)
	}
	id, _ := idOf(fi)
	data, err := io.ReadAll(io.LimitReader(f, maxTokenFile))
	if err != nil {
		return snapshot{}, err
	}
	return snapshot{data: data, id: id, mtime: fi.ModTime(), size: fi.Size()}, nil
}

func (s snapshot) same(o snapshot) bool {
	return s.id == o.id && s.size == o.size && bytes.Equal(s.data, o.data)
}

// removeIfSame unlinks path only if it still is the inode of want and holds
// the same bytes. It reports whether it removed the file; a file that is
// already gone is reported as not removed with a nil error.
func removeIfSame(path string, want snapshot) (bool, error) {
	cur, err := readSnapshot(path)
	if err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return false, nil
		}
		return false, err
	}
	if !cur.same(want) {
		return false, nil
	}
	if err := resolve.Unlink(path); err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return false, nil
		}
		return false, err
	}
	return true, nil
}

// createExcl creates path holding body, failing with fs.ErrExist when it exists. Where the
// file system allows it (Linux, O_TMPFILE) the file is written and fsynced unnamed and then
// linked in: a crash or a power cut leaves it whole or absent, never empty or torn (an
// OpenViking locker that meets a token it cannot parse fails outright). Elsewhere it is
// created with O_EXCL, written and fsynced. It returns the snapshot of what it wrote.
func createExcl(path string, perm os.FileMode, body []byte, faults func(op, path string) error) (snapshot, error) {
	if snap, ok, err := publish(path, perm, body, faults); ok {
		return snap, err
	}
	fd, err := openLock(path, unix.O_WRONLY|unix.O_CREAT|unix.O_EXCL, uint32(perm.Perm()))
	if err != nil {
		return snapshot{}, err
	}
	f := os.NewFile(uintptr(fd), path)
	if err := giveToDir(fd, path); err != nil {
		f.Close()
		_ = resolve.Unlink(path)
		return snapshot{}, err
	}
	fi, serr := f.Stat()
	_, werr := f.Write(body)
	yerr := f.Sync()
	cerr := f.Close()
	if err := errors.Join(serr, werr, yerr, cerr); err != nil {
		if fi != nil {
			if id, ok := idOf(fi); ok {
				if cur, rerr := readSnapshot(path); rerr == nil && cur.id == id {
					_ = resolve.Unlink(path)
				}
			}
		}
		return snapshot{}, err
	}
	id, _ := idOf(fi)
	return snapshot{data: append([]byte(nil), body...), id: id, size: int64(len(body))}, nil
}
