package main

import (
	"context"
	"fmt"
	"path/filepath"
	"sync"
	"time"
)

// idle: the daemon over the scan tree; after its first scan, how much CPU it uses and how
// much memory it holds while nothing happens.
func (b *bench) idle(ctx context.Context) ([]Row, error) {
	if err := b.ensureTree(ctx); err != nil {
		return nil, err
	}
	window := 60 * time.Second
	if b.o.quick {
		window = 5 * time.Second
	}
	dir, err := b.dir("idle")
	if err != nil {
		return nil, err
	}
	pol := filepath.Join(dir, "policy.yaml")
	if err := writePolicy(pol, b.tree, filepath.Join(dir, "state"), ""); err != nil {
		return nil, err
	}
	var mu sync.Mutex
	finished := map[string]time.Time{}
	var scanned int
	d, err := startDaemon(b.bin, pol, b.env(), func(ev logEvent) {
		mu.Lock()
		defer mu.Unlock()
		if ev.Msg != "scan.finished" {
			return
		}
		if _, seen := finished[ev.str("rule")]; !seen {
			finished[ev.str("rule")] = ev.At
			if n, ok := ev.Fields["files"].(float64); ok {
				scanned += int(n)
			}
		}
	})
	if err != nil {
		return nil, err
	}
	defer d.stop()
	t0 := time.Now()
	b.logf("[idle] daemon pid %d started over %d files in %d directories; waiting for its first scan", d.pid(), b.treeStats.Files, b.treeStats.Dirs)
	if err := d.waitFor(ctx, "the first scan (scan.finished of both rules)", func() bool {
		mu.Lock()
		defer mu.Unlock()
		return len(finished) >= 2
	}); err != nil {
		return nil, err
	}
	mu.Lock()
	var last time.Time
	for _, at := range finished {
		if at.After(last) {
			last = at
		}
	}
	firstScan, files := last.Sub(t0), scanned
	mu.Unlock()
	b.logf("[idle] first scan of %d files took %s; idle window %s", files, fmtDur(firstScan), window)
	// Let the last writes of the scan (last-good copies) drain before the window opens.
	select {
	case <-time.After(2 * time.Second):
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	pid := d.pid()
	cpu0, err := procCPU(pid)
	if err != nil {
		return nil, err
	}
	sched0, sw0, _ := procSched(pid)
	rss0, _, _ := procMem(pid)
	ev0 := d.totalEvents()
	w0 := time.Now()
	select {
	case <-time.After(window):
	case <-ctx.Done():
		return nil, ctx.Err()
	case <-d.exited:
		return nil, fmt.Errorf("daemon exited during the idle window: %v (log: %s)", d.waitEr, d.tail)
	}
	elapsed := time.Since(w0)
	cpu1, err := procCPU(pid)
	if err != nil {
		return nil, err
	}
	sched1, sw1, threads := procSched(pid)
	rss, hwm, err := procMem(pid)
	if err != nil {
		return nil, err
	}
	events := d.totalEvents() - ev0
	if err := d.stop(); err != nil {
		b.logf("[idle] %v", err)
	}
	idleCPU := cpu1 - cpu0
	schedCPU := sched1 - sched0
	wakeups := sw1 - sw0
	cpuRow := Row{
		Workload:     "idle",
		Goal:         fmt.Sprintf("idle CPU watching %d directories, %s window", b.treeStats.Dirs, fmtDur(elapsed.Round(time.Second))),
		Sessionmedic: fmt.Sprintf("%.3f s CPU", idleCPU.Seconds()),
		Peers:        "—",
		Ratio:        "—",
		Target:       "≤ 0.1 s (~0, no polling)",
		Met:          metIf(idleCPU <= 100*time.Millisecond),
	}
	cpuRow.addNote("/proc/pid/stat utime+stime; schedstat %s", fmtDur(schedCPU))
	cpuRow.addNote("%d context switches over %d threads (%.1f/s)", wakeups, threads, float64(wakeups)/elapsed.Seconds())
	cpuRow.addNote("%d log events in the window", events)
	cpuRow.addNote("after a first scan of %d files in %s", files, fmtDur(firstScan))
	cpuRow.metric("idle_cpu_s", idleCPU.Seconds())
	cpuRow.metric("idle_schedstat_cpu_s", schedCPU.Seconds())
	cpuRow.metric("window_s", elapsed.Seconds())
	cpuRow.metric("context_switches", float64(wakeups))
	cpuRow.metric("first_scan_s", firstScan.Seconds())
	cpuRow.metric("files", float64(files))
	memRow := Row{
		Workload:     "idle",
		Goal:         fmt.Sprintf("RSS watching %d directories (%d files)", b.treeStats.Dirs, b.treeStats.Files),
		Sessionmedic: "VmRSS " + fmtBytes(rss),
		Peers:        "—",
		Ratio:        "—",
		Target:       "≤ 64 MiB",
		Met:          metIf(rss <= 64<<20),
	}
	memRow.addNote("at the end of the idle window; %s at its start; peak VmHWM %s (includes the first scan)", fmtBytes(rss0), fmtBytes(hwm))
	memRow.metric("rss_bytes", float64(rss))
	memRow.metric("hwm_bytes", float64(hwm))
	if b.o.quick {
		cpuRow.addNote("quick: %d files in %d directories", b.treeStats.Files, b.treeStats.Dirs)
	}
	return []Row{cpuRow, memRow}, nil
}
