//go:build !linux

package lock

// piLive: without /proc another process's arguments, directory and descriptors cannot be
// read here, so no session is ever seen live; a heal relies on the file's quiet check alone.
func piLive(PiSession) (bool, string) { return false, "" }

// procHolds: no process's descriptors can be read here.
func procHolds(pid int, dev, ino uint64) bool { return false }
