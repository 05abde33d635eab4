package fsio

import (
	"errors"
	"io"
	"os"

	"golang.org/x/sys/unix"
)

// kernelCopy copies up to n bytes of src at off to dst at dst's offset with
// copy_file_range(2), and says how many it copied. A kernel or file system that cannot
// (ENOSYS, EXDEV, EINVAL, EOPNOTSUPP, EPERM, EIO from some FUSE and network file systems, or
// a first call that copies nothing) leaves the rest to the caller's buffered copy, with no
// error; so does a source that ends early (the buffered copy then tells ErrUnexpectedEOF).
//
// It copies writeBehind bytes at a time, and asks the kernel to start writing each piece
// out (sync_file_range(2), SYNC_FILE_RANGE_WRITE: no wait) as the next is copied. A heal's
// new file and a quarantine's copy are fsynced right after: the fsync then waits for the
// last piece's write-out, not the whole file's (a 100 MB copy and fsync, 50 ms here, takes
// 33 ms so). The fsync is still what makes a file durable; a write-out the kernel cannot
// start is left to it. A big last-good copy, never fsynced, is written out sooner than the
// kernel's own flush would: the same bytes, once.
func kernelCopy(dst, src *os.File, off, n int64) (int64, error) {
	sfd, dfd := int(src.Fd()), int(dst.Fd())
	at := int64(-1) // dst's offset where this copy begins, for a copy of more than a piece
	if n >= writeBehind {
		if cur, err := unix.Seek(dfd, 0, io.SeekCurrent); err == nil {
			at = cur // else no offset to go by: the fsync writes it all
		}
	}
	var done, out int64 // copied; and of that, asked to be written out
	for done < n {
		o := off + done
		k, err := unix.CopyFileRange(sfd, &o, dfd, nil, int(min(n-done, writeBehind)), 0)
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
		if at >= 0 && done-out >= writeBehind {
			writeOut(dfd, at+out, done-out)
			out = done
		}
	}
	return done, nil
}

// writeBehind is how many bytes kernelCopy copies before it asks for their write-out (a
// variable for tests).
var writeBehind int64 = 8 << 20

// writeOut asks the kernel to start writing out n bytes of fd at off, without waiting for
// it (a variable for tests).
var writeOut = func(fd int, off, n int64) {
	_ = unix.SyncFileRange(fd, off, n, unix.SYNC_FILE_RANGE_WRITE)
}

func fallback(err error) bool {
	for _, e := range []error{unix.ENOSYS, unix.EXDEV, unix.EINVAL, unix.EOPNOTSUPP, unix.EPERM, unix.EIO, unix.EBADF} {
		if errors.Is(err, e) {
			return true
		}
	}
	return false
}
