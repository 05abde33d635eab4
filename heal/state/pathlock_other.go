//go:build !linux

package state

import "context"

// PathLock is no lock elsewhere than Linux: there are no open file description locks, so
// processes sharing a state directory do not coordinate their heals (each still takes the
// app's own lock).
type PathLock struct{}

// LockPath takes no lock.
func LockPath(ctx context.Context, dir, path string, busy func()) (*PathLock, error) {
	return nil, nil
}

// Release does nothing.
func (l *PathLock) Release() {}
