package main

import (
	"math"
	"runtime/debug"
	"testing"
)

func TestTuneGC(t *testing.T) {
	defer debug.SetGCPercent(debug.SetGCPercent(100))
	defer debug.SetMemoryLimit(debug.SetMemoryLimit(math.MaxInt64))
	none := func(string) string { return "" }
	tuneGC([]string{"run"}, none)
	if p := debug.SetGCPercent(100); p != 100 {
		t.Fatalf("run: GOGC %d, want the default", p)
	}
	tuneGC([]string{"check", "/x"}, none)
	if p, l := debug.SetGCPercent(100), debug.SetMemoryLimit(math.MaxInt64); p != oneShotGCPercent || l != oneShotMemLimit {
		t.Fatalf("check: GOGC %d, limit %d", p, l)
	}
	tuneGC([]string{"heal"}, func(k string) string { return map[string]string{"GOGC": "50", "GOMEMLIMIT": "1GiB"}[k] })
	if p, l := debug.SetGCPercent(100), debug.SetMemoryLimit(math.MaxInt64); p != 100 || l != math.MaxInt64 {
		t.Fatalf("heal with GOGC and GOMEMLIMIT set: GOGC %d, limit %d (the environment wins)", p, l)
	}
}
