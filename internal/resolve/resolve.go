// Package resolve is sessionmedic's one resolver (DESIGN §4 "Trust"): every open of a
// path below a rule root, by any package, is made here.
package resolve

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"

	"github.com/sessionmedic/sessionmedic/internal/pathx"
)

// The resolver (DESIGN §4 "Trust"). The users whose trees are watched are not trusted: a
// symlink they put anywhere below a rule's root (a directory swapped for a link to another
// user's tree during a settle or a walk) must never lead a read or a write out of it. So a
// rule root is resolved once, when a policy is loaded ([Confine]): a root the operator
// wrote as a symlink (or with one on its way) keeps working, and is from then on reached by
// its real path. Every open of a path below a confined root goes through [Open]: the
// path is rewritten onto the root's real path and opened without following a symlink in
// any component (Linux openat2 RESOLVE_NO_SYMLINKS; elsewhere a walk from / with
// O_NOFOLLOW at each step). A root that is swapped afterwards changes nothing: its real
// path is used until the next load. Paths under no confined root (a file named on the
// command line without a rule) keep the plain open that refuses only a final symlink.

type confinedRoot struct {
	given, real string // real is "" until the root exists
	uid, gid    int    // the real root's owner when it is not root's, else -1
	refused     error  // the root is reached through a symlink that may not lead there (evalRoot)
}

// UnsafeLinkError: a rule root reached through a symlink owned by a user (not root) that
// leads to a directory another uid owns. Its owner may have made it to turn a rule meant
// for their own tree on someone else's (or root's) tree: nothing below the root is opened
// until the link is gone and the policy is loaded again. (systemd's CHASE_SAFE refuses the
// same transitions.)
type UnsafeLinkError struct {
	Root, Link         string
	LinkUID, TargetUID uint32
}

func (e *UnsafeLinkError) Error() string {
	return fmt.Sprintf("rule root %s is reached through the symlink %s, owned by uid %d, into a directory owned by uid %d: refused (a user's link may only lead into their own tree; make the link root's or name the real directory in the policy)",
		e.Root, e.Link, e.LinkUID, e.TargetUID)
}

// maxHops bounds the symlinks followed resolving a root, as the kernel's 40.
const maxHops = 40

// evalRoot resolves the rule root root (absolute, clean) as filepath.EvalSymlinks does, and
// refuses every symlink on the way that is owned by neither root nor the owner of the
// directory it leads to ([UnsafeLinkError]).
func evalRoot(root string) (string, error) {
	real := "/"
	rest := strings.Split(strings.Trim(root, "/"), "/")
	hops := 0
	for len(rest) > 0 {
		c := rest[0]
		rest = rest[1:]
		switch c {
		case "", ".":
			continue
		case "..":
			real = filepath.Dir(real)
			continue
		}
		p := filepath.Join(real, c)
		var st syscall.Stat_t
		if err := syscall.Lstat(p, &st); err != nil {
			return "", &os.PathError{Op: "lstat", Path: p, Err: err}
		}
		if st.Mode&syscall.S_IFMT != syscall.S_IFLNK {
			real = p
			continue
		}
		if hops++; hops > maxHops {
			return "", &os.PathError{Op: "resolve", Path: root, Err: syscall.ELOOP}
		}
		dest, err := os.Readlink(p)
		if err != nil {
			return "", err
		}
		var tst syscall.Stat_t
		if err := syscall.Stat(p, &tst); err != nil {
			return "", &os.PathError{Op: "stat", Path: p, Err: err}
		}
		if st.Uid != 0 && st.Uid != tst.Uid {
			return "", &UnsafeLinkError{Root: root, Link: p, LinkUID: st.Uid, TargetUID: tst.Uid}
		}
		if filepath.IsAbs(dest) {
			real = "/"
		}
		rest = append(strings.Split(dest, "/"), rest...)
	}
	return real, nil
}

// ownerOf is the owner of the directory real when it is not root's, else -1, -1.
func ownerOf(real string) (int, int) {
	var st syscall.Stat_t
	if real == "" || syscall.Stat(real, &st) != nil || st.Uid == 0 {
		return -1, -1
	}
	return int(st.Uid), int(st.Gid)
}

// confinement is the registry of rule roots, by their path as given and by their real
// path: a lookup walks up from the path, so it costs the path's depth, however many roots
// were ever registered (a daemon reloading for months, a test suite making thousands).
var confinement struct {
	sync.RWMutex
	byGiven map[string]*confinedRoot
	byReal  map[string]*confinedRoot
}

// Confine registers root as a rule root and resolves it now (again if it was registered
// before: a reload is a new resolution). A root that does not exist yet is resolved when it
// is first used.
func Confine(root string) {
	if root == "" || !filepath.IsAbs(root) {
		return
	}
	root = filepath.Clean(root)
	real, uid, gid, refused := resolveRoot(root)
	confinement.Lock()
	defer confinement.Unlock()
	if confinement.byGiven == nil {
		confinement.byGiven, confinement.byReal = map[string]*confinedRoot{}, map[string]*confinedRoot{}
	}
	r := confinement.byGiven[root]
	if r == nil {
		r = &confinedRoot{given: root}
		confinement.byGiven[root] = r
	}
	setReal(r, real, uid, gid)
	r.refused = refused
}

// resolveRoot resolves the rule root given (evalRoot): its real path and owner (ownerOf), or
// "" when it is not there, or why it is refused ([UnsafeLinkError]).
func resolveRoot(given string) (real string, uid, gid int, refused error) {
	real, err := evalRoot(given)
	var unsafe *UnsafeLinkError
	if errors.As(err, &unsafe) {
		return "", -1, -1, unsafe
	}
	if err != nil {
		return "", -1, -1, nil
	}
	uid, gid = ownerOf(real)
	return real, uid, gid, nil
}

// setReal gives r its real path and owner (under the write lock).
func setReal(r *confinedRoot, real string, uid, gid int) {
	if r.real != "" && confinement.byReal[r.real] == r {
		delete(confinement.byReal, r.real)
	}
	r.real, r.uid, r.gid = real, uid, gid
	if real != "" {
		confinement.byReal[real] = r
	}
}

// Confined returns path on its root's real path, and whether it is below a confined root.
func Confined(path string) (string, bool) {
	real, ok, _ := confinedRootOf(path)
	return real, ok
}

// parentOf is filepath.Dir of a clean absolute path, without cleaning it again (a check
// looks up every directory above each file it opens).
func parentOf(p string) string {
	i := strings.LastIndexByte(p, '/')
	if i <= 0 {
		return "/"
	}
	return p[:i]
}

// confinedRootOf is Confined, also returning the root it is below (a copy).
func confinedRootOf(path string) (string, bool, confinedRoot) {
	if !filepath.IsAbs(path) {
		return path, false, confinedRoot{}
	}
	path = filepath.Clean(path)
	var r confinedRoot
	base := ""
	confinement.RLock()
	for p := path; ; p = parentOf(p) {
		if hit := confinement.byGiven[p]; hit != nil {
			r, base = *hit, p
			break
		}
		if hit := confinement.byReal[p]; hit != nil {
			r, base = *hit, p
			break
		}
		if p == "/" {
			break
		}
	}
	confinement.RUnlock()
	if base == "" {
		return path, false, confinedRoot{}
	}
	rel, _ := pathx.Rel(base, path)
	if r.refused != nil {
		return path, true, r
	}
	if r.real == "" {
		real, uid, gid, refused := resolveRoot(r.given)
		if refused != nil {
			r.refused = refused
			return path, true, r
		}
		if real == "" {
			return path, true, r // the root is not there: opening below it fails as it should
		}
		confinement.Lock()
		if cur := confinement.byGiven[r.given]; cur != nil && cur.real == "" {
			setReal(cur, real, uid, gid)
		}
		confinement.Unlock()
		r.real, r.uid, r.gid = real, uid, gid
	}
	if rel == "." {
		return r.real, true, r
	}
	return filepath.Join(r.real, filepath.FromSlash(rel)), true, r
}

// RealPath is path on its rule root's real path (resolved when the policy was loaded), or
// path itself below no confined root: the name of the file a read of path reaches.
func RealPath(path string) string {
	real, _ := Confined(path)
	return real
}

// actsAs: below root (ok: below a confined root at all), this process acts as the root's
// owner — it runs as root, and another user owns the root.
func actsAs(ok bool, root confinedRoot) bool {
	return ok && root.uid > 0 && ActsAsOwner && os.Geteuid() == 0
}

// ErrForeignLink: a file with more than one link whose owner is not its directory's. The
// tree's user may have hard-linked another user's file into it; it is never read.
var ErrForeignLink = errors.New("a hard link to a file its directory's owner does not own: not read")

// Open opens path with flags (O_NOFOLLOW and O_CLOEXEC are added), through the resolver
// when it is below a confined root. A symlink met anywhere on the way there is refused:
// ELOOP, as O_NOFOLLOW gives for a final one.
//
// Run as root below a root another user owns, the open is made as that user (see [AsUser]):
// root never reads there what the tree's user could not, so no byte of a file they cannot
// read (root's, hard-linked or left in their tree) can reach them through a heal.
func Open(path string, flags int, perm uint32) (int, error) {
	real, ok, root := confinedRootOf(path)
	if root.refused != nil {
		return -1, root.refused
	}
	asOwner := actsAs(ok, root)
	for {
		var fd int
		var err error
		switch {
		case asOwner:
			// The root is reached as root (the directories above it are the operator's),
			// what is below it as its owner.
			var rfd int
			if rfd, err = openNoSymlinks(root.real, DirSearch|syscall.O_CLOEXEC, 0); err != nil {
				break
			}
			rel, _ := pathx.Rel(root.real, real)
			err = AsUser(root.uid, root.gid, func() (err error) {
				fd, err = openBeneath(rfd, rel, flags|syscall.O_NOFOLLOW|syscall.O_CLOEXEC, perm)
				return err
			})
			syscall.Close(rfd)
		case ok:
			fd, err = openNoSymlinks(real, flags|syscall.O_NOFOLLOW|syscall.O_CLOEXEC, perm)
		default:
			fd, err = syscall.Open(path, flags|syscall.O_NOFOLLOW|syscall.O_CLOEXEC, perm)
		}
		if err == syscall.EINTR {
			continue
		}
		return fd, err
	}
}

// ForeignLink reports whether st, of the file at path, is a hard link the tree's user may
// have made to someone else's file: more than one link, and an owner other than the owner
// of the directory it was reached through.
func ForeignLink(path string, st *syscall.Stat_t) bool {
	if st.Nlink <= 1 {
		return false
	}
	dfd, err := Open(filepath.Dir(path), syscall.O_RDONLY|syscall.O_DIRECTORY, 0)
	if err != nil {
		return true // cannot tell: not read
	}
	defer syscall.Close(dfd)
	var dst syscall.Stat_t
	if err := syscall.Fstat(dfd, &dst); err != nil {
		return true
	}
	return dst.Uid != st.Uid
}

// RootRefused is the reason the rule root root (as the policy gives it) is not used: an
// [UnsafeLinkError] on the way to it, or nil.
func RootRefused(root string) error {
	_, _, r := confinedRootOf(filepath.Clean(root))
	if r.refused != nil && r.given == filepath.Clean(root) {
		return r.refused
	}
	return nil
}
