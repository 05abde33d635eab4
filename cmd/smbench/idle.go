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
	w, err := b.idleWindow(ctx, d, window, "[idle]")
	if err != nil {
		return nil, err
	}
	cpuRow := Row{
		Workload:     "idle",
		Goal:         fmt.Sprintf("idle CPU watching %d directories, %s window", b.treeStats.Dirs, fmtDur(w.elapsed.Round(time.Second))),
		Sessionmedic: fmt.Sprintf("%.3f s CPU", w.cpu.Seconds()),
		Peers:        "—",
		Ratio:        "—",
		Target:       "≤ 0.1 s (~0, no polling)",
		Met:          metIf(w.cpu <= 100*time.Millisecond),
	}
	cpuRow.addNote("/proc/pid/stat utime+stime; schedstat %s", fmtDur(w.schedCPU))
	cpuRow.addNote("%d context switches over %d threads (%.1f/s)", w.switches, w.threads, float64(w.switches)/w.elapsed.Seconds())
	cpuRow.addNote("%d log events in the window", w.events)
	cpuRow.addNote("after a first scan of %d files in %s", files, fmtDur(firstScan))
	cpuRow.metric("idle_cpu_s", w.cpu.Seconds())
	cpuRow.metric("idle_schedstat_cpu_s", w.schedCPU.Seconds())
	cpuRow.metric("window_s", w.elapsed.Seconds())
	cpuRow.metric("context_switches", float64(w.switches))
	cpuRow.metric("first_scan_s", firstScan.Seconds())
	cpuRow.metric("files", float64(files))
	memRow := Row{
		Workload:     "idle",
		Goal:         fmt.Sprintf("RSS watching %d directories (%d files)", b.treeStats.Dirs, b.treeStats.Files),
		Sessionmedic: "VmRSS " + fmtBytes(w.rss),
		Peers:        "—",
		Ratio:        "—",
		Target:       "≤ 64 MiB",
		Met:          metIf(w.rss <= 64<<20),
	}
	memRow.addNote("at the end of the idle window; %s at its start; peak VmHWM %s (includes the first scan)", fmtBytes(w.rss0), fmtBytes(w.hwm))
	memRow.metric("rss_bytes", float64(w.rss))
	memRow.metric("hwm_bytes", float64(w.hwm))
	if b.o.quick {
		cpuRow.addNote("quick: %d files in %d directories", b.treeStats.Files, b.treeStats.Dirs)
	}
	return []Row{cpuRow, memRow}, nil
}

// idleSample is what the daemon did over an idle window: its CPU (/proc/pid/stat and
// schedstat), context switches and log events in the window, its resident set at the start and
// at the end, and its peak resident set at the end.
type idleSample struct {
	elapsed, cpu, schedCPU time.Duration
	switches               int64
	threads, events        int
	rss0, rss, hwm         int64
}

// idleWindow samples the daemon, waits window (failing if ctx ends or the daemon exits first),
// samples it again and stops it; a failure to stop is logged under tag.
func (b *bench) idleWindow(ctx context.Context, d *daemonProc, window time.Duration, tag string) (idleSample, error) {
	var s idleSample
	pid := d.pid()
	cpu0, err := procCPU(pid)
	if err != nil {
		return s, err
	}
	sched0, sw0, _ := procSched(pid)
	s.rss0, _, _ = procMem(pid)
	ev0 := d.totalEvents()
	w0 := time.Now()
	select {
	case <-time.After(window):
	case <-ctx.Done():
		return s, ctx.Err()
	case <-d.exited:
		return s, fmt.Errorf("daemon exited during the idle window: %v (log: %s)", d.waitEr, d.tail)
	}
	s.elapsed = time.Since(w0)
	cpu1, err := procCPU(pid)
	if err != nil {
		return s, err
	}
	sched1, sw1, threads := procSched(pid)
	if s.rss, s.hwm, err = procMem(pid); err != nil {
		return s, err
	}
	s.events = d.totalEvents() - ev0
	if err := d.stop(); err != nil {
		b.logf("%s %v", tag, err)
	}
	s.cpu, s.schedCPU, s.switches, s.threads = cpu1-cpu0, sched1-sched0, sw1-sw0, threads
	return s, nil
}
