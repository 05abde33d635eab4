package fsio

import (
	"fmt"
	"os"
	"syscall"

	"github.com/sessionmedic/sessionmedic/internal/resolve"
)

// The resolver lives in internal/resolve, so that the lock protocols (heal/lock) open their
// files through the same one; these are its names here.

// Confine registers root as a rule root and resolves it now (see [resolve.Confine]).
func Confine(root string) { resolve.Confine(root) }

// RealPath is path on its rule root's real path (see [resolve.RealPath]).
func RealPath(path string) string { return resolve.RealPath(path) }

// ErrForeignLink: a file with more than one link whose owner is not its directory's. The
// tree's user may have hard-linked another user's file into it; it is never read.
var ErrForeignLink = resolve.ErrForeignLink

const (
	actsAsOwner = resolve.ActsAsOwner
	dirSearch   = resolve.DirSearch
)

func openPath(path string, flags int, perm uint32) (int, error) {
	return resolve.Open(path, flags, perm)
}
func confined(path string) (string, bool)              { return resolve.Confined(path) }
func asUser(uid, gid int, fn func() error) error       { return resolve.AsUser(uid, gid, fn) }
func foreignLink(path string, st *syscall.Stat_t) bool { return resolve.ForeignLink(path, st) }

// loopErr turns the ELOOP of an open of path into what it means: the file itself is a
// symlink ([ErrNotRegular]) or a directory on the way is one ([ErrMoved]).
func loopErr(path string) error {
	if fi, err := os.Lstat(path); err == nil && fi.Mode()&os.ModeSymlink != 0 {
		return ErrNotRegular
	}
	return &os.PathError{Op: "open", Path: path, Err: fmt.Errorf("%w (a symlink on the way)", ErrMoved)}
}

// AsOwnerOf runs fn as the owner of path's rule root when run as root below a root another
// user owns, else as it is (see [resolve.AsOwnerOf]).
func AsOwnerOf(path string, fn func() error) error { return resolve.AsOwnerOf(path, fn) }
