//go:build linux

package hostile

import (
	"bytes"
	"context"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	smdaemon "github.com/sessionmedic/sessionmedic/daemon"
	"github.com/sessionmedic/sessionmedic/heal"
	"github.com/sessionmedic/sessionmedic/policy"
)

// A swap replaces the file a heal is working on (or its directory) with something that leads
// outside the rule's roots.
type swap struct {
	name string
	// prepare runs before the heal (an attacker's groundwork), do at the heal step.
	prepare func(t *testing.T, target, outside string)
	do      func(t *testing.T, target, outside string)
}

var swaps = []swap{
	{name: "file-to-symlink", do: func(t *testing.T, target, outside string) {
		must(t, os.Remove(target))
		must(t, os.Symlink(filepath.Join(outside, "secret.jsonl"), target))
	}},
	{name: "symlink-renamed-over-file", do: func(t *testing.T, target, outside string) {
		tmp := target + ".swap"
		must(t, os.Symlink(filepath.Join(outside, "secret.jsonl"), tmp))
		must(t, os.Rename(tmp, target))
	}},
	{name: "file-to-hardlink-of-outside-file", do: func(t *testing.T, target, outside string) {
		must(t, os.Remove(target))
		must(t, os.Link(filepath.Join(outside, "secret.jsonl"), target))
	}},
	{name: "dir-to-symlink", do: func(t *testing.T, target, outside string) {
		dir := filepath.Dir(target)
		must(t, os.Rename(dir, dir+".moved"))
		must(t, os.Symlink(outside, dir))
	}},
	{name: "dir-to-symlink-with-prelinked-file", prepare: func(t *testing.T, target, outside string) {
		// The attacker links the session file into the outside directory first: through the
		// swapped directory, the path then leads to the very inode that was inspected.
		must(t, os.Link(target, filepath.Join(outside, filepath.Base(target))))
	}, do: func(t *testing.T, target, outside string) {
		dir := filepath.Dir(target)
		must(t, os.Rename(dir, dir+".moved"))
		must(t, os.Symlink(outside, dir))
	}},
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// TestSymlinkSwapDuringHeal swaps the target for a way out of the roots at each step of the
// heal protocol (in process, through Engine.Step): no write may land outside the roots, no
// symlink target may change, and no temp file may be left.
func TestSymlinkSwapDuringHeal(t *testing.T) {
	steps := []string{"locked", "quarantined", "journaled", "temp-written"}
	locks := map[string]string{"no-lock": "", "flock": "lock: {flock: \"{file}.lock\"}, "}
	outcomes := map[string]int{}
	tempsLeft := 0
	for _, sw := range swaps {
		for _, step := range steps {
			for lname, lockYAML := range locks {
				t.Run(sw.name+"/"+step+"/"+lname, func(t *testing.T) {
					base := t.TempDir()
					root, outside, state := filepath.Join(base, "root"), filepath.Join(base, "outside"), filepath.Join(base, "state")
					target := filepath.Join(root, "sessions", "s.jsonl")
					mustWrite(t, target, []byte(tornTail))
					mustWrite(t, filepath.Join(outside, "secret.jsonl"), []byte(tornTail))
					mustWrite(t, filepath.Join(outside, "other.jsonl"), []byte(healthyLine))
					cfg, err := policy.Parse("p.yaml", []byte(fmt.Sprintf("version: 1\nstate_dir: %s\nrules:\n  - {name: j, format: jsonl, %spaths: [%s]}\n", state, lockYAML, root)))
					if err != nil {
						t.Fatal(err)
					}
					if sw.prepare != nil {
						sw.prepare(t, target, outside)
					}
					before := snapshot(t, nil, outside)
					swapped := false
					eng := heal.New(cfg, heal.Options{Step: func(s, p string) {
						if s == step && p == target && !swapped {
							swapped = true
							sw.do(t, target, outside)
						}
					}})
					targets, errs := eng.Targets(nil, nil)
					if len(errs) > 0 || len(targets) != 1 {
						t.Fatalf("targets %v %v", targets, errs)
					}
					r := eng.Heal(context.Background(), targets[0], false)
					if !swapped {
						t.Fatalf("the heal never reached step %s: %+v", step, r)
					}
					outcomes[fmt.Sprintf("%s %s", r.Verdict, r.Action)]++
					if diff := changed(before, snapshot(t, nil, outside), nil); len(diff) > 0 {
						t.Errorf("after a swap at %s the heal wrote outside the roots: %v (report: %s %s %s)", step, diff, r.Verdict, r.Action, r.Reason)
					}
					if r.Action == heal.ActionHealed {
						t.Errorf("after a swap at %s the heal still reports healed: %+v", step, r)
					}
					noTemps(t, outside)
					if left := tempsIn(root); len(left) > 0 {
						// Inside the roots; a directory moved away mid-heal keeps the temp.
						t.Logf("observation: swap at %s leaves a temp file in the moved directory: %v (report: %s %s)", step, left, r.Verdict, r.Action)
						tempsLeft++
					}
					// Later heals of the swapped path stay inside too.
					if r2 := eng.Heal(context.Background(), targets[0], false); r2.Action == heal.ActionHealed {
						if diff := changed(before, snapshot(t, nil, outside), nil); len(diff) > 0 {
							t.Errorf("a second heal after the swap wrote outside: %v", diff)
						}
					}
				})
			}
		}
	}
	t.Logf("outcomes: %v; temp files left in a moved directory: %d", outcomes, tempsLeft)
	figure("symlink-swaps", map[string]any{"cases": len(swaps) * len(steps) * len(locks), "outcomes": outcomes, "temps_left_in_moved_dir": tempsLeft})
}

// TestSymlinkSwapUnderDaemon runs the daemon in process and swaps the file it is healing for
// a symlink to a file outside its roots once it holds the lock; the daemon must leave the
// outside file alone and go on healing other files.
func TestSymlinkSwapUnderDaemon(t *testing.T) {
	base := t.TempDir()
	root, outside, state := filepath.Join(base, "root"), filepath.Join(base, "outside"), filepath.Join(base, "state")
	target := filepath.Join(root, "s.jsonl")
	mustWrite(t, target, []byte(healthyLine))
	mustWrite(t, filepath.Join(outside, "secret.jsonl"), []byte(tornTail))
	cfg, err := policy.Parse("p.yaml", []byte(fmt.Sprintf("version: 1\nstate_dir: %s\nrules:\n  - {name: j, format: jsonl, paths: [%s], settle: 40ms, max_wait: 400ms}\n", state, root)))
	if err != nil {
		t.Fatal(err)
	}
	before := snapshot(t, nil, outside)
	var mu sync.Mutex
	var logs bytes.Buffer
	swapped := make(chan struct{})
	var once sync.Once
	ready := make(chan struct{})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		done <- smdaemon.Run(ctx, smdaemon.Options{
			Load:   func() (*policy.Config, []string, error) { return cfg, nil, nil },
			Log:    slog.New(slog.NewJSONHandler(lockedWriter{&mu, &logs}, &slog.HandlerOptions{Level: slog.LevelDebug})),
			Notify: func(string) error { return nil },
			Ready:  ready,
			Step: func(step, p string) {
				if step == "locked" && p == target {
					once.Do(func() {
						os.Remove(p)
						os.Symlink(filepath.Join(outside, "secret.jsonl"), p)
						close(swapped)
					})
				}
			},
		})
	}()
	<-ready
	mustWrite(t, target, []byte(tornTail))
	select {
	case <-swapped:
	case <-time.After(10 * time.Second):
		t.Fatal("the daemon never started the heal")
	}
	other := filepath.Join(root, "other.jsonl")
	mustWrite(t, other, []byte(tornTail))
	eventually(t, 10*time.Second, "the next damage healed", func() bool {
		b, _ := os.ReadFile(other)
		return string(b) == healthyLine
	})
	time.Sleep(300 * time.Millisecond)
	cancel()
	if err := <-done; err != nil {
		t.Error(err)
	}
	if diff := changed(before, snapshot(t, nil, outside), nil); len(diff) > 0 {
		mu.Lock()
		t.Errorf("the daemon wrote outside its roots: %v\n%s", diff, logs.String())
		mu.Unlock()
	}
	if fi, err := os.Lstat(target); err != nil || fi.Mode()&os.ModeSymlink == 0 {
		t.Logf("observation: the swapped symlink is now %v (%v)", fi.Mode(), err)
	}
	mu.Lock()
	if strings.Contains(logs.String(), `"msg":"file.healed","rule":"j","path":"`+target+`"`) {
		t.Errorf("the daemon reports the swapped file healed:\n%s", logs.String())
	}
	mu.Unlock()
	noTemps(t, root)
}

type lockedWriter struct {
	mu *sync.Mutex
	w  *bytes.Buffer
}

func (l lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}

func tempsIn(root string) []string {
	var out []string
	filepath.WalkDir(root, func(p string, d os.DirEntry, err error) error {
		if err == nil && strings.Contains(filepath.Base(p), ".sessionmedic-") {
			out = append(out, p)
		}
		return nil
	})
	return out
}

// TestDirectorySwapUnderDaemon: while the daemon watches a tree, its session directory is
// renamed away (inside the root, then out of it) and a symlink to a directory outside the
// roots takes its name. Damage then written into the moved directory must be healed under its
// new name (or not at all), and nothing outside the roots may be written.
func TestDirectorySwapUnderDaemon(t *testing.T) {
	base := t.TempDir()
	root, outside, state, away := filepath.Join(base, "root"), filepath.Join(base, "outside"), filepath.Join(base, "state"), filepath.Join(base, "away")
	sessions := filepath.Join(root, "sessions")
	mustWrite(t, filepath.Join(sessions, "a.jsonl"), []byte(healthyLine))
	mustWrite(t, filepath.Join(outside, "a.jsonl"), []byte(tornTail))
	pol := writePolicy(t, state, fmt.Sprintf("  - {name: j, format: jsonl, paths: [%s], settle: 50ms, max_wait: 500ms}\n", root))
	before := snapshot(t, nil, outside)
	d := startDaemon(t, pol)
	eventually(t, 20*time.Second, "the first scan", func() bool { return len(d.events("scan.finished")) > 0 })

	moved := filepath.Join(root, "sessions.moved")
	must(t, os.Rename(sessions, moved))
	must(t, os.Symlink(outside, sessions))
	time.Sleep(200 * time.Millisecond)
	mustWrite(t, filepath.Join(moved, "a.jsonl"), []byte(tornTail))
	eventually(t, 10*time.Second, "the moved file healed under its new name", func() bool {
		b, _ := os.ReadFile(filepath.Join(moved, "a.jsonl"))
		return string(b) == healthyLine
	})
	// Out of the root: nothing there is the daemon's business any more.
	must(t, os.Rename(moved, away))
	time.Sleep(200 * time.Millisecond)
	mustWrite(t, filepath.Join(away, "a.jsonl"), []byte(tornTail))
	time.Sleep(1500 * time.Millisecond)
	if diff := changed(before, snapshot(t, nil, outside), nil); len(diff) > 0 {
		t.Errorf("the daemon wrote outside its roots through the swapped directory: %v\n%s", diff, tail(d.log()))
	}
	for _, ev := range d.events("file.healed") {
		if p := fmt.Sprint(ev["path"]); !strings.HasPrefix(p, root+"/") || strings.HasPrefix(p, sessions+"/") {
			t.Errorf("healed %s", p)
		}
	}
	d.stop(t)
}
