package fsio

import (
	"crypto/sha256"
	"encoding/hex"
	"io"
	"os"
	"syscall"
)

// OpenRegular opens the regular file at path for reading, never following a final symlink
// (that is [ErrNotRegular], as anything but a regular file is) and never blocking on a FIFO,
// and returns it with its identity.
func OpenRegular(path string) (*os.File, Identity, error) {
	f, err := openFile(path)
	if err != nil {
		return nil, Identity{}, err
	}
	fi, err := f.Stat()
	if err == nil && !fi.Mode().IsRegular() {
		err = ErrNotRegular
	}
	if st, ok := fi.Sys().(*syscall.Stat_t); err == nil && ok && foreignLink(path, st) {
		err = &os.PathError{Op: "open", Path: path, Err: ErrForeignLink}
	}
	if err != nil {
		f.Close()
		return nil, Identity{}, err
	}
	return f, IdentityOf(fi), nil
}

// openFile opens path for reading through the resolver (see [Confine]), never blocking on a
// FIFO; a symlink on the way is [ErrNotRegular] (the file itself) or [ErrMoved].
func openFile(path string) (*os.File, error) {
	fd, err := openPath(path, syscall.O_RDONLY|syscall.O_NONBLOCK, 0)
	if err != nil {
		if err == syscall.ELOOP {
			return nil, loopErr(path)
		}
		return nil, &os.PathError{Op: "open", Path: path, Err: err}
	}
	return os.NewFile(uintptr(fd), path), nil
}

// OpenStable opens the regular file at path (not following a final symlink) and checks that
// it is still the version id names (else [ErrChanged]).
func OpenStable(path string, id Identity) (*os.File, error) {
	f, err := openFile(path)
	if err != nil {
		return nil, err
	}
	fi, err := f.Stat()
	if err != nil || !fi.Mode().IsRegular() || !IdentityOf(fi).Same(id) {
		f.Close()
		return nil, ErrChanged
	}
	return f, nil
}

// StillSame reports whether the open file is still the version id names.
func StillSame(f *os.File, id Identity) bool {
	fi, err := f.Stat()
	return err == nil && IdentityOf(fi).Same(id)
}

// SHAFile is the sha256 of the regular file at path, read streaming, with the file's identity
// checked around the read.
func SHAFile(path string) (string, error) {
	st, err := StatIdentity(path)
	if err != nil {
		return "", err
	}
	f, err := OpenStable(path, st)
	if err != nil {
		return "", err
	}
	defer f.Close()
	h := sha256.New()
	if _, err := io.CopyBuffer(h, io.NewSectionReader(f, 0, st.Size), make([]byte, bufSize)); err != nil {
		return "", err
	}
	if !StillSame(f, st) {
		return "", ErrChanged
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}
