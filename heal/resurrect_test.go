package heal

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// A session Gemini CLI's start-up sweep deletes is put back from its last-good copy, at the
// same path, while the app would still keep it by age — where the policy asks for it
// (restore_deleted): by default a deletion stands, as the user may have meant it.
func TestDeletedGeminiSessionIsRestored(t *testing.T) {
	for _, big := range []bool{false, true} {
		t.Run(map[bool]string{false: "held", true: "from its copy's file"}[big], func(t *testing.T) { deletedGeminiRestored(t, big) })
	}
}

// deletedGeminiRestored: with big, the chat and its copy are taken as big files: judged,
// copied and restored from their files, never held.
func deletedGeminiRestored(t *testing.T, big bool) {
	root := filepath.Join(t.TempDir(), "healthy")
	copyTree(t, filepath.Join(samples, "gemini-cli/healthy"), root)
	p := filepath.Join(root, geminiChat)
	want := read(t, p)
	lastUpdated := time.Date(2026, 11, 22, 21, 42, 53, 594e6, time.UTC) // line 18's $set
	at := func(d time.Duration) Options {
		return Options{Now: func() time.Time { return lastUpdated.Add(d) }}
	}
	fromFiles := 0
	engine := func(e *Engine) *Engine {
		if big {
			e.bigThreshold = 1
			e.onStep = func(step, _ string) {
				if step == "missing-from-files" {
					fromFiles++
				}
			}
		}
		return e
	}
	e := engine(testEngineWith(t, "gemini-cli", root, at(time.Hour)))
	for _, r := range runAll(t, e, true) {
		if r.Verdict != Healthy {
			t.Fatalf("%s: %s %s", r.Path, r.Verdict, r.Detail)
		}
	}
	if e.LastGood.Load(p) == nil {
		t.Fatal("no last-good copy kept of the healthy session")
	}
	if err := os.Remove(p); err != nil {
		t.Fatal(err)
	}
	if tg, ok := e.Deleted(p); ok {
		t.Fatalf("a deleted chat became a target without restore_deleted: %+v", tg)
	}
	e.Policy.Rules[0].RestoreDeleted = true

	// The app keeps sessions 30 days: one last updated 31 days ago was deleted by age.
	for _, c := range []struct {
		age  time.Duration
		want bool
	}{{31 * 24 * time.Hour, false}, {29 * 24 * time.Hour, true}} {
		old := engine(New(e.Policy, at(c.age)))
		if _, ok := old.Deleted(p); ok != c.want {
			t.Errorf("deleted %v after its last update: target %v, want %v", c.age, ok, c.want)
		}
	}

	tg, ok := e.Deleted(p)
	if !ok || !tg.Missing || tg.Path != p {
		t.Fatalf("deleted session: target %+v %v, want a missing target at its path", tg, ok)
	}
	if r := e.Check(tg); r.Verdict != Damaged || r.Kind != "missing" {
		t.Errorf("check of the deleted session: %s %s (%s)", r.Verdict, r.Kind, r.Detail)
	}
	r := e.Heal(context.Background(), tg, false)
	if r.Action != ActionHealed || r.Strategy != "last-good" {
		t.Fatalf("heal of the deleted session: %s with %q (%s)", r.Action, r.Strategy, r.Reason)
	}
	if got := read(t, p); !bytes.Equal(got, want) {
		t.Errorf("restored session differs from the one deleted (%d vs %d bytes)", len(got), len(want))
	}
	if big && fromFiles != 1 {
		t.Errorf("restored from the copy's file %d times, want 1", fromFiles)
	}
	// Restored once: healing the target again changes nothing.
	if r := e.Heal(context.Background(), tg, false); r.Action != ActionNone || r.Verdict != Healthy {
		t.Errorf("second heal of the restored session: %s %s (%s)", r.Verdict, r.Action, r.Reason)
	}
}

// A session of an app that never deletes one by mistake is not resurrected: its deletion is
// the operator's or the app's own.
func TestDeletedSessionOfAnotherAppIsNotRestored(t *testing.T) {
	root := t.TempDir()
	p := filepath.Join(root, "projects", "-home-u-proj", "0b9e5c1e-4b8e-4d7e-9f51-2b1a3a4c5d6e.jsonl")
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	os.WriteFile(p, []byte(`{"type":"user","uuid":"u1","sessionId":"0b9e5c1e-4b8e-4d7e-9f51-2b1a3a4c5d6e","message":{"role":"user","content":"hi"}}`+"\n"), 0o644)
	e := testEngine(t, "claude-code", root)
	for _, r := range runAll(t, e, true) {
		if r.Verdict != Healthy {
			t.Fatalf("%s: %s %s", r.Path, r.Verdict, r.Detail)
		}
	}
	if e.LastGood.Load(p) == nil {
		t.Fatal("no last-good copy kept")
	}
	os.Remove(p)
	if tg, ok := e.Deleted(p); ok {
		t.Errorf("a deleted claude-code transcript became a target: %+v", tg)
	}
	if tg, ok := e.Deleted(filepath.Join(root, "projects", "nothing.jsonl")); ok {
		t.Errorf("a file never seen became a target: %+v", tg)
	}
}
