package heal

import (
	"os"
	"path/filepath"
	"syscall"
	"testing"
)

// A session file larger than its rule's max_file_size is skipped as not judged (not
// guarded: the daemon says so); one gone, or not a regular file, is skipped without it.
func TestNotJudgedIsMarked(t *testing.T) {
	e, root := bigEngineWith(t, 0, Options{})
	rule := appRule(t, "claude-code", root)
	rule.Limits.MaxFileSize = 100
	dir := filepath.Join(root, "home/.claude/projects/-tmp-p")
	os.MkdirAll(dir, 0o755)
	big := filepath.Join(dir, "7c2e1b4a-9d3f-4e8a-b6c1-2f5a8d9e0b13.jsonl")
	os.WriteFile(big, make([]byte, 200), 0o600)
	fifo := filepath.Join(dir, "8c2e1b4a-9d3f-4e8a-b6c1-2f5a8d9e0b13.jsonl")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		path string
		not  bool
	}{{big, true}, {fifo, false}, {filepath.Join(dir, "9c2e1b4a-9d3f-4e8a-b6c1-2f5a8d9e0b13.jsonl"), false}} {
		r := e.Check(Target{Path: c.path, Rule: rule})
		if r.Verdict != Skipped || r.NotJudged != c.not {
			t.Errorf("%s: %s %q, not judged %v, want skipped, %v", filepath.Base(c.path), r.Verdict, r.Detail, r.NotJudged, c.not)
		}
	}
}
