package fsio

import (
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// Identity pins the exact version of a file that was read: if any field moved, the app
// touched the file and every plan made from the old bytes is void.
type Identity struct {
	Dev   uint64    `json:"dev"`
	Ino   uint64    `json:"ino"`
	Size  int64     `json:"size"`
	Mtime time.Time `json:"mtime"`
	Ctime time.Time `json:"ctime"`
	Mode  uint32    `json:"mode"`
	UID   uint32    `json:"uid"`
	GID   uint32    `json:"gid"`
	Nlink uint64    `json:"nlink"`
}

// IdentityOf is the identity a stat result shows.
func IdentityOf(fi os.FileInfo) Identity {
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return Identity{Size: fi.Size(), Mtime: fi.ModTime(), Mode: uint32(fi.Mode().Perm())}
	}
	return identityOfStat(st)
}

// SameWrite reports whether two identities name the same inode, not written since: a rename
// changes its ctime (and link count), only a write its size or mtime.
func (a Identity) SameWrite(b Identity) bool {
	return a.Ino == b.Ino && a.Size == b.Size && a.Mtime.Equal(b.Mtime)
}

// Same reports whether two identities name the same, unchanged file version.
func (a Identity) Same(b Identity) bool {
	return a.Dev == b.Dev && a.Ino == b.Ino && a.Size == b.Size &&
		a.Mtime.Equal(b.Mtime) && a.Ctime.Equal(b.Ctime)
}

// StatIdentity is the identity now at path (without following a symlink).
// Below a confined root its directory is reached through the resolver (see [Confine]).
func StatIdentity(path string) (Identity, error) {
	if _, ok := confined(path); !ok {
		fi, err := os.Lstat(path)
		if err != nil {
			return Identity{}, err
		}
		if !fi.Mode().IsRegular() {
			return Identity{}, ErrNotRegular
		}
		return IdentityOf(fi), nil
	}
	dfd, err := openPath(filepath.Dir(path), dirSearch, 0)
	if err != nil {
		if err == syscall.ELOOP || err == syscall.ENOTDIR {
			err = fmt.Errorf("%w (a symlink on the way)", ErrMoved)
		}
		return Identity{}, &os.PathError{Op: "stat", Path: path, Err: err}
	}
	defer syscall.Close(dfd)
	var st unix.Stat_t
	if err := unix.Fstatat(dfd, filepath.Base(path), &st, unix.AT_SYMLINK_NOFOLLOW); err != nil {
		return Identity{}, &os.PathError{Op: "stat", Path: path, Err: err}
	}
	if st.Mode&unix.S_IFMT != unix.S_IFREG {
		return Identity{}, ErrNotRegular
	}
	return identityOfUnixStat(&st), nil
}

// DirEntryIdentity is an entry of a directory listing with its identity, or the error of its
// stat (ErrNotRegular: not a regular file).
type DirEntryIdentity struct {
	fs.DirEntry
	ID  Identity
	Err error
}

// ReadDirIdentities lists the directory dir, sorted by name, opened through the resolver as
// a listing is (resolve.ReadDir), with the directory's own identity, and states each entry
// keep accepts as StatIdentity does (without following a symlink; anything but a regular
// file is ErrNotRegular), all through that one descriptor: a caller that stats every file
// of a directory pays one open and one stat a file, not an open of the directory for each.
// On Linux the stats are statx's synced ones (statAtSynced): a network file system's
// identity is its server's now, as an open's is, never attributes it cached.
func ReadDirIdentities(dir string, keep func(fs.DirEntry) bool) ([]DirEntryIdentity, Identity, error) {
	fd, err := openPath(dir, syscall.O_RDONLY|syscall.O_DIRECTORY, 0)
	if err != nil {
		return nil, Identity{}, &os.PathError{Op: "open", Path: dir, Err: err}
	}
	f := os.NewFile(uintptr(fd), dir)
	defer f.Close()
	var dst unix.Stat_t
	if err := unix.Fstat(fd, &dst); err != nil {
		return nil, Identity{}, &os.PathError{Op: "fstat", Path: dir, Err: err}
	}
	list, err := f.ReadDir(-1)
	if err != nil {
		return nil, Identity{}, err
	}
	slices.SortFunc(list, func(a, b fs.DirEntry) int { return strings.Compare(a.Name(), b.Name()) })
	var ents []DirEntryIdentity
	for _, e := range list {
		if !keep(e) {
			continue
		}
		d := DirEntryIdentity{DirEntry: e}
		id, typ, err := statAtSynced(fd, e.Name())
		switch {
		case err != nil:
			d.Err = &os.PathError{Op: "stat", Path: filepath.Join(dir, e.Name()), Err: err}
		case typ != unix.S_IFREG:
			d.Err = ErrNotRegular
		default:
			d.ID = id
		}
		ents = append(ents, d)
	}
	return ents, identityOfUnixStat(&dst), nil
}
