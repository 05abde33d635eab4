//go:build crashpoints

package main

import (
	"os"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
)

// With the crashpoints build tag, SESSIONMEDIC_CRASH_AT=STEP[:N] kills the process with
// SIGKILL at the Nth time (default 1st) the heal protocol reaches STEP ("locked",
// "journaled", "quarantined", "temp-written", "renamed", "done"). The crash-point suite
// builds the binary with this tag; release builds have no such hook.
func init() {
	spec := os.Getenv("SESSIONMEDIC_CRASH_AT")
	if spec == "" {
		return
	}
	step, nth := spec, int64(1)
	if i := strings.LastIndexByte(spec, ':'); i >= 0 {
		step = spec[:i]
		if n, err := strconv.ParseInt(spec[i+1:], 10, 64); err == nil && n > 0 {
			nth = n
		}
	}
	var seen atomic.Int64
	stepHook = func(s, path string) {
		if s == step && seen.Add(1) == nth {
			syscall.Kill(os.Getpid(), syscall.SIGKILL)
			select {}
		}
	}
}
