package state

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"
)

// ErrUntrusted is what [CheckTrusted]'s errors are (errors.Is).
var ErrUntrusted = errors.New("not trusted")

// CheckTrusted says why dir cannot be trusted as the state directory of a process whose
// effective uid is uid, or nil (DESIGN §4 "Trust"): a manifest in it is read as a record of
// what was quarantined, a last-good copy as what a file held, a journal entry as a heal to
// finish; whoever can write there could make a privileged run write anywhere. So dir and
// everything in it must be owned by uid, writable by no one else, and no symlink; every
// directory above it must be owned by root or uid and writable by no one else (a sticky
// directory owned by root, such as /tmp, is allowed: no one else can rename entries in it;
// and, for a process that is not root, the root of a mount, such as a Kubernetes emptyDir,
// mode 0777 by design, which only the containers of one pod mount).
// A dir that does not exist yet is trusted when its nearest existing ancestor is: it is
// created owner-only. Directories above dir are read through their symlinks (/var/run ->
// /run), whose targets are checked in turn; dir itself and what is in it never may be one.
func CheckTrusted(dir string, uid int) error {
	dir = filepath.Clean(dir)
	fi, err := os.Lstat(dir)
	switch {
	case errors.Is(err, fs.ErrNotExist) || errors.Is(err, syscall.ENOTDIR):
		return checkAncestors(filepath.Dir(dir), uid)
	case err != nil:
		return err
	}
	if err := checkAncestors(filepath.Dir(dir), uid); err != nil {
		return err
	}
	if err := checkOwn(dir, fi, uid); err != nil {
		return err
	}
	if !fi.IsDir() {
		return nil // "not a directory" is said by whoever uses it
	}
	return filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if errors.Is(err, fs.ErrNotExist) {
			return nil // removed meanwhile (a heal beside a daemon, a pruned entry)
		}
		if err != nil {
			return err
		}
		if p == dir {
			return nil
		}
		fi, err := d.Info()
		if errors.Is(err, fs.ErrNotExist) {
			return nil // removed meanwhile (a finished heal's journal entry)
		}
		if err != nil {
			return err
		}
		if linkedEntry(dir, p, fi) {
			return nil
		}
		return checkOwn(p, fi, uid)
	})
}

// linkedEntry: p is the original bytes of a quarantine entry (quarantine/<day>/<id>/<name>,
// not its manifest), a regular file: a linked entry's file is the original's own inode (see
// Quarantine.PutLinked), whose owner and mode are the tree's user's. It is read as bytes,
// never as a record, and is reached only through the entry's directories, which must be the
// process's own like everything else: whoever can write it (a process that held the
// original open) could have written those bytes into the file anyway.
func linkedEntry(dir, p string, fi fs.FileInfo) bool {
	rel, err := filepath.Rel(dir, p)
	if err != nil {
		return false
	}
	parts := strings.Split(rel, string(filepath.Separator))
	if len(parts) != 4 || parts[0] != "quarantine" || parts[3] == "manifest.json" || strings.HasPrefix(parts[3], ".") {
		return false
	}
	return fi.Mode().IsRegular()
}

// checkOwn: p (lstat'ed as fi) is no symlink, no FIFO, socket or device, is owned by uid
// and writable by no one else.
func checkOwn(p string, fi fs.FileInfo, uid int) error {
	st, _ := fi.Sys().(*syscall.Stat_t)
	switch {
	case fi.Mode()&fs.ModeSymlink != 0:
		return untrusted(p, "is a symlink")
	case !fi.IsDir() && !fi.Mode().IsRegular():
		return untrusted(p, "is not a regular file or a directory")
	case st != nil && int(st.Uid) != uid:
		return untrusted(p, fmt.Sprintf("is owned by uid %d, not by this process's uid %d", st.Uid, uid))
	case fi.Mode().Perm()&0o022 != 0:
		return untrusted(p, fmt.Sprintf("is writable by group or others (mode %04o)", fi.Mode().Perm()))
	}
	return nil
}

// checkAncestors checks dir and every directory above it: owned by root or uid, and
// writable by no one else unless sticky and owned by root. A missing one is skipped (it
// will be created owner-only).
func checkAncestors(dir string, uid int) error {
	if real, err := evalExisting(dir); err == nil {
		dir = real
	}
	for p := dir; ; p = filepath.Dir(p) {
		fi, err := os.Stat(p)
		if err == nil {
			st, _ := fi.Sys().(*syscall.Stat_t)
			switch {
			case !fi.IsDir():
				// Said by whoever creates the state dir below it.
			case st != nil && st.Uid != 0 && int(st.Uid) != uid:
				return untrusted(p, fmt.Sprintf("(a directory above state_dir) is owned by uid %d, neither root nor this process's uid %d", st.Uid, uid))
			case fi.Mode().Perm()&0o022 != 0 && !(fi.Mode()&fs.ModeSticky != 0 && st != nil && st.Uid == 0) &&
				!(uid != 0 && mountRoot(p)):
				return untrusted(p, fmt.Sprintf("(a directory above state_dir) is writable by group or others (mode %04o)", fi.Mode().Perm()))
			}
		}
		if p == filepath.Dir(p) {
			return nil
		}
	}
}

// evalExisting resolves the symlinks of the longest existing prefix of p and appends the
// rest as it is.
func evalExisting(p string) (string, error) {
	if real, err := filepath.EvalSymlinks(p); err == nil {
		return real, nil
	}
	parent := filepath.Dir(p)
	if parent == p {
		return p, nil
	}
	real, err := evalExisting(parent)
	if err != nil {
		return "", err
	}
	return filepath.Join(real, filepath.Base(p)), nil
}

type untrustedErr struct{ path, why string }

func (e untrustedErr) Error() string        { return e.path + " " + e.why }
func (e untrustedErr) Is(target error) bool { return target == ErrUntrusted }

func untrusted(p, why string) error { return untrustedErr{p, why} }
