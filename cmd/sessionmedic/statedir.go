package main

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/sessionmedic/sessionmedic/heal/fsio"
	"github.com/sessionmedic/sessionmedic/heal/state"
	"golang.org/x/sys/unix"
)

// checkStateDir makes sure the policy's state_dir can be used before any file is looked at
// (DESIGN §8: an unusable state directory is a configuration error). With write (heal, run,
// quarantine restore) it is created if missing and proven writable with a probe file; without
// (check, heal -dry-run, quarantine list and show) nothing is written: it must be a readable
// directory, or be missing, whether or not it could be created (these commands write nothing
// there, so a state dir that does not exist only means no last-good copy and no quarantine
// entry).
func checkStateDir(dir string, write bool) error {
	// Only a state dir that is ours alone is used (DESIGN §4): whoever else could write in
	// it could forge the quarantine manifests, last-good copies and journal entries a heal or
	// a restore acts on. Checked before anything is created in it; again after, only where
	// the first look did not see all of it (it was missing, or could not be read whole):
	// the walk reads every entry of a quarantine that may hold thousands.
	if dir == "" {
		return configError{fmt.Errorf("state_dir %s: %w", dir, stateDirProblem(dir, write))}
	}
	untrusted := func(err error) error {
		return configError{fmt.Errorf("state_dir %s: not used: %w; %s", dir, err, untrustedHint)}
	}
	_, statErr := os.Lstat(dir)
	first := state.CheckTrusted(dir, os.Geteuid())
	if errors.Is(first, state.ErrUntrusted) {
		return untrusted(first)
	}
	// What is not about trust is said next, with the usual words.
	if err := stateDirProblem(dir, write); err != nil {
		return configError{fmt.Errorf("state_dir %s: %w", dir, err)}
	}
	if statErr == nil && first == nil {
		return nil
	}
	if err := state.CheckTrusted(dir, os.Geteuid()); err != nil {
		return untrusted(err)
	}
	return nil
}

// untrustedHint says what to do about a state dir that is not trusted.
const untrustedHint = "a state dir is used only when this process's uid owns it and everything in it, " +
	"no one else can write to it or to a directory above it, and it holds no symlink: " +
	"fix its owner or mode, or set state_dir to a directory of this user's own"

func stateDirProblem(dir string, write bool) error {
	if dir == "" {
		return errors.New("empty")
	}
	// The nearest existing ancestor (dir itself when it exists).
	p := dir
	var fi fs.FileInfo
	for {
		var err error
		if fi, err = os.Stat(p); err == nil {
			break
		}
		parent := filepath.Dir(p)
		if !errors.Is(err, fs.ErrNotExist) && !errors.Is(err, unix.ENOTDIR) || parent == p {
			return err
		}
		p = parent
	}
	switch {
	case p != dir && !write:
		return nil // missing: nothing kept yet, whether or not it could be created
	case !fi.IsDir() && p == dir:
		return errors.New("not a directory")
	case !fi.IsDir():
		return fmt.Errorf("%s is not a directory", p)
	case !write:
		if err := unix.Access(dir, unix.R_OK|unix.X_OK); err != nil {
			return fmt.Errorf("cannot be read: %w", err)
		}
		return nil
	}
	// Created with each new directory's parent fsynced: the quarantine and the journal under
	// it are only durable once its own entry is.
	if err := (fsio.FS{}).MkdirAllSync(dir); err != nil {
		return fmt.Errorf("cannot be created: %w", errno(err))
	}
	if err := probeWrite(dir); err != nil {
		return fmt.Errorf("cannot be written: %w", errno(err))
	}
	return nil
}

// probeNamed proves dir writable with a probe file it creates and removes.
func probeNamed(dir string) error {
	f, err := os.CreateTemp(dir, ".sessionmedic-probe-*")
	if err != nil {
		return err
	}
	f.Close()
	return os.Remove(f.Name())
}

// errno strips the operation and path of a *fs.PathError: the line names state_dir already.
func errno(err error) error {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return pe.Err
	}
	return err
}

// lockStateDir takes state_dir/lock (DESIGN §8: one daemon per state dir) and writes this
// process's pid into it. The lock lasts as long as the returned file stays open; the kernel
// drops it when the process dies, however it dies.
func lockStateDir(dir string) (*os.File, error) {
	path := filepath.Join(dir, "lock")
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE|unix.O_NOFOLLOW, 0o600)
	if err != nil {
		return nil, configError{fmt.Errorf("state_dir %s: lock: %w", dir, errno(err))}
	}
	if err := unix.Flock(int(f.Fd()), unix.LOCK_EX|unix.LOCK_NB); err != nil {
		f.Close()
		if errors.Is(err, unix.EWOULDBLOCK) {
			return nil, configError{fmt.Errorf("another sessionmedic (pid %s) is running on state_dir %s", lockHolder(path), dir)}
		}
		return nil, configError{fmt.Errorf("state_dir %s: lock: %w", dir, err)}
	}
	if err := f.Truncate(0); err == nil {
		_, err = f.WriteAt([]byte(strconv.Itoa(os.Getpid())+"\n"), 0)
	}
	if err != nil {
		f.Close()
		return nil, configError{fmt.Errorf("state_dir %s: lock: %w", dir, errno(err))}
	}
	return f, nil
}

// lockHolder reads the pid the lock's holder wrote, waiting briefly for a holder that has
// just taken the lock and not written it yet.
func lockHolder(path string) string {
	for range 50 {
		b, _ := os.ReadFile(path)
		if pid := strings.TrimSpace(string(b)); pid != "" {
			return pid
		}
		time.Sleep(10 * time.Millisecond)
	}
	return "unknown"
}
