package resolve

import (
	"runtime"

	"golang.org/x/sys/unix"
)

// AsUser runs fn with the file-system identity uid:gid on this thread (setfsuid and
// setfsgid are per thread on Linux): the kernel then refuses fn whatever that user could not
// do, and what fn creates belongs to that user. The goroutine keeps its thread meanwhile,
// and gives it back only once root's identity is verified restored; a thread that cannot be
// restored is never given back (it ends with the goroutine). Called only when running as
// root .
func AsUser(uid, gid int, fn func() error) error {
	runtime.LockOSThread()
	oldGID, _ := unix.SetfsgidRetGid(gid)
	oldUID, _ := unix.SetfsuidRetUid(uid)
	err := fn()
	unix.SetfsuidRetUid(oldUID)
	unix.SetfsgidRetGid(oldGID)
	// setfs*id(-1) changes nothing and returns the current value.
	if u, _ := unix.SetfsuidRetUid(-1); u != oldUID {
		return err // the thread stays locked: it dies with this goroutine
	}
	if g, _ := unix.SetfsgidRetGid(-1); g != oldGID {
		return err
	}
	runtime.UnlockOSThread()
	return err
}

// ActsAsOwner: this build switches to a tree owner's identity when running as root.
const ActsAsOwner = true
