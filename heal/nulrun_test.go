package heal

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"
)

// A power cut that leaves a whole JSONL session as NUL bytes (its pages never written): the
// NUL run held no record, so the last-good copy, which holds them all, is no loss and is
// restored byte for byte (was: "last-good would drop 1 of 1 records, over max_loss").
func TestAllNULSessionRestoredFromLastGood(t *testing.T) {
	for _, c := range []struct{ preset, src, file string }{
		{"claude-code", "claude-code/healthy", "home/.claude/projects/-tmp-demo-proj/7c2e1b4a-9d3f-4e8a-b6c1-2f5a8d9e0b13.jsonl"},
		{"codex", "codex/healthy", "home/.codex/sessions/2026/11/22/rollout-2026-11-22T21-46-17-01a20539-677f-7710-87e4-54a740761238.jsonl"},
		{"gemini-cli", "gemini-cli/healthy", "home/.gemini/tmp/proj/chats/session-2026-11-22T21-40-7759d9fe.jsonl"},
		{"nanobot", "nanobot/healthy_head", "sessions/1a90ee6c483ef484075bb4aec4e29b33/Y2xpOmRpcmVjdA.jsonl"},
	} {
		t.Run(c.preset, func(t *testing.T) {
			root := filepath.Join(t.TempDir(), "case")
			copyTree(t, filepath.Join(samples, c.src), root)
			e := testEngine(t, c.preset, root)
			path := filepath.Join(root, c.file)
			want := read(t, path)
			for _, r := range runAll(t, e, true) { // healthy: the last-good copies are taken
				if r.Verdict != Healthy {
					t.Fatalf("%s: %s %s", r.Path, r.Verdict, r.Detail)
				}
			}
			if err := os.WriteFile(path, make([]byte, len(want)), 0o644); err != nil {
				t.Fatal(err)
			}
			r := reportsByFile(t, root, runAll(t, e, true))[c.file]
			if r.Action != ActionHealed || r.Strategy != "last-good" || r.LostRecords != 0 {
				t.Fatalf("all-NUL %s: %s with %q (lost %d records), %s", c.file, r.Action, r.Strategy, r.LostRecords, r.Reason)
			}
			if got := read(t, path); !bytes.Equal(got, want) {
				t.Errorf("restored %d bytes, want the %d of the healthy file", len(got), len(want))
			}
		})
	}
}
