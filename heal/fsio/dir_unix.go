//go:build linux || darwin || freebsd

package fsio

import (
	"errors"
	"fmt"
	"os"
	"os/user"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"time"

	"github.com/sessionmedic/sessionmedic/internal/pathx"
	"golang.org/x/sys/unix"
)

// Dir is the directory of a file being replaced, opened by walking down from the rule's
// root one component at a time without following any symlink: a directory swapped for a
// symlink cannot send a write outside the root. Every later operation of the replace goes
// through its descriptor.
//
// The root itself is opened on the real path it was resolved to when the policy was loaded
// (see [Confine]), or as written when it is no rule root. StillThere walks again, so a
// directory moved meanwhile is noticed.
//
// Run as root, a Dir acts as the owner of the tree (DESIGN §4 "Trust"): the owner of the
// first directory, from the rule's root down, that root does not own (/home/alice of a rule
// over /home). Every file it creates, renames, links or unlinks goes through that user's
// file-system identity, so the kernel refuses what that user could not do, and what it
// creates is that user's. And it
// notes a directory on the way that someone else than its owner and root may write
// ([Dir.Insecure]): the caller refuses to heal there, as logrotate does.
type Dir struct {
	fd   int
	path string
	id   [2]uint64 // device and inode
	fs   FS        // what opened it: its faults are those of the writes through it

	asUID, asGID int    // the owner whose identity its writes take; -1 = the process's own
	insecure     string // why a directory on the way is not safe to write in, or ""
}

// ErrMoved: a directory between the root and the file is not the one it was.
var ErrMoved = errors.New("a directory on the way to the file was replaced or moved")

// OpenParent opens the directory of file, walking down from root (see [Dir]). A component
// that is a symlink or not a directory is an ErrMoved.
func (fs FS) OpenParent(root, file string) (*Dir, error) {
	return fs.openParent(root, file, os.Geteuid() == 0)
}

// openParent is OpenParent; with privileged, it also notes whose tree it is and whether a
// directory on the way is insecure (StillThere, which only compares identities, does not:
// it runs in the window between a heal's last check and its rename).
func (fs FS) openParent(root, file string, privileged bool) (*Dir, error) {
	dir := filepath.Dir(file)
	rel, ok := pathx.Rel(root, dir)
	if !ok {
		root, rel = dir, "."
	}
	// A confined root is opened on its real path, resolved when the policy was loaded, with
	// no symlink followed (see [Confine]); any other is opened as written.
	var fd int
	var err error
	if _, ok := confined(root); ok {
		fd, err = openPath(root, unix.O_RDONLY|unix.O_DIRECTORY, 0)
		if refusedDir(err) {
			return nil, fmt.Errorf("%s: %w", dir, ErrMoved)
		}
	} else {
		fd, err = unix.Open(root, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0) // follows a symlinked root
	}
	if err != nil {
		return nil, &os.PathError{Op: "open", Path: root, Err: err}
	}
	insecure := ""
	owner := [2]int{-1, -1} // the first directory on the way that root does not own: whose tree it is
	note := func(fd int, at string) {
		if !privileged {
			return
		}
		var st unix.Stat_t
		if err := unix.Fstat(fd, &st); err != nil {
			if insecure == "" {
				insecure = fmt.Sprintf("%s cannot be checked: %v", at, err)
			}
			return
		}
		if insecure == "" {
			insecure = insecureDir(&st, at)
		}
		if owner[0] < 0 && st.Uid != 0 {
			owner = [2]int{int(st.Uid), int(st.Gid)}
		}
	}
	note(fd, root)
	if rel != "." {
		at := root
		for _, c := range strings.Split(rel, "/") {
			nfd, err := unix.Openat(fd, c, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
			unix.Close(fd)
			if err != nil {
				if refusedDir(err) {
					return nil, fmt.Errorf("%s: %w", dir, ErrMoved)
				}
				return nil, &os.PathError{Op: "open", Path: dir, Err: err}
			}
			fd = nfd
			at = filepath.Join(at, c)
			note(fd, at)
		}
	}
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		unix.Close(fd)
		return nil, err
	}
	d := &Dir{fd: fd, path: dir, id: [2]uint64{uint64(st.Dev), st.Ino}, fs: fs, asUID: -1, asGID: -1, insecure: insecure}
	if privileged && actsAsOwner && owner[0] >= 0 {
		d.asUID, d.asGID = owner[0], owner[1]
	}
	return d, nil
}

// Insecure says why the file's directory, or one between the rule's root and it, may be
// written by someone other than its owner and root (run as root only), or "".
func (d *Dir) Insecure() string { return d.insecure }

// as runs fn with the directory owner's file-system identity (and gid as its group, when
// gid >= 0) when the Dir acts as the owner; else as the process.
func (d *Dir) as(gid int, fn func() error) error {
	if d.asUID < 0 {
		return fn()
	}
	if gid < 0 {
		gid = d.asGID
	}
	return asUser(d.asUID, gid, fn)
}

// refusedDir: openat with O_DIRECTORY|O_NOFOLLOW refused a component because it is not a
// directory (ENOTDIR) or is a symlink: ELOOP on Linux and macOS, EMLINK on older FreeBSD.
func refusedDir(err error) bool {
	switch err {
	case unix.ELOOP, unix.ENOTDIR:
		return true
	case unix.EMLINK:
		return runtime.GOOS == "freebsd"
	}
	return false
}

// Owner is the directory's owner, group and permission bits, read through its descriptor.
func (d *Dir) Owner() (uid, gid int, perm os.FileMode, err error) {
	var st unix.Stat_t
	if err := unix.Fstat(d.fd, &st); err != nil {
		return -1, -1, 0, &os.PathError{Op: "fstat", Path: d.path, Err: err}
	}
	return int(st.Uid), int(st.Gid), os.FileMode(st.Mode) & os.ModePerm, nil
}

// Close closes the directory's descriptor.
func (d *Dir) Close() { unix.Close(d.fd) }

// StillThere: walking from the root again reaches the same directory.
func (d *Dir) StillThere(root string) bool {
	again, err := d.fs.openParent(root, filepath.Join(d.path, "x"), false)
	if err != nil {
		return false
	}
	defer again.Close()
	return again.id == d.id
}

// OpenFile opens name in the directory, never following a symlink, as the directory's
// owner when the Dir acts as one.
func (d *Dir) OpenFile(name string, flag int, perm uint32) (*os.File, error) {
	return d.openFileAs(-1, name, flag, perm)
}

func (d *Dir) openFileAs(gid int, name string, flag int, perm uint32) (*os.File, error) {
	var fd int
	err := d.as(gid, func() (err error) {
		fd, err = unix.Openat(d.fd, name, flag|unix.O_NOFOLLOW|unix.O_CLOEXEC, perm)
		return err
	})
	if err != nil {
		return nil, &os.PathError{Op: "open", Path: filepath.Join(d.path, name), Err: err}
	}
	return os.NewFile(uintptr(fd), filepath.Join(d.path, name)), nil
}

// Rename renames from to to, both in the directory.
func (d *Dir) Rename(from, to string) error {
	if err := d.as(-1, func() error { return unix.Renameat(d.fd, from, d.fd, to) }); err != nil {
		return &os.LinkError{Op: "rename", Old: filepath.Join(d.path, from), New: filepath.Join(d.path, to), Err: err}
	}
	return nil
}

// Link links to to the file from, both in the directory; it never replaces to.
func (d *Dir) Link(from, to string) error {
	if err := d.as(-1, func() error { return unix.Linkat(d.fd, from, d.fd, to, 0) }); err != nil {
		return &os.LinkError{Op: "link", Old: filepath.Join(d.path, from), New: filepath.Join(d.path, to), Err: err}
	}
	return nil
}

// Stat is lstat of name in the directory.
func (d *Dir) Stat(name string) (Identity, error) {
	var st unix.Stat_t
	if err := unix.Fstatat(d.fd, name, &st, unix.AT_SYMLINK_NOFOLLOW); err != nil {
		return Identity{}, &os.PathError{Op: "stat", Path: filepath.Join(d.path, name), Err: err}
	}
	return identityOfUnixStat(&st), nil
}

// identityOfUnixStat is the identity of an x/sys/unix stat result. The conversions are for
// the BSDs' narrower fields (darwin: int32 Dev, uint16 Mode and Nlink); they match
// identityOfStat's, so the two identities of one file compare equal.
func identityOfUnixStat(st *unix.Stat_t) Identity {
	return Identity{
		Dev: uint64(st.Dev), Ino: st.Ino, Size: st.Size,
		Mtime: time.Unix(int64(st.Mtim.Sec), int64(st.Mtim.Nsec)), Ctime: time.Unix(int64(st.Ctim.Sec), int64(st.Ctim.Nsec)),
		Mode: uint32(st.Mode) & 0o777, UID: st.Uid, GID: st.Gid, Nlink: uint64(st.Nlink),
	}
}

// Unlink unlinks name from the directory.
func (d *Dir) Unlink(name string) error {
	if err := d.fs.fault("unlink", filepath.Join(d.path, name)); err != nil {
		return err
	}
	if err := d.as(-1, func() error { return unix.Unlinkat(d.fd, name, 0) }); err != nil {
		return &os.PathError{Op: "unlink", Path: filepath.Join(d.path, name), Err: err}
	}
	return nil
}

// Remove unlinks name from the directory, if it can.
func (d *Dir) Remove(name string) { _ = d.as(-1, func() error { return unix.Unlinkat(d.fd, name, 0) }) }

// Sync fsyncs the directory.
func (d *Dir) Sync() error {
	if err := d.fs.fault("fsync-dir", d.path); err != nil {
		return err
	}
	if err := unix.Fsync(d.fd); err != nil {
		return fmt.Errorf("fsync dir %s: %w", d.path, err)
	}
	return nil
}

// insecureDir says why the directory st describes (at path) may be written by someone other
// than its owner and root, or "": writable by others and not sticky, or writable by a group
// other than root's and its owner's own (the group of the same name as the owner, as a
// user-private-group system makes it).
func insecureDir(st *unix.Stat_t, path string) string {
	perm := st.Mode & 0o7777
	switch {
	case perm&0o002 != 0 && perm&unix.S_ISVTX == 0:
		return fmt.Sprintf("%s is writable by others (mode %04o)", path, perm)
	case perm&0o020 != 0 && st.Gid != 0 && !ownGroup(st.Uid, st.Gid):
		return fmt.Sprintf("%s is writable by group %d (mode %04o), not the owner's own", path, st.Gid, perm)
	}
	return ""
}

// ownGroup: gid is the primary group of uid and carries the user's name (a user-private
// group, which holds that user alone).
func ownGroup(uid, gid uint32) bool {
	u, err := user.LookupId(strconv.Itoa(int(uid)))
	if err != nil || u.Gid != strconv.Itoa(int(gid)) {
		return false
	}
	g, err := user.LookupGroupId(u.Gid)
	return err == nil && g.Name == u.Username
}

// Writable reports whether a heal could create, rename and unlink files in the directory,
// with the identity its writes take (the tree's owner, run as root): nil, or the refusal
// (EROFS for a read-only mount, a read-only bind mount included; EACCES for a directory
// that identity may not write). It writes nothing.
func (d *Dir) Writable() error {
	err := d.as(-1, func() error { return unix.Faccessat(d.fd, ".", unix.W_OK|unix.X_OK, unix.AT_EACCESS) })
	if err == nil {
		err = readOnlyMount(d.fd)
	}
	if err != nil {
		return &os.PathError{Op: "write", Path: d.path, Err: err}
	}
	return nil
}

// ActsAs is the uid whose identity the Dir's writes take: the tree's owner, run as root;
// else -1 (the process's own).
func (d *Dir) ActsAs() int { return d.asUID }

// ErrNotLinked: LinkAway made no second name for the file, because it is not the one the
// caller read, has other names already, or belongs to someone other than the tree's owner;
// or the file system refused (another file system, a user who may not link it).
var ErrNotLinked = errors.New("not linked")

// LinkAway gives the file name, in the directory, the second name dst, a path outside the
// tree (an entry of the process's own state directory), as the process: dst's directory is
// the process's, never the tree owner's. It links only the version want names (device,
// inode, size, mtime), and only a file that had no other name and belongs to the user whose
// tree it is (run as root: the owner the Dir acts as; else the process itself): a hard link
// swapped in from elsewhere, or a file of someone else, is never linked. It returns the file
// dst names, open for reading, and its identity once linked (its ctime and link count
// changed with the link). Any refusal is an ErrNotLinked, and leaves no dst.
func (d *Dir) LinkAway(name, dst string, want Identity) (*os.File, Identity, error) {
	owner := d.asUID
	if owner < 0 {
		owner = os.Geteuid()
	}
	var st unix.Stat_t
	if err := unix.Fstatat(d.fd, name, &st, unix.AT_SYMLINK_NOFOLLOW); err != nil {
		return nil, Identity{}, fmt.Errorf("%w: %v", ErrNotLinked, err)
	}
	if id := identityOfUnixStat(&st); st.Mode&unix.S_IFMT != unix.S_IFREG || !id.Same(want) || id.Nlink != 1 || int(id.UID) != owner {
		return nil, Identity{}, fmt.Errorf("%w: %s is not the version read with one name, of its tree's owner", ErrNotLinked, filepath.Join(d.path, name))
	}
	if err := d.fs.fault("link", dst); err != nil {
		return nil, Identity{}, err
	}
	if err := unix.Linkat(d.fd, name, unix.AT_FDCWD, dst, 0); err != nil {
		err := &os.LinkError{Op: "link", Old: filepath.Join(d.path, name), New: dst, Err: err}
		if linkRefused(err.Err) {
			return nil, Identity{}, fmt.Errorf("%w: %v", ErrNotLinked, err)
		}
		return nil, Identity{}, err // an I/O error, a full disk: the caller's to report
	}
	// linkat never follows a symlink at name: what dst names now is checked to be the file
	// checked above, unwritten since (a file swapped in between the two is unlinked again).
	f, err := os.OpenFile(dst, os.O_RDONLY|unix.O_NOFOLLOW|unix.O_NONBLOCK, 0)
	if err != nil {
		os.Remove(dst)
		return nil, Identity{}, fmt.Errorf("%w: %v", ErrNotLinked, err)
	}
	fi, err := f.Stat()
	id := Identity{}
	if err == nil {
		id = IdentityOf(fi)
	}
	if err != nil || !fi.Mode().IsRegular() || id.Dev != want.Dev || id.Ino != want.Ino || id.Size != want.Size || !id.Mtime.Equal(want.Mtime) || id.Nlink != 2 {
		f.Close()
		os.Remove(dst)
		return nil, Identity{}, fmt.Errorf("%w: %s changed as it was linked", ErrNotLinked, filepath.Join(d.path, name))
	}
	return f, id, nil
}

// linkRefused: linkat refused to link, as a file system or its rules may (another file
// system, a file the process may not link, too many links, no hard links there), which
// a copy does instead.
func linkRefused(err error) bool {
	switch {
	case errors.Is(err, unix.EXDEV), errors.Is(err, unix.EPERM), errors.Is(err, unix.EACCES),
		errors.Is(err, unix.EMLINK), errors.Is(err, unix.EOPNOTSUPP), errors.Is(err, unix.ENOTSUP):
		return true
	}
	return false
}

// Dup is a second descriptor of the open file f, closed on its own: a read that outlives the
// caller's descriptor (never a path looked up again).
func Dup(f *os.File) (*os.File, error) {
	fd, err := unix.FcntlInt(f.Fd(), unix.F_DUPFD_CLOEXEC, 0)
	if err != nil {
		return nil, &os.PathError{Op: "dup", Path: f.Name(), Err: err}
	}
	return os.NewFile(uintptr(fd), f.Name()), nil
}
