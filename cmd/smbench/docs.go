package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
)

// docs: `sessionmedic check` of 20,000 session documents of ~7.5 KB each (150 MB), where the
// cost is the document's check (validation, the checklist's pass) more than the system calls:
// PraisonAI sessions as the app writes them (indented) under the praisonai preset and, the same
// tree, as generic JSON by extension; CoPaw sessions as the app writes them (one line) under
// the copaw preset. Against the Python json.load loop and cat of the same files, interleaved,
// best of reps each. The trees are removed afterwards (kept with -keep).
func (b *bench) docs(ctx context.Context) ([]Row, error) {
	spec := docSpec{Dirs: 200, Files: 100, Size: 7500}
	if b.o.quick {
		spec.Dirs = 40
	}
	py, err := exec.LookPath("python3")
	if err != nil {
		return []Row{{Workload: "docs", Goal: "check of small documents", Sessionmedic: "—", Peers: "python: skipped", Ratio: "—", Met: metNA, Note: "python3 not installed"}}, nil
	}
	type scenario struct {
		app, tree, preset, what string
	}
	scenarios := []scenario{
		{"praisonai", "docs-praisonai", "", "PraisonAI documents (indented), as generic JSON"},
		{"praisonai", "docs-praisonai", "praisonai", "PraisonAI documents (indented), preset praisonai"},
		{"copaw", "docs-copaw", "copaw", "CoPaw documents (one line), preset copaw"},
	}
	reps := 5
	if b.o.quick {
		reps = 3
	}
	stats := map[string]treeStats{}
	var rows []Row
	for _, s := range scenarios {
		root := filepath.Join(b.tmp, s.tree)
		st, ok := stats[s.tree]
		if !ok {
			if st, err = genDocTree(root, s.app, spec, 31); err != nil {
				return rows, err
			}
			stats[s.tree] = st
			b.logf("[docs] generated %d %s documents (%s) in %d directories", st.Files, s.app, fmtBytes(st.Bytes), st.Dirs)
			if !b.o.keep {
				defer os.RemoveAll(root)
			}
			if n, err := warmTree(root); err != nil {
				return rows, err
			} else if n != st.Files {
				return rows, fmt.Errorf("tree has %d files, expected %d", n, st.Files)
			}
		}
		args := []string{b.bin, "check", "-json"}
		if s.preset != "" {
			args = append(args, "-preset", s.preset)
		}
		sm := &scanTool{name: "sessionmedic", args: append(args, root), env: b.env()}
		pyT := &scanTool{name: "python", args: []string{py, "-c", pyLoop, root}, env: os.Environ()}
		cat := &scanTool{name: "cat", args: []string{"sh", "-c", `find "$1" -type f -name '*.json' -print0 | xargs -0 cat >/dev/null`, "sh", root}, env: os.Environ()}
		tools := []*scanTool{sm, pyT, cat}
		for rep := 0; rep < reps; rep++ {
			for k := range tools {
				t := tools[(k+rep)%len(tools)] // who goes first rotates
				if err := ctx.Err(); err != nil {
					return rows, err
				}
				res, err := runTimed(ctx, root, t.env, t.args[0], t.args[1:]...)
				if err != nil {
					return rows, fmt.Errorf("%s: %w (stderr: %s)", t.name, err, res.Stderr)
				}
				if t != cat {
					if err := checkScanOutput(t, sm, pyT, res, st.Files); err != nil {
						return rows, err
					}
				} else if res.Code != 0 {
					return rows, fmt.Errorf("cat: exit %d: %s", res.Code, res.Stderr)
				}
				if !t.best || res.Wall < t.res.Wall {
					t.res, t.best = res, true
				}
			}
		}
		gbs := func(t *scanTool) float64 { return float64(st.Bytes) / t.res.Wall.Seconds() / 1e9 }
		r := Row{Workload: "docs", Goal: fmt.Sprintf("check of %d %s, %s", st.Files, s.what, fmtBytes(st.Bytes)), Target: "≥ 1 GB/s"}
		r.Sessionmedic = fmt.Sprintf("check -json %s (%.2f GB/s)", fmtDur(sm.res.Wall), gbs(sm))
		r.Peers = fmt.Sprintf("python %s (%.2f GB/s); cat %s (%.2f GB/s)", fmtDur(pyT.res.Wall), gbs(pyT), fmtDur(cat.res.Wall), gbs(cat))
		r.setRatio(pyT.res.Wall.Seconds() / sm.res.Wall.Seconds())
		r.Met = metIf(gbs(sm) >= 1)
		r.addNote("CPU: sessionmedic %s, python %s, cat %s; peak RSS (wait4) %s; ratio: python's wall time over sessionmedic's; os.walk + json.load per file, one interpreter; page cache warm; best of %d interleaved runs",
			fmtDur(sm.res.CPU), fmtDur(pyT.res.CPU), fmtDur(cat.res.CPU), fmtBytes(sm.res.MaxRSS), reps)
		r.metric("sessionmedic_wall_s", sm.res.Wall.Seconds())
		r.metric("sessionmedic_cpu_s", sm.res.CPU.Seconds())
		r.metric("peer_wall_s", pyT.res.Wall.Seconds())
		r.metric("cat_wall_s", cat.res.Wall.Seconds())
		r.metric("files", float64(st.Files))
		r.metric("bytes", float64(st.Bytes))
		rows = append(rows, r)
	}
	return rows, nil
}

// docSpec is a tree of session documents: Dirs sessions directories of Files documents of
// about Size bytes each.
type docSpec struct{ Dirs, Files, Size int }

// genDocTree writes a tree of app's session documents under root, each directory
// root/agent-NNN/sessions/. The content depends only on seed and spec.
func genDocTree(root, app string, spec docSpec, seed uint64) (treeStats, error) {
	st := treeStats{Dirs: spec.Dirs}
	var mu sync.Mutex
	var firstErr error
	var wg sync.WaitGroup
	next := make(chan int)
	for w := 0; w < 4; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for d := range next {
				g := newGen(seed + uint64(d)*7919)
				dir := filepath.Join(root, fmt.Sprintf("agent-%03d", d), "sessions")
				err := os.MkdirAll(dir, 0o755)
				var n int64
				for f := 0; f < spec.Files && err == nil; f++ {
					name, data := g.docFile(app, d*spec.Files+f, spec.Size)
					err = os.WriteFile(filepath.Join(dir, name), data, 0o644)
					n += int64(len(data))
				}
				mu.Lock()
				if err != nil && firstErr == nil {
					firstErr = err
				}
				st.Files += spec.Files
				st.JSON += spec.Files
				st.Bytes += n
				mu.Unlock()
			}
		}()
	}
	for d := 0; d < spec.Dirs; d++ {
		next <- d
	}
	close(next)
	wg.Wait()
	return st, firstErr
}

// docFile is a session document of app of about size bytes: PraisonAI's (praisonai.md:
// json.dump with indent=2) or CoPaw's (copaw.md: one line, Python's separators, no newline).
func (g *gen) docFile(app string, seq, size int) (string, []byte) {
	var buf bytes.Buffer
	text := func(role string) []byte {
		var b bytes.Buffer
		enc := json.NewEncoder(&b)
		enc.SetEscapeHTML(false)
		enc.Encode(g.content(role, 12))
		return bytes.TrimSuffix(b.Bytes(), []byte("\n"))
	}
	switch app {
	case "copaw":
		fmt.Fprintf(&buf, `{"agent": {"memory": {"_compressed_summary": "", "content": [`)
		for i := 0; buf.Len() < size-200; i++ {
			role := []string{"user", "assistant"}[i%2]
			if i > 0 {
				buf.WriteString(", ")
			}
			fmt.Fprintf(&buf, `[{"id": "m%07d", "name": %q, "role": %q, "content": %s, "metadata": {}, "timestamp": "2026-11-21 07:42:09.662"}, []]`, i, role, role, text(role))
		}
		buf.WriteString(`]}, "toolkit": {"active_groups": []}, "name": "QwenPaw", "_sys_prompt": "You are QwenPaw.", "plan_notebook": {"current_plan": null, "storage": {"plans": {}}}}}`)
		return fmt.Sprintf("console--u%06d.json", seq), buf.Bytes()
	default: // praisonai
		fmt.Fprintf(&buf, "{\n  \"session_id\": \"%08x-1e05-4283-90df-f0a7cc101d65\",\n  \"messages\": [", seq)
		for i := 0; buf.Len() < size-250; i++ {
			role := []string{"user", "assistant"}[i%2]
			if i > 0 {
				buf.WriteString(",")
			}
			fmt.Fprintf(&buf, "\n    {\n      \"role\": %q,\n      \"content\": %s,\n      \"timestamp\": 1795246942.6978495,\n      \"metadata\": {}\n    }", role, text(role))
		}
		buf.WriteString("\n  ],\n  \"created_at\": \"2026-11-21T07:42:22.707896+00:00\",\n  \"updated_at\": \"2026-11-21T07:42:22.711724+00:00\",\n  \"agent_id\": null,\n  \"user_id\": null,\n  \"metadata\": {}\n}")
		return fmt.Sprintf("%08x-1e05-4283-90df-f0a7cc101d65.json", seq), buf.Bytes()
	}
}
