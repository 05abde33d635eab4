//go:build !linux

package lock

import "os"

// publish: no O_TMPFILE here; the caller creates the file with O_EXCL.
func publish(path string, perm os.FileMode, body []byte, faults func(op, path string) error) (snapshot, bool, error) {
	return snapshot{}, false, nil
}
