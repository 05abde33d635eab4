package fsio

import (
	"syscall"
	"time"
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
