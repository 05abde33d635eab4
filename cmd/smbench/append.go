package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"time"

	"github.com/sessionmedic/sessionmedic/heal"
	"github.com/sessionmedic/sessionmedic/policy"
)

const (
	appendFileSize = 64 << 20
	appendBytes    = 1 << 10
	// engineFullEvery mirrors heal's fullEvery: every 64th pass over an append-only file is
	// a full one by design, to catch edits inside the prefix.
	engineFullEvery = 64
)

func benchRule() *policy.Rule {
	return &policy.Rule{
		Name: "bench", Format: "jsonl", Lock: policy.Lock{Protocol: "none"},
		Strategies: []policy.Strategy{"salvage"}, Mode: "heal",
		Limits: policy.Limits{MaxLoss: 0.5, MaxFileSize: 1 << 30},
	}
}

// appendBench: a 64 MiB JSONL session gets 1 KiB appended, again and again; each time one
// engine (which saw the file before) re-validates it incrementally. Each cycle also has a
// fresh engine validate the file in full. CPU is this process's rusage around each Check.
func (b *bench) appendBench(ctx context.Context) ([]Row, error) {
	dir, err := b.dir("append")
	if err != nil {
		return nil, err
	}
	cycles, perCycle := 10, 50
	if b.o.quick {
		cycles, perCycle = 3, 30
	}
	path := filepath.Join(dir, "session.jsonl")
	if err := os.WriteFile(path, genJSONL(appendFileSize, 3), 0o644); err != nil {
		return nil, err
	}
	if _, err := os.ReadFile(path); err != nil { // page cache
		return nil, err
	}
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	g := newGen(4)
	rule := benchRule()
	target := heal.Target{Path: path, Rule: rule}
	newEngine := func(n int) *heal.Engine {
		return heal.New(&policy.Config{Version: 1, StateDir: filepath.Join(dir, fmt.Sprintf("state-%d", n))}, heal.Options{})
	}
	fi, _ := os.Stat(path)
	b.logf("[append] %s JSONL, %d cycles of 1 full + %d incremental checks", fmtBytes(fi.Size()), cycles, perCycle)

	st, err := measureAppends(ctx, newEngine, target, cycles, perCycle, func() error {
		_, err := f.Write(g.exactLine(appendBytes))
		return err
	})
	if err != nil {
		return nil, err
	}
	r := st.row("append", fmt.Sprintf("re-validation CPU after appending 1 KiB to a %s JSONL session", fmtBytes(appendFileSize)), "heal.Engine.Check")
	return []Row{r}, nil
}

// appendStats is what measureAppends timed: the CPU (rusage) and wall of the full passes of
// fresh engines and of the incremental passes after each append.
type appendStats struct {
	fullCPU, fullWall, fullMin time.Duration
	incCPU, incWall            time.Duration
	fulls, incs, fellBack      int
}

// measureAppends runs cycles of one full Check of target on a fresh engine (newEngine(cycle)),
// then perCycle rounds of appendOne and a Check of the same engine, counted as incremental
// when the engine's IncrementalStats say it was one. CPU is this process's rusage around each
// Check.
func measureAppends(ctx context.Context, newEngine func(int) *heal.Engine, target heal.Target, cycles, perCycle int, appendOne func() error) (appendStats, error) {
	var s appendStats
	for c := 0; c < cycles; c++ {
		if err := ctx.Err(); err != nil {
			return s, err
		}
		eng := newEngine(c)
		runtime.GC()
		c0, t0 := selfCPU(), time.Now()
		r := eng.Check(target)
		w, cpu := time.Since(t0), selfCPU()-c0
		if r.Verdict != heal.Healthy {
			return s, fmt.Errorf("full check: %s %s %s", r.Verdict, r.Kind, r.Detail)
		}
		if _, full := eng.IncrementalStats(); full != 1 {
			return s, fmt.Errorf("the first check of a fresh engine was not a full pass (full=%d)", full)
		}
		s.fullCPU += cpu
		s.fullWall += w
		if s.fulls == 0 || cpu < s.fullMin {
			s.fullMin = cpu
		}
		s.fulls++
		runtime.GC() // the full pass's garbage is not charged to the incremental passes
		for i := 0; i < perCycle; i++ {
			if err := appendOne(); err != nil {
				return s, err
			}
			inc0, _ := eng.IncrementalStats()
			c0, t0 := selfCPU(), time.Now()
			r := eng.Check(target)
			w, cpu := time.Since(t0), selfCPU()-c0
			if r.Verdict != heal.Healthy {
				return s, fmt.Errorf("check after append: %s %s %s", r.Verdict, r.Kind, r.Detail)
			}
			if inc1, _ := eng.IncrementalStats(); inc1 != inc0+1 {
				s.fellBack++
				continue
			}
			s.incCPU += cpu
			s.incWall += w
			s.incs++
		}
	}
	if s.incs == 0 {
		return s, fmt.Errorf("no check after an append was incremental (%d fell back to full)", s.fellBack)
	}
	return s, nil
}

// row reports the incremental passes against the full ones: their CPU ratio against a target
// of 1000×, the wall times, and the amortized cost per append with every engineFullEvery-th
// pass full. how names what was checked, at the head of the first note.
func (s appendStats) row(workload, goal, how string) Row {
	fullAvg := s.fullCPU / time.Duration(s.fulls)
	incAvg := s.incCPU / time.Duration(s.incs)
	ratio := fullAvg.Seconds() / max(incAvg.Seconds(), 1e-9)
	// What a daemon pays per append over the long run: 63 incremental passes and 1 full one.
	amortized := (time.Duration(engineFullEvery-1)*incAvg + fullAvg) / engineFullEvery
	r := Row{
		Workload:     workload,
		Goal:         goal,
		Sessionmedic: "incremental " + fmtDur(incAvg) + " CPU",
		Peers:        "full re-validation " + fmtDur(fullAvg) + " CPU",
		Target:       "≥ 1000×",
		Met:          metIf(ratio >= 1000),
	}
	r.setRatio(ratio)
	r.addNote("%s, mean of %d incremental and %d full passes (rusage user+sys)", how, s.incs, s.fulls)
	r.addNote("wall %s vs %s", fmtDur(s.incWall/time.Duration(s.incs)), fmtDur(s.fullWall/time.Duration(s.fulls)))
	r.addNote("every %dth pass of a file is full by design: amortized %s per append, %s", engineFullEvery, fmtDur(amortized), fmtRatio(fullAvg.Seconds()/amortized.Seconds()))
	if s.fellBack > 0 {
		r.addNote("%d checks after an append fell back to a full pass and are not counted", s.fellBack)
	}
	r.metric("incremental_cpu_s", incAvg.Seconds())
	r.metric("full_cpu_s", fullAvg.Seconds())
	r.metric("full_cpu_min_s", s.fullMin.Seconds())
	r.metric("incremental_wall_s", (s.incWall / time.Duration(s.incs)).Seconds())
	r.metric("full_wall_s", (s.fullWall / time.Duration(s.fulls)).Seconds())
	r.metric("amortized_cpu_s", amortized.Seconds())
	r.metric("amortized_ratio", fullAvg.Seconds()/amortized.Seconds())
	return r
}
