package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"

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

	st, err := measureAppends(ctx, newEngine, target, p.cycles, p.perCycle, func() error {
		return appendFile(path, s.exactBatch(appendBytes))
	})
	if err != nil {
		return Row{}, err
	}
	r := st.row("claude",
		fmt.Sprintf("re-validation CPU after appending 1 KiB of records to a %s Claude transcript", fmtMB(size)),
		"heal.Engine.Check with the claude-code preset's rule")
	r.metric("file_bytes", float64(size))
	return r, nil
}
