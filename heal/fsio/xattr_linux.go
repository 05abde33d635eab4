package fsio

import (
	"bytes"
	"errors"
	"fmt"

	"golang.org/x/sys/unix"
)

// copyXattrs gives the file open as to every extended attribute of the file open as from:
// the POSIX ACLs (system.posix_acl_access, as setfacl writes them) and the user.* ones an
// app or a backup tool set. It is done after the mode: an access ACL carries the group
// class bits (its mask) that a chmod would otherwise have narrowed or widened. An
// attribute the new file already has with the same value (a security label the kernel
// gave it) is left alone; one that cannot be set is an error, and the heal is refused.
func copyXattrs(from, to int) error {
	names, err := listXattrs(from)
	if err != nil {
		return err
	}
	for _, name := range names {
		val, err := getXattr(from, name)
		if errors.Is(err, unix.ENODATA) {
			continue // removed meanwhile
		}
		if err != nil {
			return fmt.Errorf("read extended attribute %s: %w", name, err)
		}
		if cur, err := getXattr(to, name); err == nil && bytes.Equal(cur, val) {
			continue
		}
		if err := unix.Fsetxattr(to, name, val, 0); err != nil {
			return fmt.Errorf("the healed file must keep extended attribute %s, and it cannot be set (%w): not healed", name, err)
		}
	}
	return nil
}

func listXattrs(fd int) ([]string, error) {
	for size := 256; ; size *= 4 {
		buf := make([]byte, size)
		n, err := unix.Flistxattr(fd, buf)
		switch {
		case errors.Is(err, unix.ENOTSUP):
			return nil, nil // the file system keeps none
		case errors.Is(err, unix.ERANGE) && size < 1<<20:
			continue
		case err != nil:
			return nil, fmt.Errorf("list extended attributes: %w", err)
		}
		var names []string
		for _, b := range bytes.Split(buf[:n], []byte{0}) {
			if len(b) > 0 {
				names = append(names, string(b))
			}
		}
		return names, nil
	}
}

func getXattr(fd int, name string) ([]byte, error) {
	for size := 256; ; size *= 4 {
		buf := make([]byte, size)
		n, err := unix.Fgetxattr(fd, name, buf)
		if errors.Is(err, unix.ERANGE) && size < 1<<20 {
			continue
		}
		if err != nil {
			return nil, err
		}
		return buf[:n], nil
	}
}
