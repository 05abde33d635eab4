package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"
)

// bigfile: `sessionmedic check` of one large JSONL file; the child's peak RSS.
func (b *bench) bigfile(ctx context.Context) ([]Row, error) {
	size := int64(1 << 30)
	if b.o.quick {
		size = 256 << 20
	}
	dir, err := b.dir("bigfile")
	if err != nil {
		return nil, err
	}
	path := filepath.Join(dir, "huge.jsonl")
	chunk := genChunk(1<<20, 7)
	f, err := os.Create(path)
	if err != nil {
		return nil, err
	}
	for n := int64(0); n < size; n += int64(len(chunk)) {
		if _, err := f.Write(chunk); err != nil {
			f.Close()
			return nil, err
		}
	}
	if err := f.Close(); err != nil {
		return nil, err
	}
	b.logf("[bigfile] wrote %s; sessionmedic check -json", fmtBytes(size))
	chunk = nil
	parentRSS := resetPeakRSS()
	every := 2 * time.Millisecond
	res, peaks, err := runSampled(ctx, dir, b.env(), &every, b.bin, "check", "-json", path)
	if err != nil {
		return nil, fmt.Errorf("sessionmedic check: %w (stderr: %s)", err, res.Stderr)
	}
	var rep struct {
		Verdict, Detail, Reason string
	}
	out := strings.TrimSpace(res.Stdout.text())
	if err := json.Unmarshal([]byte(out), &rep); err != nil {
		return nil, fmt.Errorf("sessionmedic check: exit %d, output %q (stderr: %s)", res.Code, out, res.Stderr)
	}
	const bound = 128 << 20
	// The child's own peak: VmHWM of its memory since exec, sampled until it exits (a rise in
	// its last 2 ms would be missed); wait4's maxrss also counts this process's memory.
	peak, how := peaks.HWM, "VmHWM sampled every "+every.String()+" until exit"
	if peaks.Samples == 0 {
		peak, how = res.MaxRSS, "wait4 maxrss"
	}
	r := Row{
		Workload:     "bigfile",
		Goal:         fmt.Sprintf("peak memory checking a %s JSONL file", fmtBytes(size)),
		Sessionmedic: "peak RSS " + fmtBytes(peak),
		Peers:        "—",
		Target:       "≤ 128 MiB (streaming)",
		Met:          metIf(peak <= bound),
	}
	r.Ratio = fmt.Sprintf("%.2f× file", float64(peak)/float64(size))
	r.addNote("verdict %s in %s, %s CPU", rep.Verdict, fmtDur(res.Wall), fmtDur(res.CPU))
	r.addNote("%s (%d samples; peak RssAnon %s, RssFile %s)", how, peaks.Samples, fmtBytes(peaks.Anon), fmtBytes(peaks.File))
	r.addNote("wait4 maxrss %s (Linux folds the spawning process's peak into it; that peak was reset to %s before the spawn)", fmtBytes(res.MaxRSS), fmtBytes(parentRSS))
	r.metric("sampled_anon_bytes", float64(peaks.Anon))
	r.metric("sampled_file_bytes", float64(peaks.File))
	r.metric("wait4_maxrss_bytes", float64(res.MaxRSS))
	r.metric("spawner_rss_bytes", float64(parentRSS))
	if rep.Verdict != "healthy" {
		r.addNote("NOT validated: %s%s", rep.Detail, rep.Reason)
		r.Met = metNA
	}
	if peak > bound && float64(peak) >= 0.9*float64(size) {
		r.addNote("peak RSS grows with the file: the whole file is held in memory, not streamed")
	}
	if b.o.quick {
		r.addNote("quick: %s instead of 1 GiB", fmtBytes(size))
	}
	r.metric("max_rss_bytes", float64(peak))
	r.metric("file_bytes", float64(size))
	r.metric("wall_s", res.Wall.Seconds())
	r.metric("cpu_s", res.CPU.Seconds())
	return []Row{r}, nil
}
