package resolve

import (
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"

	"golang.org/x/sys/unix"
)

// What the lock protocols and the apps' cross-file reads do by path, through the resolver:
// never following a symlink below a rule root, and, run as root below a root another user
// owns, as that user (see [Open]).

// Lstat stats path without following a symlink anywhere below its rule root: a final
// symlink is reported as one (its own stat), a symlink on the way is ELOOP.
func Lstat(path string) (syscall.Stat_t, error) {
	var st syscall.Stat_t
	fd, err := Open(path, statOnly, 0)
	if err != nil {
		return st, &os.PathError{Op: "lstat", Path: path, Err: err}
	}
	defer syscall.Close(fd)
	if err := syscall.Fstat(fd, &st); err != nil {
		return st, &os.PathError{Op: "lstat", Path: path, Err: err}
	}
	return st, nil
}

// Unlink removes the name path from its directory, reached through the resolver, as the
// tree's owner when that applies.
func Unlink(path string) error {
	return At(path, "unlink", func(dfd int, name string) error {
		return unix.Unlinkat(dfd, name, 0)
	})
}

// At runs fn on path's directory (open through the resolver) and its last name, as the
// owner of path's rule root when run as root below a root another user owns. An error is
// reported as op's on path.
func At(path, op string, fn func(dfd int, name string) error) error {
	dir, name := filepath.Split(filepath.Clean(path))
	dfd, err := Open(filepath.Clean(dir), DirSearch, 0)
	if err != nil {
		return &os.PathError{Op: "open", Path: dir, Err: err}
	}
	defer syscall.Close(dfd)
	if err := AsOwnerOf(path, func() error { return fn(dfd, name) }); err != nil {
		return &os.PathError{Op: op, Path: path, Err: err}
	}
	return nil
}

// ReadDir lists the directory path (sorted by name), opened through the resolver.
func ReadDir(path string) ([]fs.DirEntry, error) {
	fd, err := Open(path, syscall.O_RDONLY|syscall.O_DIRECTORY, 0)
	if err != nil {
		return nil, &os.PathError{Op: "open", Path: path, Err: err}
	}
	f := os.NewFile(uintptr(fd), path)
	defer f.Close()
	ents, err := f.ReadDir(-1)
	slices.SortFunc(ents, func(a, b fs.DirEntry) int { return strings.Compare(a.Name(), b.Name()) })
	return ents, err
}

// OpenFile opens path as [Open] does, as an *os.File.
func OpenFile(path string, flags int, perm uint32) (*os.File, error) {
	fd, err := Open(path, flags, perm)
	if err != nil {
		return nil, &os.PathError{Op: "open", Path: path, Err: err}
	}
	return os.NewFile(uintptr(fd), path), nil
}

// Names lists the names in the directory path, opened through the resolver, reading no more
// than max entries (a directory its owner flooded costs no more than that): more is false
// when the listing stopped at max. Unsorted.
func Names(path string, max int) (names []string, more bool, err error) {
	fd, err := Open(path, syscall.O_RDONLY|syscall.O_DIRECTORY, 0)
	if err != nil {
		return nil, false, &os.PathError{Op: "open", Path: path, Err: err}
	}
	f := os.NewFile(uintptr(fd), path)
	defer f.Close()
	for len(names) < max {
		batch, err := f.Readdirnames(min(256, max-len(names)))
		names = append(names, batch...)
		if err == io.EOF || (err == nil && len(batch) == 0) {
			return names, false, nil
		}
		if err != nil {
			return names, false, err
		}
	}
	// Exactly max: one more read tells whether there is more.
	batch, _ := f.Readdirnames(1)
	return names, len(batch) > 0, nil
}

// ReadSmall is up to max bytes of the regular file at path, opened through the resolver and
// without blocking on a FIFO; whole is false when the file holds more. nil for anything that
// cannot be opened, or is not a regular file.
func ReadSmall(path string, max int64) (b []byte, whole bool) {
	f, err := OpenFile(path, syscall.O_RDONLY|syscall.O_NONBLOCK, 0)
	if err != nil {
		return nil, false
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil || !fi.Mode().IsRegular() {
		return nil, false
	}
	b, err = io.ReadAll(io.LimitReader(f, max))
	if err != nil {
		return nil, false
	}
	return b, fi.Size() <= max
}

// AsOwnerOf runs fn as the owner of path's rule root where this process acts as that owner
// there (run as root below a root another user owns: see [AsUser]), else as it is: the
// identity code outside this package (SQLite's own opens of a store and its sidecars) must
// use to reach a file below a rule root.
func AsOwnerOf(path string, fn func() error) error {
	_, ok, root := confinedRootOf(path)
	if root.refused != nil {
		return root.refused
	}
	if actsAs(ok, root) {
		return AsUser(root.uid, root.gid, fn)
	}
	return fn()
}
