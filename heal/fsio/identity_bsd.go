//go:build darwin || freebsd

package fsio

import (
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// identityOfStat: the syscall package names the times Mtimespec and Ctimespec here, and
// darwin's Dev, Mode and Nlink are narrower; the conversions match Dir.Stat's.
func identityOfStat(st *syscall.Stat_t) Identity {
	return Identity{
		Dev:   uint64(st.Dev),
		Ino:   st.Ino,
		Size:  st.Size,
		Mtime: time.Unix(int64(st.Mtimespec.Sec), int64(st.Mtimespec.Nsec)),
		Ctime: time.Unix(int64(st.Ctimespec.Sec), int64(st.Ctimespec.Nsec)),
		Mode:  uint32(st.Mode) & 0o777,
		UID:   st.Uid,
		GID:   st.Gid,
		Nlink: uint64(st.Nlink),
	}
}

// statAtSynced states name in the directory dfd without following a symlink (fstatat).
func statAtSynced(dfd int, name string) (Identity, uint32, error) {
	var st unix.Stat_t
	if err := unix.Fstatat(dfd, name, &st, unix.AT_SYMLINK_NOFOLLOW); err != nil {
		return Identity{}, 0, err
	}
	return identityOfUnixStat(&st), uint32(st.Mode) & unix.S_IFMT, nil
}
