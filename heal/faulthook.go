package heal

import (
	"sync/atomic"

	"github.com/sessionmedic/sessionmedic/heal/fsio"
)

// Identity pins the exact version of a file that was read (see [fsio.Identity]).
type Identity = fsio.Identity

// faultHook, when set, is asked before each file operation a heal performs; an error it
// returns becomes that operation's error. It is the seam of the I/O-fault tests.
var faultHook atomic.Pointer[func(op, path string) error]

// SetFaultHook installs (or, with nil, removes) the fault hook: f is called with the
// operation ("create", "chown", "chmod", "write", "fsync", "close", "rename", "link",
// "truncate", "fsync-dir", "mkdir") and the path, before the operation.
func SetFaultHook(f func(op, path string) error) {
	if f == nil {
		faultHook.Store(nil)
		return
	}
	faultHook.Store(&f)
}

// hooked is the file I/O of every engine while the fault hook is global.
var hooked = fsio.FS{Faults: func(op, path string) error {
	if f := faultHook.Load(); f != nil {
		return (*f)(op, path)
	}
	return nil
}}
