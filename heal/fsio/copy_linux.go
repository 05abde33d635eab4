package fsio

import (
	"errors"
	"os"

	"golang.org/x/sys/unix"
)

// kernelCopy copies up to n bytes of src at off to dst at dst's offset with
// copy_file_range(2), and says how many it copied. A kernel or file system that cannot
// (ENOSYS, EXDEV, EINVAL, EOPNOTSUPP, EPERM, EIO from some FUSE and network file systems, or
// a first call that copies nothing) leaves the rest to the caller's buffered copy, with no
// error; so does a source that ends early (the buffered copy then tells ErrUnexpectedEOF).
func kernelCopy(dst, src *os.File, off, n int64) (int64, error) {
	sfd, dfd := int(src.Fd()), int(dst.Fd())
	var done int64
	for done < n {
		o := off + done
		k, err := unix.CopyFileRange(sfd, &o, dfd, nil, int(min(n-done, 1<<30)), 0)
		if errors.Is(err, unix.EINTR) {
			continue
		}
		if err != nil {
			if done == 0 && fallback(err) {
				return 0, nil
			}
			return done, &os.PathError{Op: "copy_file_range", Path: dst.Name(), Err: err}
		}
		if k == 0 {
			return done, nil // the source ends here (or the kernel copies nothing of it)
		}
		done += int64(k)
	}
	return done, nil
}

func fallback(err error) bool {
	for _, e := range []error{unix.ENOSYS, unix.EXDEV, unix.EINVAL, unix.EOPNOTSUPP, unix.EPERM, unix.EIO, unix.EBADF} {
		if errors.Is(err, e) {
			return true
		}
	}
	return false
}
