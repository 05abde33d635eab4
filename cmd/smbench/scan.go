package main

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

func (b *bench) treeSpec() treeSpec {
	if b.o.quick {
		return treeSpec{Top: 10, Leaves: 20, Files: 10} // 2,000 files in 200 directories
	}
	return treeSpec{Top: 100, Leaves: 100, Files: 10} // 100,000 files in 10,000 directories
}

// ensureTree generates the scan tree once (scan and idle share it).
func (b *bench) ensureTree(ctx context.Context) error {
	if b.tree != "" {
		return nil
	}
	root := filepath.Join(b.tmp, "tree")
	spec := b.treeSpec()
	b.logf("generating %d session files in %d directories", spec.files(), spec.dirs())
	t0 := time.Now()
	st, err := genTree(root, spec, 5)
	if err != nil {
		return err
	}
	b.tree, b.treeStats, b.treeGen = root, st, time.Since(t0)
	b.logf("generated %d files (%d JSON, %d JSONL, %s) in %d directories in %s", st.Files, st.JSON, st.JSONL, fmtBytes(st.Bytes), st.Dirs, fmtDur(b.treeGen))
	return ctx.Err()
}

// warmTree reads every file once, so every tool sees the page cache warm.
func warmTree(root string) (int, error) {
	n := 0
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		if _, err := os.ReadFile(p); err != nil {
			return err
		}
		n++
		return nil
	})
	return n, err
}

// pyLoop is the Python alternative: walk the tree, json.load every .json, json.loads every
// line of every .jsonl. It prints how many files it read and how many failed.
const pyLoop = `import json, os, sys
ok = bad = 0
for root, dirs, files in os.walk(sys.argv[1]):
    for name in files:
        path = os.path.join(root, name)
        try:
            if name.endswith(".jsonl"):
                with open(path, encoding="utf-8") as f:
                    for line in f:
                        if line.strip():
                            json.loads(line)
            elif name.endswith(".json"):
                with open(path, encoding="utf-8") as f:
                    json.load(f)
            else:
                continue
            ok += 1
        except Exception:
            bad += 1
print(ok, bad)
`

type scanTool struct {
	name  string
	args  []string
	env   []string
	reps  int
	limit time.Duration // per run; 0 = the workload's bound
	res   timed
	best  bool // res holds a measurement
	err   error
	skip  string
	files int     // files it looks at, when not the whole tree
	scale float64 // whole tree / files it looks at (1 = the whole tree)
}

// wall and cpu are the tool's best times, scaled to the whole tree.
func (t *scanTool) wall() time.Duration { return time.Duration(float64(t.res.Wall) * max(t.scale, 1)) }
func (t *scanTool) cpu() time.Duration  { return time.Duration(float64(t.res.CPU) * max(t.scale, 1)) }

func (b *bench) scan(ctx context.Context) ([]Row, error) {
	if err := b.ensureTree(ctx); err != nil {
		return nil, err
	}
	root, st := b.tree, b.treeStats
	n, err := warmTree(root)
	if err != nil {
		return nil, err
	}
	if n != st.Files {
		return nil, fmt.Errorf("tree has %d files, expected %d", n, st.Files)
	}
	reps := 2
	if b.o.quick {
		reps = 3
	}
	jq, jqErr := exec.LookPath("jq")
	py, pyErr := exec.LookPath("python3")
	findTool, findErr := exec.LookPath("find")
	sm := &scanTool{name: "sessionmedic", args: []string{b.bin, "check", "-json", root}, env: b.env(), reps: reps}
	pyT := &scanTool{name: "python", args: []string{py, "-c", pyLoop, root}, env: os.Environ(), reps: reps}
	findArgs := func(dirs []string, term string) []string {
		args := append([]string{findTool}, dirs...)
		return append(args, "-type", "f", "(", "-name", "*.json", "-o", "-name", "*.jsonl", ")", "-exec", jq, "empty", "{}", term)
	}
	// One jq process per file costs the same for every file (its start-up dominates), so it
	// runs on a sample of whole top directories and is scaled by the file count: over the
	// full tree it would take most of an hour.
	spec := b.treeSpec()
	sampleTops := min(spec.Top, 5)
	if b.o.quick {
		sampleTops = 1
	}
	var sample []string
	for t := 0; t < sampleTops; t++ {
		sample = append(sample, filepath.Join(root, topDir(t)))
	}
	sampleFiles := sampleTops * spec.Leaves * spec.Files
	jqEach := &scanTool{name: "jq (find -exec \\;)", args: findArgs(sample, ";"), env: os.Environ(), reps: 1, limit: 30 * time.Minute,
		files: sampleFiles, scale: float64(st.Files) / float64(sampleFiles)}
	jqBatch := &scanTool{name: "jq (find -exec +)", args: findArgs([]string{root}, "+"), env: os.Environ(), reps: reps}
	switch {
	case jqErr != nil:
		jqEach.skip, jqBatch.skip = "jq not installed", "jq not installed"
	case findErr != nil:
		jqEach.skip, jqBatch.skip = "find not installed", "find not installed"
	}
	if pyErr != nil {
		pyT.skip = "python3 not installed"
	}
	tools := []*scanTool{sm, pyT, jqBatch, jqEach}
	maxReps := 0
	for _, t := range tools {
		maxReps = max(maxReps, t.reps)
	}
	// Interleaved repetitions; each tool keeps its fastest run. The one-jq-per-file run is
	// the longest, so it goes last.
	for rep := 0; rep < maxReps; rep++ {
		for _, t := range tools {
			if t.skip != "" || t.err != nil || rep >= t.reps {
				continue
			}
			if err := ctx.Err(); err != nil {
				return nil, err
			}
			b.logf("[scan] %s, run %d of %d", t.name, rep+1, t.reps)
			tctx, cancel := ctx, context.CancelFunc(func() {})
			if t.limit > 0 {
				tctx, cancel = context.WithTimeout(ctx, t.limit)
			}
			res, err := runTimed(tctx, root, t.env, t.args[0], t.args[1:]...)
			cancel()
			if err != nil {
				if ctx.Err() == nil && res.TimedOut && t != sm {
					// The tool ran out of its own time: report it as at least that slow.
					t.err, t.res, t.best = err, res, true
					b.logf("[scan] %s stopped after %s", t.name, fmtDur(res.Wall))
					continue
				}
				return nil, fmt.Errorf("%s: %w (stderr: %s)", t.name, err, res.Stderr)
			}
			if err := checkScanOutput(t, sm, pyT, res, st.Files); err != nil {
				return nil, err
			}
			if !t.best || res.Wall < t.res.Wall {
				t.res, t.best = res, true
			}
			b.logf("[scan] %s: %s wall, %s CPU", t.name, fmtDur(res.Wall), fmtDur(res.CPU))
		}
	}
	goal := fmt.Sprintf("full scan of %d session files in %d directories (first start)", st.Files, st.Dirs)
	smS := fmt.Sprintf("check -json %s", fmtDur(sm.res.Wall))
	var rows []Row
	row := func(peer *scanTool, target float64, extra func(*Row)) {
		r := Row{Workload: "scan", Goal: goal, Sessionmedic: smS, Target: fmt.Sprintf("≥ %g×", target)}
		switch {
		case peer.skip != "":
			r.Peers, r.Ratio, r.Met = peer.name+": skipped", "—", metNA
			r.addNote("%s", peer.skip)
		default:
			ratio := peer.wall().Seconds() / sm.res.Wall.Seconds()
			r.Peers = peer.name + " " + fmtDur(peer.wall())
			r.setRatio(ratio)
			r.Met = metIf(ratio >= target)
			if peer.err != nil {
				r.Peers = peer.name + " > " + fmtDur(peer.wall())
				r.addNote("%s stopped at the time limit: its time and the ratio are lower bounds", peer.name)
			}
			if peer.scale > 1 {
				r.addNote("%s measured on %d of %d files (%s for %d top directories) and scaled ×%.0f by file count",
					peer.name, peer.files, st.Files, fmtDur(peer.res.Wall), sampleTops, peer.scale)
				r.metric("peer_sample_files", float64(peer.files))
				r.metric("peer_sample_wall_s", peer.res.Wall.Seconds())
			}
			r.addNote("CPU: sessionmedic %s, %s %s", fmtDur(sm.res.CPU), peer.name, fmtDur(peer.cpu()))
			r.metric("peer_wall_s", peer.wall().Seconds())
			r.metric("peer_cpu_s", peer.cpu().Seconds())
		}
		r.metric("sessionmedic_wall_s", sm.res.Wall.Seconds())
		r.metric("sessionmedic_cpu_s", sm.res.CPU.Seconds())
		r.metric("files", float64(st.Files))
		r.metric("dirs", float64(st.Dirs))
		r.metric("bytes", float64(st.Bytes))
		if extra != nil {
			extra(&r)
		}
		r.addNote("page cache warm; best of %d runs", sm.reps)
		rows = append(rows, r)
	}
	row(jqEach, 20, func(r *Row) {
		if jqBatch.skip == "" && jqBatch.best {
			r.addNote("batched find -exec jq empty {} + took %s (%s)", fmtDur(jqBatch.res.Wall), fmtRatio(jqBatch.res.Wall.Seconds()/sm.res.Wall.Seconds()))
			r.metric("jq_batched_wall_s", jqBatch.res.Wall.Seconds())
		}
		if jqEach.skip == "" {
			r.addNote("one jq process per file, as a naive cron job runs it (1 run)")
		}
	})
	row(pyT, 5, func(r *Row) {
		if pyT.skip == "" {
			r.addNote("os.walk + json.load / json.loads per line, one interpreter")
		}
	})
	return rows, nil
}

// checkScanOutput makes sure a tool really looked at every file.
func checkScanOutput(t, sm, py *scanTool, res timed, files int) error {
	switch t {
	case sm:
		if res.Code != 0 && res.Code != 1 {
			return fmt.Errorf("sessionmedic check exited %d (stderr: %s)", res.Code, res.Stderr)
		}
		if res.Stdout.lines != int64(files) {
			return fmt.Errorf("sessionmedic check reported %d files, the tree has %d (stderr: %s)", res.Stdout.lines, files, res.Stderr)
		}
	case py:
		ok, bad, err := parsePyCount(res.Stdout.text())
		if err != nil || res.Code != 0 {
			return fmt.Errorf("python loop: exit %d, output %q: %v (stderr: %s)", res.Code, res.Stdout.text(), err, res.Stderr)
		}
		if ok != files || bad != 0 {
			return fmt.Errorf("python loop read %d files (%d failed), the tree has %d", ok, bad, files)
		}
	default: // jq under find: any complaint means it did not accept every file
		if res.Code != 0 || res.Stderr.String() != "" {
			return fmt.Errorf("%s: exit %d: %s", t.name, res.Code, res.Stderr)
		}
	}
	return nil
}

// parsePyCount reads the Python loop's "ok bad" line.
func parsePyCount(s string) (ok, bad int, err error) {
	f := strings.Fields(s)
	if len(f) != 2 {
		return 0, 0, errors.New("unexpected output")
	}
	ok, err1 := strconv.Atoi(f[0])
	bad, err2 := strconv.Atoi(f[1])
	if err1 != nil || err2 != nil {
		return 0, 0, errors.New("unexpected output")
	}
	return ok, bad, nil
}
