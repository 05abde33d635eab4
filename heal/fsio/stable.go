package fsio

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"io"
	"os"
	"syscall"
)

// OpenRegular opens the regular file at path for reading, never following a final symlink
// (that is [ErrNotRegular], as anything but a regular file is) and never blocking on a FIFO,
// and returns it with its identity.
func OpenRegular(path string) (*os.File, Identity, error) {
	f, err := os.OpenFile(path, os.O_RDONLY|syscall.O_NOFOLLOW|syscall.O_NONBLOCK|syscall.O_CLOEXEC, 0)
	if err != nil {
		if errors.Is(err, syscall.ELOOP) {
			err = ErrNotRegular
		}
		return nil, Identity{}, err
	}
	fi, err := f.Stat()
	if err == nil && !fi.Mode().IsRegular() {
		err = ErrNotRegular
	}
	if err != nil {
		f.Close()
		return nil, Identity{}, err
	}
	return f, IdentityOf(fi), nil
}

// OpenStable opens the regular file at path (not following a final symlink) and checks that
// it is still the version id names (else [ErrChanged]).
func OpenStable(path string, id Identity) (*os.File, error) {
	f, err := os.OpenFile(path, os.O_RDONLY|syscall.O_NOFOLLOW|syscall.O_NONBLOCK|syscall.O_CLOEXEC, 0)
	if err != nil {
		if errors.Is(err, syscall.ELOOP) {
			return nil, ErrNotRegular
		}
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
