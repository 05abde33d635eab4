package heal

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/sessionmedic/sessionmedic/policy"
)

// unwritableTree is a rule over root whose sessions directory no heal may write: owned by
// another user and not writable by them (run as root, a heal acts as the tree's owner),
// or, run as that owner, not writable by its owner.
func unwritableTree(t *testing.T) (root, dir string) {
	t.Helper()
	root = t.TempDir()
	dir = filepath.Join(root, "alice", "sessions")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if os.Geteuid() == 0 {
		for _, p := range []string{filepath.Join(root, "alice"), dir} {
			if err := os.Chown(p, 1000, 1000); err != nil {
				t.Fatal(err)
			}
		}
	}
	return root, dir
}

func healRule(root string, mode policy.Mode) *policy.Config {
	return &policy.Config{Version: 1, Rules: []policy.Rule{{
		Name: "j", Format: "jsonl", Paths: []string{root}, Lock: policy.Lock{Protocol: "none"},
		Strategies: []policy.Strategy{policy.Salvage}, Mode: mode,
		Match: []string{"*.jsonl"}, Limits: policy.Limits{MaxLoss: 0.9, MaxFileSize: 1 << 20},
	}}}
}

// TestUnhealableSaysWhereNoHealCanBeWritten: a directory no heal can write is found before
// any damage, with the reason and what to do; a writable one, a rule in observe mode, and a
// directory made writable again are not.
func TestUnhealableSaysWhereNoHealCanBeWritten(t *testing.T) {
	root, dir := unwritableTree(t)
	ok := filepath.Join(root, "bob")
	os.MkdirAll(ok, 0o755)
	for _, p := range []string{filepath.Join(dir, "a.jsonl"), filepath.Join(dir, "b.jsonl"), filepath.Join(ok, "c.jsonl")} {
		if err := os.WriteFile(p, []byte("{\"n\":1}\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	os.Chmod(dir, 0o555)
	t.Cleanup(func() { os.Chmod(dir, 0o755) })

	cfg := healRule(root, "heal")
	cfg.StateDir = filepath.Join(t.TempDir(), "state")
	e := New(cfg, Options{})
	targets, errs := e.Targets(nil, nil)
	if len(errs) > 0 || len(targets) != 3 {
		t.Fatalf("targets %v, errs %v", targets, errs)
	}
	u := e.Unhealable(targets)
	if len(u) != 1 || u[0].Dir != dir || u[0].Rule != "j" || u[0].Files != 2 {
		t.Fatalf("unhealable: %+v", u)
	}
	for _, want := range []string{"permission denied", "may not write this directory", "mode to observe", map[bool]string{true: "tree's owner (uid 1000)", false: "sessionmedic (uid"}[os.Geteuid() == 0]} {
		if !strings.Contains(u[0].Reason, want) {
			t.Errorf("reason %q does not say %q", u[0].Reason, want)
		}
	}

	// Observe mode writes nothing: nothing to refuse.
	obs := healRule(root, "observe")
	obs.StateDir = cfg.StateDir
	eo := New(obs, Options{})
	ot, _ := eo.Targets(nil, nil)
	if u := eo.Unhealable(ot); len(u) != 0 {
		t.Errorf("observe mode: %+v", u)
	}

	// Writable again: nothing said.
	os.Chmod(dir, 0o755)
	if u := e.Unhealable(targets); len(u) != 0 {
		t.Errorf("writable again: %+v", u)
	}

	// Run as root, a directory someone else may write is refused at every heal: said first.
	if os.Geteuid() == 0 {
		os.Chmod(dir, 0o777)
		u := e.Unhealable(targets)
		if len(u) != 1 || !strings.Contains(u[0].Reason, "insecure permissions") {
			t.Errorf("a directory anyone may write: %+v", u)
		}
	}
}

// TestRefusedWriteSaysWhatWasTried: a heal planned and then refused by the file system says
// what each strategy came to, the chosen one with the write that failed, and what to do
// (it said "tried": [] before).
func TestRefusedWriteSaysWhatWasTried(t *testing.T) {
	root, dir := unwritableTree(t)
	p := filepath.Join(dir, "a.jsonl")
	if err := os.WriteFile(p, []byte("{\"n\":1}\n{\"n\":2}\n{\"n\""), 0o644); err != nil {
		t.Fatal(err)
	}
	os.Chmod(dir, 0o555)
	t.Cleanup(func() { os.Chmod(dir, 0o755) })
	cfg := healRule(root, "heal")
	cfg.StateDir = filepath.Join(t.TempDir(), "state")
	e := New(cfg, Options{})
	r := e.Heal(context.Background(), Target{Path: p, Rule: &e.Policy.Rules[0]}, false)
	if r.Verdict != Damaged || r.Action != ActionRefused {
		t.Fatalf("want a refused heal: %+v", r)
	}
	if len(r.Tried) != 1 || !strings.HasPrefix(r.Tried[0], "salvage: drops ") || !strings.Contains(r.Tried[0], "; chosen, not written: create temp") || !strings.Contains(r.Tried[0], "permission denied") {
		t.Errorf("tried %q", r.Tried)
	}
	if !strings.Contains(r.Reason, "may not write this directory") || !strings.Contains(r.Reason, "mode to observe") {
		t.Errorf("reason %q says nothing to do", r.Reason)
	}
	if b, _ := os.ReadFile(p); string(b) != "{\"n\":1}\n{\"n\":2}\n{\"n\"" {
		t.Errorf("file changed: %q", b)
	}
	if n, _ := e.Quarantine.List(); len(n) != 0 {
		t.Errorf("quarantine entries left by a heal that wrote nothing: %v", n)
	}
}

// TestCopyRefusedIsReported: a last-good copy the state dir refuses (no space) is in the
// report (the daemon says it), where it was dropped silently; a copy that fails for another
// reason (the file moved) is not an error of the state dir's.
func TestCopyRefusedIsReported(t *testing.T) {
	root := t.TempDir()
	p := filepath.Join(root, "a.jsonl")
	os.WriteFile(p, []byte("{\"n\":1}\n"), 0o644)
	cfg := healRule(root, "heal")
	cfg.Rules[0].KeepLastGood = true
	cfg.StateDir = filepath.Join(t.TempDir(), "state")
	var faults faultSwitch
	e := New(cfg, Options{Faults: faults.fault})
	lg := filepath.Join(cfg.StateDir, "last-good")
	faults.set(func(op, path string) error {
		if op == "rename" && strings.HasPrefix(path, lg) {
			return &os.PathError{Op: "write", Path: path, Err: syscall.ENOSPC}
		}
		return nil
	})
	r := e.Heal(context.Background(), Target{Path: p, Rule: &e.Policy.Rules[0]}, false)
	if r.Verdict != Healthy || !strings.Contains(r.CopyErr, "no space left") {
		t.Errorf("report %+v", r)
	}
	faults.set(func(op, path string) error {
		if op == "rename" && strings.HasPrefix(path, lg) {
			return os.ErrNotExist
		}
		return nil
	})
	if r := e.Heal(context.Background(), Target{Path: p, Rule: &e.Policy.Rules[0]}, false); r.CopyErr != "" {
		t.Errorf("not the state dir's refusal, reported as one: %+v", r)
	}
	faults.set(nil)
	if r := e.Heal(context.Background(), Target{Path: p, Rule: &e.Policy.Rules[0]}, false); r.CopyErr != "" || e.LastGood.Load(p) == nil {
		t.Errorf("room again: %+v, copy %q", r, e.LastGood.Load(p))
	}
}
