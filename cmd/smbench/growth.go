package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"time"

	"github.com/sessionmedic/sessionmedic/heal"
	"github.com/sessionmedic/sessionmedic/policy"
)

// growth: how sessionmedic's cost grows with the size of a file, the number of files and the
// rate of writes, three points each. Nothing is asserted: the rows show the curve, and the
// ratio column is each point's cost relative to the first point of its series.

const (
	// engineStreamThreshold mirrors heal's streamThreshold: a JSONL file larger than this is
	// validated streaming, without holding its bytes.
	engineStreamThreshold = 32 << 20
	growthFilesPerDir     = 10
	growthDamageRate      = 20 // damages per second in the write-rate series, as in latency
	growthMinPasses       = 3
	growthMaxPasses       = 30
)

// growthPlan is the points of the three series and how long each may take.
type growthPlan struct {
	sizes      []int64 // bytes of one JSONL session
	fullBudget time.Duration
	appends    int // 1 KiB appends, each followed by an incremental check
	counts     []int
	countReps  int // runs of check per count (one at 100,000 files and more)
	rates      []int
	rateDur    time.Duration
	rateFiles  int
	rateDirs   int
}

func planGrowth(quick bool) growthPlan {
	p := growthPlan{
		sizes:      []int64{1 << 20, 16 << 20, 128 << 20},
		fullBudget: 4 * time.Second,
		appends:    40,
		counts:     []int{1000, 10000, 100000},
		countReps:  2,
		rates:      []int{100, 300, 1000},
		rateDur:    8 * time.Second,
		rateFiles:  2000,
		rateDirs:   100,
	}
	if quick {
		p.fullBudget, p.appends = 1500*time.Millisecond, 20
		p.counts = []int{100, 1000, 10000}
		p.rateDur, p.rateFiles, p.rateDirs = 3*time.Second, 500, 25
	}
	return p
}

// growthTreeSpec lays files out 10 to a directory, the directories split as evenly as
// possible between top directories and leaves (files must be a multiple of 10).
func growthTreeSpec(files int) treeSpec {
	dirs := max(files/growthFilesPerDir, 1)
	top := max(int(math.Sqrt(float64(dirs))), 1)
	for dirs%top != 0 {
		top--
	}
	return treeSpec{Top: top, Leaves: dirs / top, Files: growthFilesPerDir}
}

// damageEveryFor is how many writes per damage keep damages at perSecond at rate writes per
// second (at least every write).
func damageEveryFor(rate, perSecond int) int {
	return max(rate/max(perSecond, 1), 1)
}

// fmtCount formats an integer with thousands separators: 100,000.
func fmtCount(n int) string {
	s := strconv.Itoa(n)
	neg := n < 0
	if neg {
		s = s[1:]
	}
	out := make([]byte, 0, len(s)+len(s)/3)
	for i := range len(s) {
		if i > 0 && (len(s)-i)%3 == 0 {
			out = append(out, ',')
		}
		out = append(out, s[i])
	}
	if neg {
		return "-" + string(out)
	}
	return string(out)
}

func growthRow(goal string) Row {
	return Row{Workload: "growth", Goal: "growth: " + goal, Peers: "—", Ratio: "—", Target: "—", Met: metNA}
}

func (b *bench) growth(ctx context.Context) ([]Row, error) {
	plan := planGrowth(b.o.quick)
	var rows []Row
	var errs []error
	for _, part := range []struct {
		name string
		fn   func(context.Context, growthPlan) ([]Row, error)
	}{{"file size", b.growthSize}, {"file count", b.growthCount}, {"write rate", b.growthRate}} {
		if err := ctx.Err(); err != nil {
			errs = append(errs, err)
			break
		}
		r, err := part.fn(ctx, plan)
		rows = append(rows, r...)
		if err != nil {
			b.logf("[growth] %s: %v", part.name, err)
			errs = append(errs, fmt.Errorf("%s: %w", part.name, err))
		}
	}
	return rows, errors.Join(errs...)
}

// writeRepeated writes size bytes of chunk, repeated, to a new file at path.
func writeRepeated(path string, chunk []byte, size int64) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	for n := int64(0); n < size; {
		k := min(int64(len(chunk)), size-n)
		if _, err := f.Write(chunk[:k]); err != nil {
			f.Close()
			return err
		}
		n += k
	}
	return f.Close()
}

// readThrough reads a file once, so it is in the page cache.
func readThrough(path string) error {
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	_, err = io.Copy(io.Discard, f)
	return err
}

// growthSize: one JSONL session of each size, validated in full by fresh engines (nothing
// incremental), then grown by 1 KiB appends that the last engine re-validates incrementally.
// CPU is this process's rusage around each Check.
func (b *bench) growthSize(ctx context.Context, plan growthPlan) ([]Row, error) {
	dir, err := b.dir("growth-size")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(dir)
	chunk := genChunk(1<<20, 7) // whole records: any multiple of 1 MiB is valid JSONL
	g := newGen(8)
	cfg := &policy.Config{Version: 1, StateDir: filepath.Join(dir, "state")}
	var rows []Row
	var firstFull, firstInc time.Duration
	for _, size := range plan.sizes {
		path := filepath.Join(dir, fmt.Sprintf("session-%d.jsonl", size))
		if err := writeRepeated(path, chunk, size); err != nil {
			return rows, err
		}
		if err := readThrough(path); err != nil {
			return rows, err
		}
		target := heal.Target{Path: path, Rule: benchRule()}
		b.logf("[growth] file size %s: full passes for %s (%d to %d), then %d appends", fmtSize(size), fmtDur(plan.fullBudget), growthMinPasses, growthMaxPasses, plan.appends)
		var fullCPU, fullWall []time.Duration
		var eng *heal.Engine
		began := time.Now()
		for len(fullCPU) < growthMaxPasses && (len(fullCPU) < growthMinPasses || time.Since(began) < plan.fullBudget) {
			if err := ctx.Err(); err != nil {
				return rows, err
			}
			eng = heal.New(cfg, heal.Options{})
			runtime.GC()
			c0, t0 := selfCPU(), time.Now()
			r := eng.Check(target)
			w, cpu := time.Since(t0), selfCPU()-c0
			if r.Verdict != heal.Healthy {
				return rows, fmt.Errorf("full check of %s: %s %s %s", fmtBytes(size), r.Verdict, r.Kind, r.Detail)
			}
			if _, full := eng.IncrementalStats(); full != 1 {
				return rows, fmt.Errorf("the first check of a fresh engine was not a full pass (full=%d)", full)
			}
			fullCPU, fullWall = append(fullCPU, cpu), append(fullWall, w)
		}
		f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND, 0)
		if err != nil {
			return rows, err
		}
		var incCPU, incWall []time.Duration
		fellBack := 0
		runtime.GC() // the full passes' garbage is not charged to the incremental ones
		for i := 0; i < plan.appends; i++ {
			if err := ctx.Err(); err != nil {
				f.Close()
				return rows, err
			}
			if _, err := f.Write(g.exactLine(appendBytes)); err != nil {
				f.Close()
				return rows, err
			}
			inc0, _ := eng.IncrementalStats()
			c0, t0 := selfCPU(), time.Now()
			r := eng.Check(target)
			w, cpu := time.Since(t0), selfCPU()-c0
			if r.Verdict != heal.Healthy {
				f.Close()
				return rows, fmt.Errorf("check after append: %s %s %s", r.Verdict, r.Kind, r.Detail)
			}
			if inc1, _ := eng.IncrementalStats(); inc1 != inc0+1 {
				fellBack++
				continue
			}
			incCPU, incWall = append(incCPU, cpu), append(incWall, w)
		}
		f.Close()
		if err := os.Remove(path); err != nil {
			return rows, err
		}

		full, fullW := percentile(fullCPU, 50), percentile(fullWall, 50)
		if firstFull == 0 {
			firstFull = max(full, time.Nanosecond)
		}
		how := "read whole"
		if size > engineStreamThreshold {
			how = "streamed"
		}
		r := growthRow(fmt.Sprintf("file size %s, full validation", fmtSize(size)))
		r.Sessionmedic = fmt.Sprintf("%s CPU/pass, %s", fmtDur(full), fmtRate(float64(size)/max(full.Seconds(), 1e-9)))
		r.setRatio(full.Seconds() / firstFull.Seconds())
		r.addNote("fresh heal.Engine Check (%s), median of %d; wall %s; ratio: CPU vs %s (input ×%d)",
			how, len(fullCPU), fmtDur(fullW), fmtSize(plan.sizes[0]), size/plan.sizes[0])
		r.metric("bytes", float64(size))
		r.metric("cpu_s", full.Seconds())
		r.metric("wall_s", fullW.Seconds())
		r.metric("cpu_mb_s", float64(size)/max(full.Seconds(), 1e-9)/1e6)
		r.metric("passes", float64(len(fullCPU)))
		rows = append(rows, r)

		if len(incCPU) == 0 {
			return rows, fmt.Errorf("%s: no check after an append was incremental (%d fell back to a full pass)", fmtBytes(size), fellBack)
		}
		ri := growthRow(fmt.Sprintf("file size %s, re-validation after a 1 KiB append", fmtSize(size)))
		inc, incW := percentile(incCPU, 50), percentile(incWall, 50)
		if firstInc == 0 {
			firstInc = max(inc, time.Nanosecond)
		}
		ri.Sessionmedic = fmt.Sprintf("%s CPU/pass", fmtDur(inc))
		ri.setRatio(inc.Seconds() / firstInc.Seconds())
		ri.addNote("same engine, incremental, median of %d; wall %s; %s cheaper than full; ratio: CPU vs %s",
			len(incCPU), fmtDur(incW), fmtRatio(full.Seconds()/max(inc.Seconds(), 1e-9)), fmtSize(plan.sizes[0]))
		if fellBack > 0 {
			ri.addNote("%d fell back to a full pass, not counted", fellBack)
		}
		ri.metric("bytes", float64(size))
		ri.metric("cpu_s", inc.Seconds())
		ri.metric("wall_s", incW.Seconds())
		ri.metric("passes", float64(len(incCPU)))
		ri.metric("fell_back", float64(fellBack))
		rows = append(rows, ri)
	}
	return rows, nil
}

// growthCount: `sessionmedic check -json DIR` over trees of small session files, 10 to a
// directory, generated like the scan tree (the scan tree itself when it has the same shape).
func (b *bench) growthCount(ctx context.Context, plan growthPlan) ([]Row, error) {
	var rows []Row
	var firstWall time.Duration
	for _, n := range plan.counts {
		if err := ctx.Err(); err != nil {
			return rows, err
		}
		spec := growthTreeSpec(n)
		root, shared := filepath.Join(b.tmp, fmt.Sprintf("growth-tree-%d", n)), false
		var st treeStats
		if b.tree != "" && spec == b.treeSpec() {
			root, st, shared = b.tree, b.treeStats, true
		} else {
			b.logf("[growth] generating %s files in %s directories", fmtCount(spec.files()), fmtCount(spec.dirs()))
			t0 := time.Now()
			var err error
			st, err = genTree(root, spec, 5)
			if err != nil {
				os.RemoveAll(root)
				return rows, err
			}
			b.logf("[growth] generated %s (%s) in %s", fmtCount(st.Files), fmtBytes(st.Bytes), fmtDur(time.Since(t0)))
		}
		r, err := b.growthCheckTree(ctx, plan, root, spec, st)
		if !shared {
			if rerr := os.RemoveAll(root); rerr != nil && err == nil {
				err = rerr
			}
		}
		if err != nil {
			return rows, err
		}
		if firstWall == 0 {
			firstWall = max(time.Duration(r.Metrics["wall_s"]*float64(time.Second)), time.Nanosecond)
		}
		r.setRatio(r.Metrics["wall_s"] / firstWall.Seconds())
		r.addNote("ratio: wall vs %s files (input ×%d)", fmtCount(plan.counts[0]), n/plan.counts[0])
		rows = append(rows, r)
	}
	return rows, nil
}

// growthCheckTree runs `sessionmedic check -json` over a warm tree and keeps the fastest run.
func (b *bench) growthCheckTree(ctx context.Context, plan growthPlan, root string, spec treeSpec, st treeStats) (Row, error) {
	var r Row
	if n, err := warmTree(root); err != nil {
		return r, err
	} else if n != st.Files {
		return r, fmt.Errorf("tree has %d files, expected %d", n, st.Files)
	}
	reps := plan.countReps
	if st.Files >= 100000 {
		reps = 1
	}
	sm := &scanTool{name: "sessionmedic"}
	var best timed
	for rep := 0; rep < reps; rep++ {
		if err := ctx.Err(); err != nil {
			return r, err
		}
		res, err := runTimed(ctx, root, b.env(), b.bin, "check", "-json", root)
		if err != nil {
			return r, fmt.Errorf("sessionmedic check: %w (stderr: %s)", err, res.Stderr)
		}
		if err := checkScanOutput(sm, sm, nil, res, st.Files); err != nil {
			return r, err
		}
		b.logf("[growth] check -json over %s files: %s wall, %s CPU", fmtCount(st.Files), fmtDur(res.Wall), fmtDur(res.CPU))
		if rep == 0 || res.Wall < best.Wall {
			best = res
		}
	}
	files := float64(st.Files)
	perFile := func(d time.Duration) time.Duration { return time.Duration(float64(d) / files) }
	r = growthRow(fmt.Sprintf("file count %s (%s directories of %d)", fmtCount(st.Files), fmtCount(spec.dirs()), spec.Files))
	r.Sessionmedic = fmt.Sprintf("%s/file (%s wall, %s CPU)", fmtDur(perFile(best.Wall)), fmtDur(best.Wall), fmtDur(best.CPU))
	r.addNote("sessionmedic check -json DIR, best of %d, page cache warm; CPU %s/file", reps, fmtDur(perFile(best.CPU)))
	r.metric("files", files)
	r.metric("bytes", float64(st.Bytes))
	r.metric("wall_s", best.Wall.Seconds())
	r.metric("cpu_s", best.CPU.Seconds())
	r.metric("wall_us_per_file", best.Wall.Seconds()/files*1e6)
	r.metric("cpu_us_per_file", best.CPU.Seconds()/files*1e6)
	return r, nil
}

// growthRate: the latency workload's daemon, writer and damages at several write rates, the
// damages kept at 20 per second so every rate has as many latency samples.
func (b *bench) growthRate(ctx context.Context, plan growthPlan) ([]Row, error) {
	var rows []Row
	var firstCPU float64
	for _, rate := range plan.rates {
		if err := ctx.Err(); err != nil {
			return rows, err
		}
		p := latParams{
			tag: fmt.Sprintf("growth-rate-%d", rate), rate: rate, damageEvery: damageEveryFor(rate, growthDamageRate),
			dur: plan.rateDur, nFiles: plan.rateFiles, nDirs: plan.rateDirs, settle: latSettle,
		}
		run, err := b.runLatency(ctx, p)
		if rerr := os.RemoveAll(filepath.Join(b.tmp, p.tag)); rerr != nil && err == nil {
			err = rerr
		}
		if err != nil {
			return rows, fmt.Errorf("%d writes/s: %w", rate, err)
		}
		all := run.lats()
		p50, p99 := percentile(all, 50), percentile(all, 99)
		share := run.cpuShare()
		r := growthRow(fmt.Sprintf("write rate %s/s over %s files", fmtCount(rate), fmtCount(p.nFiles)))
		r.Sessionmedic = fmt.Sprintf("p99 %s, daemon %.1f%% of a core", fmtDur(p99.Round(100*time.Microsecond)), 100*share)
		if firstCPU == 0 {
			firstCPU = max(share, 1e-9)
		}
		r.setRatio(share / firstCPU)
		r.addNote("damage-to-healed p50 %s over %d heals (%s a damage), settle %s, %s; ratio: daemon CPU vs %d/s",
			fmtDur(p50.Round(100*time.Microsecond)), len(all), everyNth(p.damageEvery), fmtDur(p.settle), fmtDur(p.dur), plan.rates[0])
		if run.lost > 0 || run.invalid > 0 {
			r.addNote("%d of %d damages not healed, %d invalid at the end", run.lost, run.damaged, run.invalid)
		}
		if got := run.achieved(); got < 0.95*float64(rate) {
			r.addNote("writer reached only %.0f writes/s", got)
		}
		r.metric("write_rate", run.achieved())
		r.metric("p50_s", p50.Seconds())
		r.metric("p99_s", p99.Seconds())
		r.metric("heals", float64(len(all)))
		r.metric("lost", float64(run.lost))
		r.metric("daemon_cpu_s", run.daemonCPU.Seconds())
		r.metric("daemon_cpu_share", share)
		rows = append(rows, r)
	}
	return rows, nil
}

// everyNth is "every write", "every 2nd write", "every 15th write".
func everyNth(n int) string {
	if n <= 1 {
		return "every write"
	}
	suffix := "th"
	if n%100 < 11 || n%100 > 13 {
		switch n % 10 {
		case 1:
			suffix = "st"
		case 2:
			suffix = "nd"
		case 3:
			suffix = "rd"
		}
	}
	return "every " + strconv.Itoa(n) + suffix + " write"
}

// fmtSize is a size in whole MiB when it is one ("16 MiB"), else as fmtBytes.
func fmtSize(n int64) string {
	if n > 0 && n%(1<<20) == 0 {
		return fmtCount(int(n>>20)) + " MiB"
	}
	return fmtBytes(n)
}
