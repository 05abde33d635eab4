//go:build !linux

package fsio

// OpenWriters finds nothing here: without /proc there is no cheap, unprivileged way to see
// which processes hold a file open for writing (lsof would be a subprocess per file). A heal
// then relies on the app's own lock, the quiet period and the identity re-checks alone.
func OpenWriters(dev, ino uint64) []int { return nil }

// OpenBy cannot tell here (see OpenWriters): nothing is proven.
func OpenBy(ids []Identity) (pids []int, complete bool) { return nil, false }
