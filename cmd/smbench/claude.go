package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"
)

// claude: Claude Code under the claude-code preset. The bench's own home holds a config
// directory, ~/.claude/projects/<slug>/<uuid>.jsonl, and sessionmedic finds it the way it
// finds a user's: from HOME, through the preset's default location.
//
//  1. first scan: `sessionmedic check -json` on the embedded default policy; wall time and
//     peak RSS;
//  2. the daemon (`sessionmedic run` on a one-rule claude-code policy without paths) over the
//     same tree: its first scan, then its CPU over an idle window and its RSS at the end;
//  3. re-validation after a 1 KiB append to a 100 MB transcript, incremental vs full
//     (claudeAppend);
//  4. damage-to-healed latency under a Claude-style writer (claudeLatency).
func (b *bench) claude(ctx context.Context) ([]Row, error) {
	p := claudePlan(b.o.quick)
	dir, err := b.dir("claude")
	if err != nil {
		return nil, err
	}
	home := filepath.Join(dir, "home")
	projects := filepath.Join(home, ".claude", "projects")
	b.logf("[claude] generating %d transcripts, %s, in %s", p.tree.files, fmtBytes(p.tree.total), projects)
	t0 := time.Now()
	st, err := p.tree.gen(projects)
	if err != nil {
		return nil, err
	}
	b.logf("[claude] %d transcripts, %s in %d project dirs (largest %s, %d of 10 MB or more, %d under 1 MB; %d, %s, written within a day) in %s",
		st.Files, fmtBytes(st.Bytes), st.Slugs, fmtBytes(st.Largest), st.Over10MB, st.Under1MB, st.Recent, fmtBytes(st.RecentBytes), fmtDur(time.Since(t0)))
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	var rows []Row
	r, err := b.claudeScan(ctx, home, filepath.Join(dir, "state-check"), st, p.scanReps)
	if err != nil {
		return nil, fmt.Errorf("first scan: %w", err)
	}
	rows = append(rows, r)
	idle, err := b.claudeIdle(ctx, dir, home, st, p.idleWindow)
	if err != nil {
		return rows, fmt.Errorf("idle daemon: %w", err)
	}
	rows = append(rows, idle...)
	// The tree and the daemon's copies of it are no longer needed: the rest works on files
	// of its own.
	for _, d := range []string{home, filepath.Join(dir, "state-check"), filepath.Join(dir, "state-idle")} {
		if err := os.RemoveAll(d); err != nil {
			return rows, err
		}
	}
	r, err = b.claudeAppend(ctx, p)
	if err != nil {
		return rows, fmt.Errorf("append: %w", err)
	}
	rows = append(rows, r)
	r, err = b.claudeLatency(ctx, p)
	if err != nil {
		return rows, fmt.Errorf("latency: %w", err)
	}
	rows = append(rows, r)
	// The same writer on one long transcript at a time: a heal's latency where the file is
	// a heavy user's.
	big := p
	big.liveFiles, big.latFiles, big.liveSize, big.latDur = 1, p.bigFiles, p.bigSize, p.bigDur
	r, err = b.claudeLatency(ctx, big)
	if err != nil {
		return rows, fmt.Errorf("latency, %s transcripts: %w", fmtBytes(p.bigSize), err)
	}
	return append(rows, r), nil
}

// claudeParams sizes the claude workload.
type claudeParams struct {
	tree       claudeTree
	scanReps   int
	idleWindow time.Duration

	appendSize          int64 // the transcript appended to
	cycles, perCycle    int   // full passes, and incremental passes after each
	latDur              time.Duration
	liveFiles, latFiles int   // transcripts written at once, and in all, under the latency writer
	liveSize            int64 // each of those transcripts' size at the start
	// The latency of heals of long transcripts: bigFiles of bigSize, one written at a time,
	// for bigDur.
	bigFiles int
	bigSize  int64
	bigDur   time.Duration
}

func claudePlan(quick bool) claudeParams {
	if quick {
		return claudeParams{tree: claudeTree{files: 200, total: 40e6, seed: 10, ageDays: 180}, scanReps: 2, idleWindow: 3 * time.Second,
			appendSize: 100e6, cycles: 2, perCycle: 20, latDur: 6 * time.Second, liveFiles: 4, latFiles: 16, liveSize: 1e6,
			bigFiles: 2, bigSize: 16e6, bigDur: 3 * time.Second}
	}
	return claudeParams{tree: claudeTree{files: 5000, total: 2e9, seed: 10, ageDays: 180}, scanReps: 2, idleWindow: 60 * time.Second,
		appendSize: 100e6, cycles: 10, perCycle: 50, latDur: 90 * time.Second, liveFiles: 4, latFiles: 110, liveSize: 2e6,
		bigFiles: 8, bigSize: 100e6, bigDur: 20 * time.Second}
}

// writeClaudePolicy writes a policy of one claude-code rule without paths: the preset's
// default location ($CLAUDE_CONFIG_DIR, else ~/.claude) applies.
func writeClaudePolicy(path, stateDir string, settle time.Duration) error {
	s := "version: 1\n" +
		"state_dir: " + strconv.Quote(stateDir) + "\n" +
		"log: {format: json, level: info}\n" +
		"rules:\n" +
		"  - name: claude-code\n    preset: claude-code\n"
	if settle > 0 {
		s += "    settle: " + settle.String() + "\n"
	}
	return os.WriteFile(path, []byte(s), 0o644)
}

// claudeScan runs `sessionmedic check -json` with HOME at home and no -config, reps times,
// and keeps the fastest wall time and the largest peak RSS.
func (b *bench) claudeScan(ctx context.Context, home, state string, st claudeTreeStats, reps int) (Row, error) {
	env := childEnv(home, state)
	every := 5 * time.Millisecond
	var best timed
	var peak int64
	var how string
	for rep := 0; rep < reps; rep++ {
		resetPeakRSS()
		res, peaks, err := runSampled(ctx, home, env, &every, b.bin, "check", "-json")
		if err != nil {
			return Row{}, fmt.Errorf("sessionmedic check: %w (stderr: %s)", err, res.Stderr)
		}
		if res.Code != 0 || res.Stdout.lines != int64(st.Files) {
			return Row{}, fmt.Errorf("sessionmedic check exited %d with %d reports for %d transcripts: %s (stderr: %s)",
				res.Code, res.Stdout.lines, st.Files, b.unhealthy(ctx, home, env), res.Stderr)
		}
		m, h := peaks.HWM, fmt.Sprintf("VmHWM sampled every %s", every)
		if peaks.Samples == 0 {
			m, h = res.MaxRSS, "wait4 maxrss"
		}
		if m > peak {
			peak, how = m, h
		}
		if rep == 0 || res.Wall < best.Wall {
			best = res
		}
		b.logf("[claude] check: %s wall, %s CPU, peak RSS %s", fmtDur(res.Wall), fmtDur(res.CPU), fmtBytes(m))
	}
	r := Row{
		Workload:     "claude",
		Goal:         fmt.Sprintf("first scan of %d Claude transcripts, %s in %d projects (largest %s)", st.Files, fmtBytes(st.Bytes), st.Slugs, fmtBytes(st.Largest)),
		Sessionmedic: fmt.Sprintf("check %s, peak RSS %s", fmtDur(best.Wall), fmtBytes(peak)),
		Peers:        "—",
		Ratio:        "—",
		Target:       "—",
		Met:          metNA,
	}
	r.addNote("sessionmedic check -json, embedded default policy, HOME holding ~/.claude")
	r.addNote("%s MB/s, %s CPU; best wall of %d runs, page cache warm", strconv.FormatFloat(float64(st.Bytes)/best.Wall.Seconds()/1e6, 'f', 0, 64), fmtDur(best.CPU), reps)
	r.addNote("peak RSS: %s, the largest of the runs", how)
	r.metric("wall_s", best.Wall.Seconds())
	r.metric("cpu_s", best.CPU.Seconds())
	r.metric("peak_rss_bytes", float64(peak))
	r.metric("files", float64(st.Files))
	r.metric("bytes", float64(st.Bytes))
	r.metric("largest_bytes", float64(st.Largest))
	return r, nil
}

// unhealthy runs check again and quotes the first reports that are not healthy.
func (b *bench) unhealthy(ctx context.Context, home string, env []string) string {
	cmd := exec.CommandContext(ctx, b.bin, "check", "-json")
	cmd.Dir, cmd.Env = home, env
	out, _ := cmd.Output()
	var bad []string
	sc := bufio.NewScanner(bytes.NewReader(out))
	sc.Buffer(make([]byte, 64<<10), 4<<20)
	for sc.Scan() && len(bad) < 3 {
		var rep struct{ Verdict string }
		if json.Unmarshal(sc.Bytes(), &rep) != nil || rep.Verdict != "healthy" {
			bad = append(bad, sc.Text())
		}
	}
	if len(bad) == 0 {
		return "every report healthy on a second run"
	}
	return strings.Join(bad, " | ")
}

// claudeIdle starts the daemon over the tree, waits for its first scan and for its CPU to
// go quiet (the last-good copies of the scan are written after it), then measures a window.
func (b *bench) claudeIdle(ctx context.Context, dir, home string, st claudeTreeStats, window time.Duration) ([]Row, error) {
	pol := filepath.Join(dir, "policy-idle.yaml")
	state := filepath.Join(dir, "state-idle")
	if err := writeClaudePolicy(pol, state, 0); err != nil {
		return nil, err
	}
	var mu sync.Mutex
	var scanned *logEvent
	d, err := startDaemon(b.bin, pol, childEnv(home, state), func(ev logEvent) {
		mu.Lock()
		defer mu.Unlock()
		if ev.Msg == "scan.finished" && scanned == nil {
			e := ev
			scanned = &e
		}
	})
	if err != nil {
		return nil, err
	}
	defer d.stop()
	t0 := time.Now()
	if err := d.waitFor(ctx, "the first scan", func() bool {
		mu.Lock()
		defer mu.Unlock()
		return scanned != nil
	}); err != nil {
		return nil, err
	}
	mu.Lock()
	firstScan := scanned.At.Sub(t0)
	files, _ := scanned.Fields["files"].(float64)
	damaged, _ := scanned.Fields["damaged"].(float64)
	mu.Unlock()
	pid := d.pid()
	_, scanHWM, _ := procMem(pid)
	b.logf("[claude] daemon pid %d: first scan of %.0f files (%.0f damaged) in %s, peak RSS %s", pid, files, damaged, fmtDur(firstScan), fmtBytes(scanHWM))
	if int(files) != st.Files || damaged != 0 {
		return nil, fmt.Errorf("the daemon's first scan saw %.0f files (%.0f damaged), the tree has %d transcripts", files, damaged, st.Files)
	}
	quiet, err := waitQuiet(ctx, d, 30*time.Second)
	if err != nil {
		return nil, err
	}
	copies, copied := dirUsage(filepath.Join(state, "last-good"))
	b.logf("[claude] daemon: %d last-good copies, %s, once quiet", copies, fmtBytes(copied))
	w, err := b.idleWindow(ctx, d, window, "[claude]")
	if err != nil {
		return nil, err
	}
	cpuRow := Row{
		Workload:     "claude",
		Goal:         fmt.Sprintf("daemon idle CPU over %d Claude transcripts after its first scan, %s window", st.Files, fmtDur(w.elapsed.Round(time.Second))),
		Sessionmedic: fmt.Sprintf("%.3f s CPU", w.cpu.Seconds()),
		Peers:        "—",
		Ratio:        "—",
		Target:       "—",
		Met:          metNA,
	}
	cpuRow.addNote("/proc/pid/stat utime+stime; %d context switches over %d threads; %d log events in the window", w.switches, w.threads, w.events)
	cpuRow.addNote("one-rule claude-code policy, default paths from HOME; first scan %s (peak RSS %s), then %s until its CPU went quiet", fmtDur(firstScan), fmtBytes(scanHWM), fmtDur(quiet.Round(time.Millisecond)))
	cpuRow.metric("idle_cpu_s", w.cpu.Seconds())
	cpuRow.metric("window_s", w.elapsed.Seconds())
	cpuRow.metric("context_switches", float64(w.switches))
	cpuRow.metric("first_scan_s", firstScan.Seconds())
	cpuRow.metric("first_scan_hwm_bytes", float64(scanHWM))
	cpuRow.addNote("last-good copies written by the first scan: %d files, %s (%d transcripts, %s, last written within a day)", copies, fmtBytes(copied), st.Recent, fmtBytes(st.RecentBytes))
	cpuRow.metric("last_good_files", float64(copies))
	cpuRow.metric("last_good_bytes", float64(copied))
	memRow := Row{
		Workload:     "claude",
		Goal:         fmt.Sprintf("daemon RSS watching %d Claude transcripts in %d projects", st.Files, st.Slugs),
		Sessionmedic: "VmRSS " + fmtBytes(w.rss),
		Peers:        "—",
		Ratio:        "—",
		Target:       "—",
		Met:          metNA,
	}
	memRow.addNote("at the end of the idle window; peak VmHWM %s (the first scan included)", fmtBytes(w.hwm))
	memRow.metric("rss_bytes", float64(w.rss))
	memRow.metric("hwm_bytes", float64(w.hwm))
	return []Row{cpuRow, memRow}, nil
}

// dirUsage is the number of regular files directly in dir and their total size.
func dirUsage(dir string) (files int, bytes int64) {
	ents, _ := os.ReadDir(dir)
	for _, e := range ents {
		if fi, err := e.Info(); err == nil && fi.Mode().IsRegular() {
			files++
			bytes += fi.Size()
		}
	}
	return files, bytes
}

// waitQuiet waits until the daemon used less than 10 ms of CPU over a second, and returns
// how long that took.
func waitQuiet(ctx context.Context, d *daemonProc, limit time.Duration) (time.Duration, error) {
	start := time.Now()
	prev, err := procCPU(d.pid())
	if err != nil {
		return 0, err
	}
	for {
		select {
		case <-time.After(time.Second):
		case <-ctx.Done():
			return 0, ctx.Err()
		case <-d.exited:
			return 0, fmt.Errorf("daemon exited: %v (log: %s)", d.waitEr, d.tail)
		}
		cur, err := procCPU(d.pid())
		if err != nil {
			return 0, err
		}
		if cur-prev < 10*time.Millisecond || time.Since(start) > limit {
			return time.Since(start), nil
		}
		prev = cur
	}
}
