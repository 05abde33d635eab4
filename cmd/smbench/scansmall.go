package main

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"time"
)

// scanSmall: `sessionmedic check` of a second tree, 20,000 small files in 2,000 directories
// (where the cost per file, system calls, start-up and output, is what is measured), against
// the Python json.load loop, interleaved, best of reps each. The tree is removed afterwards.
func (b *bench) scanSmall(ctx context.Context) (Row, error) {
	spec := treeSpec{Top: 20, Leaves: 100, Files: 10}
	goal := fmt.Sprintf("full scan of %d small session files in %d directories", spec.files(), spec.dirs())
	r := Row{Workload: "small", Goal: goal, Target: "≥ 3×"}
	py, err := exec.LookPath("python3")
	if err != nil {
		r.Sessionmedic, r.Peers, r.Ratio, r.Met = "—", "python: skipped", "—", metNA
		r.addNote("python3 not installed")
		return r, nil
	}
	root := filepath.Join(b.tmp, "tree-small")
	defer os.RemoveAll(root)
	t0 := time.Now()
	st, err := genTree(root, spec, 9)
	if err != nil {
		return r, err
	}
	b.logf("[small] generated %d files (%s) in %d directories in %s", st.Files, fmtBytes(st.Bytes), st.Dirs, fmtDur(time.Since(t0)))
	if n, err := warmTree(root); err != nil {
		return r, err
	} else if n != st.Files {
		return r, fmt.Errorf("tree has %d files, expected %d", n, st.Files)
	}
	reps := 5
	if b.o.quick {
		reps = 3
	}
	sm := &scanTool{name: "sessionmedic", args: []string{b.bin, "check", "-json", root}, env: b.env()}
	pyT := &scanTool{name: "python", args: []string{py, "-c", pyLoop, root}, env: os.Environ()}
	for rep := 0; rep < reps; rep++ {
		order := []*scanTool{sm, pyT}
		if rep%2 == 1 {
			order = []*scanTool{pyT, sm} // who goes first alternates
		}
		for _, t := range order {
			if err := ctx.Err(); err != nil {
				return r, err
			}
			res, err := runTimed(ctx, root, t.env, t.args[0], t.args[1:]...)
			if err != nil {
				return r, fmt.Errorf("%s: %w (stderr: %s)", t.name, err, res.Stderr)
			}
			if err := checkScanOutput(t, sm, pyT, res, st.Files); err != nil {
				return r, err
			}
			if !t.best || res.Wall < t.res.Wall {
				t.res, t.best = res, true
			}
		}
	}
	ratio := pyT.res.Wall.Seconds() / sm.res.Wall.Seconds()
	r.Sessionmedic = "check -json " + fmtDur(sm.res.Wall)
	r.Peers = "python " + fmtDur(pyT.res.Wall)
	r.setRatio(ratio)
	r.Met = metIf(ratio >= 3)
	perFile := func(d time.Duration) time.Duration { return d / time.Duration(st.Files) }
	r.addNote("%s of files; CPU: sessionmedic %s (%s/file), python %s (%s/file)", fmtBytes(st.Bytes),
		fmtDur(sm.res.CPU), fmtDur(perFile(sm.res.CPU)), fmtDur(pyT.res.CPU), fmtDur(perFile(pyT.res.CPU)))
	r.addNote("os.walk + json.load / json.loads per line, one interpreter; page cache warm; best of %d interleaved runs", reps)
	r.metric("sessionmedic_wall_s", sm.res.Wall.Seconds())
	r.metric("sessionmedic_cpu_s", sm.res.CPU.Seconds())
	r.metric("peer_wall_s", pyT.res.Wall.Seconds())
	r.metric("peer_cpu_s", pyT.res.CPU.Seconds())
	r.metric("files", float64(st.Files))
	r.metric("dirs", float64(st.Dirs))
	r.metric("bytes", float64(st.Bytes))
	return r, nil
}
