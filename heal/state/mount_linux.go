package state

import "golang.org/x/sys/unix"

// mountRoot reports whether p is the root of a mount (statx STATX_ATTR_MOUNT_ROOT, Linux
// 5.8 and later; false where the kernel does not say).
func mountRoot(p string) bool {
	var stx unix.Statx_t
	if err := unix.Statx(unix.AT_FDCWD, p, unix.AT_SYMLINK_NOFOLLOW, 0, &stx); err != nil {
		return false
	}
	return stx.Attributes_mask&unix.STATX_ATTR_MOUNT_ROOT != 0 && stx.Attributes&unix.STATX_ATTR_MOUNT_ROOT != 0
}
