package fsio

import "golang.org/x/sys/unix"

// readOnlyMount is EROFS when fd's mount is read-only (where faccessat2 is refused, as some
// container seccomp profiles do, the fallback only reads permission bits).
func readOnlyMount(fd int) error {
	var st unix.Statfs_t
	if err := unix.Fstatfs(fd, &st); err == nil && st.Flags&unix.ST_RDONLY != 0 {
		return unix.EROFS
	}
	return nil
}
