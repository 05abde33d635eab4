package daemon

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// TestSweptSessionIsRestored: a Gemini chat the daemon saw healthy, deleted by the app's
// start-up sweep, comes back at the same path with the same bytes; a Claude transcript
// deleted the same way (Claude's own age-based cleanup) does not.
func TestSweptSessionIsRestored(t *testing.T) {
	home := t.TempDir()
	chats := filepath.Join(home, ".gemini", "tmp", "proj", "chats")
	projects := filepath.Join(home, ".claude", "projects", "-tmp-demo-proj")
	for _, d := range []string{chats, projects} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	samples := "../heal/testdata/samples/"
	gemini, err := os.ReadFile(samples + "gemini-cli/healthy/home/.gemini/tmp/proj/chats/session-2026-11-22T21-40-7759d9fe.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	// Restore judges last-good's age against the app's retention: the session was updated today.
	gemini = bytes.ReplaceAll(gemini, []byte("2026-11-22T"), []byte(time.Now().UTC().Format("2006-01-02T")))
	root, _ := os.ReadFile(samples + "gemini-cli/healthy/home/.gemini/tmp/proj/.project_root")
	os.WriteFile(filepath.Join(home, ".gemini", "tmp", "proj", ".project_root"), root, 0o644)
	claude, err := os.ReadFile(samples + "claude-code/healthy/home/.claude/projects/-tmp-demo-proj/7c2e1b4a-9d3f-4e8a-b6c1-2f5a8d9e0b13.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	gp := filepath.Join(chats, "session-2026-11-22T21-40-7759d9fe.jsonl")
	cp := filepath.Join(projects, "7c2e1b4a-9d3f-4e8a-b6c1-2f5a8d9e0b13.jsonl")
	os.WriteFile(gp, gemini, 0o644)
	os.WriteFile(cp, claude, 0o600)

	yaml := "version: 1\nstate_dir: " + filepath.Join(t.TempDir(), "state") + "\nrules:\n" +
		"  - {name: gemini-cli, preset: gemini-cli, paths: [" + filepath.Join(home, ".gemini") + "], settle: 50ms, max_wait: 1s, restore_deleted: true}\n" +
		"  - {name: claude-code, preset: claude-code, paths: [" + filepath.Join(home, ".claude") + "], settle: 50ms, max_wait: 1s}\n"
	logs := startYAML(t, yaml, Options{})
	// The first scan saw both healthy (and kept their last-good copies).
	waitFor(t, "the first scan", func() bool { return len(logs.events("scan.finished")) >= 2 })
	time.Sleep(200 * time.Millisecond)

	os.Remove(gp)
	os.Remove(cp)
	waitFor(t, "the swept chat to come back", func() bool {
		b, err := os.ReadFile(gp)
		return err == nil && bytes.Equal(b, gemini)
	})
	if fi, err := os.Stat(gp); err != nil || fi.Mode().Perm() != 0o644 {
		t.Errorf("restored chat: mode %v (%v), want 0644 as its directory's files", fi.Mode().Perm(), err)
	}
	time.Sleep(500 * time.Millisecond)
	if _, err := os.Stat(cp); !os.IsNotExist(err) {
		t.Errorf("a Claude transcript its own cleanup deleted was recreated: %v", err)
	}
	if ev := logs.events("file.healed"); len(ev) != 1 || ev[0]["kind"] != "missing" || ev[0]["strategy"] != "last-good" {
		t.Errorf("file.healed events: %v", ev)
	}
}
