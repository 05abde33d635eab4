//go:build crashpoints

package main

import (
	"fmt"
	"os"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
)

// With the crashpoints build tag, SESSIONMEDIC_CRASH_AT=STEP[:N] kills the process with
// SIGKILL at the Nth time (default 1st) the heal protocol reaches STEP ("judged",
// "planned", "locked", "journaled", "quarantined", "temp-written", "renamed", "done"), and
// SESSIONMEDIC_PANIC_AT=STEP[:N] raises a panic there (a defect met on that file, as the
// containment tests need one). The crash-point suite builds the binary with this tag;
// release builds have no such hook.
func init() {
	crash, crashN := stepSpec("SESSIONMEDIC_CRASH_AT")
	raise, raiseN := stepSpec("SESSIONMEDIC_PANIC_AT")
	if crash == "" && raise == "" {
		return
	}
	var crashes, raises atomic.Int64
	stepHook = func(s, path string) {
		if s == crash && crashes.Add(1) == crashN {
			syscall.Kill(os.Getpid(), syscall.SIGKILL)
			select {}
		}
		if s == raise && raises.Add(1) == raiseN {
			panic(fmt.Sprintf("SESSIONMEDIC_PANIC_AT %s (%s)", s, path))
		}
	}
}

// stepSpec reads STEP[:N] from the environment variable name: the step ("" when unset) and
// N (default 1).
func stepSpec(name string) (string, int64) {
	spec := os.Getenv(name)
	step, nth := spec, int64(1)
	if i := strings.LastIndexByte(spec, ':'); i >= 0 {
		step = spec[:i]
		if n, err := strconv.ParseInt(spec[i+1:], 10, 64); err == nil && n > 0 {
			nth = n
		}
	}
	return step, nth
}
