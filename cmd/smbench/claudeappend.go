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

// claudeAppend is the append workload's method on a Claude transcript under the claude-code
// preset's rule: a transcript of p.appendSize gets 1 KiB of whole records appended (a prompt
// queued, taken and recorded, continuing the parentUuid chain), again and again; each time
// an engine that saw the file before re-validates it incrementally. Each cycle also has a
// fresh engine validate the file in full. CPU is this process's rusage around each Check.
func (b *bench) claudeAppend(ctx context.Context, p claudeParams) (Row, error) {
	dir, err := b.dir("claude-append")
	if err != nil {
		return Row{}, err
	}
	defer os.RemoveAll(dir)
	home := filepath.Join(dir, "home")
	cwd := "/home/user/src/monorepo"
	projects := filepath.Join(home, ".claude", "projects", claudeSlug(cwd))
	if err := os.MkdirAll(projects, 0o700); err != nil {
		return Row{}, err
	}
	s := newClaudeSession(newClaudePools(11), 11, cwd)
	path := filepath.Join(projects, s.id+".jsonl")
	size, err := writeTranscript(path, s, p.appendSize, make([]byte, 0, claudeChunk+256<<10))
	if err != nil {
		return Row{}, err
	}
	if _, err := os.ReadFile(path); err != nil { // page cache
		return Row{}, err
	}
	rule, ok := policy.PresetRule("claude-code", policy.Env{Home: home})
	if !ok {
		return Row{}, fmt.Errorf("no claude-code preset")
	}
	if len(rule.Paths) != 1 || !rule.Covers(rule.Paths[0], path) {
		return Row{}, fmt.Errorf("the claude-code preset's rule (paths %v) does not cover %s", rule.Paths, path)
	}
	target := heal.Target{Path: path, Rule: &rule}
	newEngine := func(n int) *heal.Engine {
		return heal.New(&policy.Config{Version: 1, StateDir: filepath.Join(dir, fmt.Sprintf("state-%d", n))}, heal.Options{})
	}
	b.logf("[claude] %s transcript, %d cycles of 1 full + %d incremental checks after a 1 KiB append", fmtBytes(size), p.cycles, p.perCycle)

	var fullCPU, fullWall, incCPU, incWall, fullMin time.Duration
	fulls, incs, fellBack := 0, 0, 0
	for c := 0; c < p.cycles; c++ {
		if err := ctx.Err(); err != nil {
			return Row{}, err
		}
		eng := newEngine(c)
		runtime.GC()
		c0, t0 := selfCPU(), time.Now()
		r := eng.Check(target)
		w, cpu := time.Since(t0), selfCPU()-c0
		if r.Verdict != heal.Healthy {
			return Row{}, fmt.Errorf("full check: %s %s %s", r.Verdict, r.Kind, r.Detail)
		}
		if _, full := eng.IncrementalStats(); full != 1 {
			return Row{}, fmt.Errorf("the first check of a fresh engine was not a full pass (full=%d)", full)
		}
		fullCPU, fullWall = fullCPU+cpu, fullWall+w
		if fulls == 0 || cpu < fullMin {
			fullMin = cpu
		}
		fulls++
		runtime.GC() // the full pass's garbage is not charged to the incremental passes
		for i := 0; i < p.perCycle; i++ {
			if err := appendFile(path, s.exactBatch(appendBytes)); err != nil {
				return Row{}, err
			}
			inc0, _ := eng.IncrementalStats()
			c0, t0 := selfCPU(), time.Now()
			r := eng.Check(target)
			w, cpu := time.Since(t0), selfCPU()-c0
			if r.Verdict != heal.Healthy {
				return Row{}, fmt.Errorf("check after append: %s %s %s", r.Verdict, r.Kind, r.Detail)
			}
			if inc1, _ := eng.IncrementalStats(); inc1 != inc0+1 {
				fellBack++
				continue
			}
			incCPU, incWall = incCPU+cpu, incWall+w
			incs++
		}
	}
	if incs == 0 {
		return Row{}, fmt.Errorf("no check after an append was incremental (%d fell back to full)", fellBack)
	}
	fullAvg, incAvg := fullCPU/time.Duration(fulls), incCPU/time.Duration(incs)
	ratio := fullAvg.Seconds() / max(incAvg.Seconds(), 1e-9)
	amortized := (time.Duration(engineFullEvery-1)*incAvg + fullAvg) / engineFullEvery
	r := Row{
		Workload:     "claude",
		Goal:         fmt.Sprintf("re-validation CPU after appending 1 KiB of records to a %s Claude transcript", fmtMB(size)),
		Sessionmedic: "incremental " + fmtDur(incAvg) + " CPU",
		Peers:        "full re-validation " + fmtDur(fullAvg) + " CPU",
		Target:       "≥ 1000×",
		Met:          metIf(ratio >= 1000),
	}
	r.setRatio(ratio)
	r.addNote("heal.Engine.Check with the claude-code preset's rule, mean of %d incremental and %d full passes (rusage user+sys)", incs, fulls)
	r.addNote("wall %s vs %s", fmtDur(incWall/time.Duration(incs)), fmtDur(fullWall/time.Duration(fulls)))
	r.addNote("every %dth pass of a file is full by design: amortized %s per append, %s", engineFullEvery, fmtDur(amortized), fmtRatio(fullAvg.Seconds()/amortized.Seconds()))
	if fellBack > 0 {
		r.addNote("%d checks after an append fell back to a full pass and are not counted", fellBack)
	}
	r.metric("incremental_cpu_s", incAvg.Seconds())
	r.metric("full_cpu_s", fullAvg.Seconds())
	r.metric("full_cpu_min_s", fullMin.Seconds())
	r.metric("incremental_wall_s", (incWall / time.Duration(incs)).Seconds())
	r.metric("full_wall_s", (fullWall / time.Duration(fulls)).Seconds())
	r.metric("amortized_cpu_s", amortized.Seconds())
	r.metric("amortized_ratio", fullAvg.Seconds()/amortized.Seconds())
	r.metric("file_bytes", float64(size))
	return r, nil
}
