package main

import (
	"runtime/debug"
)

// Collector settings of the one-shot commands. `check` and `heal` of many small files
// allocate a little per file and keep little: at the default GOGC the collector runs every
// few megabytes and costs a scan of 20,000 files a quarter of its time. They run with GOGC
// 400 under a soft memory limit that keeps the heap well inside the 64 MiB a check may
// take (DESIGN §10): a big tree collects as often as it must, a small one rarely. The
// daemon keeps the defaults (its heap is long-lived). GOGC and GOMEMLIMIT in the
// environment win.
const (
	oneShotGCPercent = 400
	oneShotMemLimit  = 40 << 20
)

// tuneGC applies the collector settings of the command args names.
func tuneGC(args []string, getenv func(string) string) {
	if len(args) == 0 || (args[0] != "check" && args[0] != "heal") {
		return
	}
	if getenv("GOGC") == "" {
		debug.SetGCPercent(oneShotGCPercent)
	}
	if getenv("GOMEMLIMIT") == "" {
		debug.SetMemoryLimit(oneShotMemLimit)
	}
}
