package fsio

import (
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

func identityOfStat(st *syscall.Stat_t) Identity {
	return Identity{
		Dev:   uint64(st.Dev),
		Ino:   st.Ino,
		Size:  st.Size,
		Mtime: time.Unix(st.Mtim.Sec, st.Mtim.Nsec),
		Ctime: time.Unix(st.Ctim.Sec, st.Ctim.Nsec),
		Mode:  st.Mode & 0o777,
		UID:   st.Uid,
		GID:   st.Gid,
		Nlink: uint64(st.Nlink),
	}
}

// statAtSynced states name in the directory dfd without following a symlink, as
// unix.Fstatat does, except that a network file system asks its server (statx's
// AT_STATX_FORCE_SYNC) instead of answering from attributes it cached, as an open would:
// an identity compared with a kept one must be today's. A kernel without statx falls back
// to fstatat.
func statAtSynced(dfd int, name string) (Identity, uint32, error) {
	var sx unix.Statx_t
	err := unix.Statx(dfd, name, unix.AT_SYMLINK_NOFOLLOW|unix.AT_STATX_FORCE_SYNC, unix.STATX_BASIC_STATS, &sx)
	if err == unix.ENOSYS {
		var st unix.Stat_t
		if err := unix.Fstatat(dfd, name, &st, unix.AT_SYMLINK_NOFOLLOW); err != nil {
			return Identity{}, 0, err
		}
		return identityOfUnixStat(&st), st.Mode & unix.S_IFMT, nil
	}
	if err != nil {
		return Identity{}, 0, err
	}
	return Identity{
		Dev:   unix.Mkdev(sx.Dev_major, sx.Dev_minor),
		Ino:   sx.Ino,
		Size:  int64(sx.Size),
		Mtime: time.Unix(sx.Mtime.Sec, int64(sx.Mtime.Nsec)),
		Ctime: time.Unix(sx.Ctime.Sec, int64(sx.Ctime.Nsec)),
		Mode:  uint32(sx.Mode) & 0o777,
		UID:   sx.Uid,
		GID:   sx.Gid,
		Nlink: uint64(sx.Nlink),
	}, uint32(sx.Mode) & unix.S_IFMT, nil
}
