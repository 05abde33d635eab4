//go:build !linux

package lock

// appLive: without /proc another process's arguments, directory and descriptors cannot be
// read here, so no session is ever seen live; a heal relies on the file's quiet check alone.
func appLive(AppSession, string, func([]string) bool) (bool, string) { return false, "" }

// procHolds: no process's descriptors can be read here.
func procHolds(pid int, dev, ino uint64) bool { return false }
