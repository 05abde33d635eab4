//go:build linux || darwin || freebsd

package heal

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"time"

	"github.com/sessionmedic/sessionmedic/internal/pathx"
	"golang.org/x/sys/unix"
)

// parentDir is the directory of a file being replaced, opened by walking down from the rule's
// root one component at a time without following any symlink: a directory swapped for a
// symlink cannot send a write outside the root. Every later operation of the replace goes
// through its descriptor.
//
// The root itself is opened as the operator wrote it: a root that is a symlink (or has one
// on its way, /srv/link/app) is followed, there and only there, as the walk that found the
// file followed it. stillThere opens it again, so a root retargeted meanwhile is noticed.
type parentDir struct {
	fd   int
	path string
	id   [2]uint64 // device and inode
}

var errMoved = errors.New("a directory on the way to the file was replaced or moved")

func openParent(root, file string) (*parentDir, error) {
	dir := filepath.Dir(file)
	rel, ok := pathx.Rel(root, dir)
	if !ok {
		root, rel = dir, "."
	}
	fd, err := unix.Open(root, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0) // follows a symlinked root

	if err != nil {
		return nil, &os.PathError{Op: "open", Path: root, Err: err}
	}
	if rel != "." {
		for _, c := range strings.Split(rel, "/") {
			nfd, err := unix.Openat(fd, c, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
			unix.Close(fd)
			if err != nil {
				if refusedDir(err) {
					return nil, fmt.Errorf("%s: %w", dir, errMoved)
				}
				return nil, &os.PathError{Op: "open", Path: dir, Err: err}
			}
			fd = nfd
		}
	}
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		unix.Close(fd)
		return nil, err
	}
	return &parentDir{fd: fd, path: dir, id: [2]uint64{uint64(st.Dev), st.Ino}}, nil
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

func (d *parentDir) close() { unix.Close(d.fd) }

// stillThere: walking from the root again reaches the same directory.
func (d *parentDir) stillThere(root string) bool {
	again, err := openParent(root, filepath.Join(d.path, "x"))
	if err != nil {
		return false
	}
	defer again.close()
	return again.id == d.id
}

func (d *parentDir) openFile(name string, flag int, perm uint32) (*os.File, error) {
	fd, err := unix.Openat(d.fd, name, flag|unix.O_NOFOLLOW|unix.O_CLOEXEC, perm)
	if err != nil {
		return nil, &os.PathError{Op: "open", Path: filepath.Join(d.path, name), Err: err}
	}
	return os.NewFile(uintptr(fd), filepath.Join(d.path, name)), nil
}

func (d *parentDir) rename(from, to string) error {
	if err := unix.Renameat(d.fd, from, d.fd, to); err != nil {
		return &os.LinkError{Op: "rename", Old: filepath.Join(d.path, from), New: filepath.Join(d.path, to), Err: err}
	}
	return nil
}

func (d *parentDir) link(from, to string) error {
	if err := unix.Linkat(d.fd, from, d.fd, to, 0); err != nil {
		return &os.LinkError{Op: "link", Old: filepath.Join(d.path, from), New: filepath.Join(d.path, to), Err: err}
	}
	return nil
}

// stat is lstat of name in the directory.
func (d *parentDir) stat(name string) (Identity, error) {
	var st unix.Stat_t
	if err := unix.Fstatat(d.fd, name, &st, unix.AT_SYMLINK_NOFOLLOW); err != nil {
		return Identity{}, &os.PathError{Op: "stat", Path: filepath.Join(d.path, name), Err: err}
	}
	// The conversions are for the BSDs' narrower fields (darwin: int32 Dev, uint16 Mode and
	// Nlink); they match identityOfStat's, so the two identities of one file compare equal.
	return Identity{
		Dev: uint64(st.Dev), Ino: st.Ino, Size: st.Size,
		Mtime: time.Unix(int64(st.Mtim.Sec), int64(st.Mtim.Nsec)), Ctime: time.Unix(int64(st.Ctim.Sec), int64(st.Ctim.Nsec)),
		Mode: uint32(st.Mode) & 0o777, UID: st.Uid, GID: st.Gid, Nlink: uint64(st.Nlink),
	}, nil
}

func (d *parentDir) remove(name string) { _ = unix.Unlinkat(d.fd, name, 0) }

func (d *parentDir) sync() error {
	if err := fault("fsync-dir", d.path); err != nil {
		return err
	}
	if err := unix.Fsync(d.fd); err != nil {
		return fmt.Errorf("fsync dir %s: %w", d.path, err)
	}
	return nil
}
