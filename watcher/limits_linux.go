package watcher

import (
	"errors"
	"fmt"
	"syscall"
)

// limitError says which inotify limit was reached and how to raise it; it unwraps to the errno.
type limitError struct {
	msg string
	err error
}

func (e *limitError) Error() string { return e.msg }
func (e *limitError) Unwrap() error { return e.err }

// explainAdd turns a failed watch of dir into an error an operator can act on.
func explainAdd(dir string, err error) error {
	if errors.Is(err, syscall.ENOSPC) {
		// inotify_add_watch(2): the user limit on the total number of watches was reached.
		return &limitError{
			msg: fmt.Sprintf("inotify watch limit reached adding %s: raise fs.inotify.max_user_watches (sysctl -w fs.inotify.max_user_watches=524288)", dir),
			err: err,
		}
	}
	return fmt.Errorf("watch %s: %w", dir, err)
}

// explainInit turns a failed inotify_init1 into an error an operator can act on.
func explainInit(err error) error {
	if errors.Is(err, syscall.EMFILE) {
		// inotify_init1(2): the user limit on inotify instances, or the process's open files.
		return &limitError{
			msg: "inotify instance limit reached: raise fs.inotify.max_user_instances (sysctl -w fs.inotify.max_user_instances=1024), or the open file limit (ulimit -n)",
			err: err,
		}
	}
	return fmt.Errorf("watcher: %w", err)
}
