//go:build !linux

package fsio

import "os"

// WriteLease: no leases here.
func WriteLease(f *os.File) error { return ErrNoLease }

// ReleaseLease: no leases here.
func ReleaseLease(f *os.File) {}
