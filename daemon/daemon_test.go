package daemon

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/fsnotify/fsnotify"
	"github.com/sessionmedic/sessionmedic/policy"
	"github.com/sessionmedic/sessionmedic/watcher"
	"log/slog"
)

// fakeSource delivers only what the test sends: no real inotify events.
type fakeSource struct {
	events chan fsnotify.Event
	errs   chan error
	once   sync.Once
}

func newFake() *fakeSource {
	return &fakeSource{events: make(chan fsnotify.Event), errs: make(chan error, 4)}
}
func (f *fakeSource) Add(string) error              { return nil }
func (f *fakeSource) Remove(string) error           { return nil }
func (f *fakeSource) Events() <-chan fsnotify.Event { return f.events }
func (f *fakeSource) Errors() <-chan error          { return f.errs }
func (f *fakeSource) Close() error                  { return nil }

// logBuf collects JSON log lines safely.
type logBuf struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *logBuf) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *logBuf) events(msg string) []map[string]any {
	l.mu.Lock()
	defer l.mu.Unlock()
	var out []map[string]any
	for _, line := range strings.Split(l.b.String(), "\n") {
		var m map[string]any
		if json.Unmarshal([]byte(line), &m) == nil && m["msg"] == msg {
			out = append(out, m)
		}
	}
	return out
}

func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func testPolicy(t *testing.T, root string) *policy.Config {
	t.Helper()
	yaml := "version: 1\nstate_dir: " + filepath.Join(t.TempDir(), "state") + "\nrules:\n  - name: j\n    format: jsonl\n    paths: [" + root + "]\n    settle: 50ms\n    max_wait: 1s\n"
	cfg, err := policy.Parse("test.yaml", []byte(yaml))
	if err != nil {
		t.Fatal(err)
	}
	return cfg
}

func start(t *testing.T, o Options) (cancel func(), done chan error) {
	t.Helper()
	ctx, c := context.WithCancel(context.Background())
	done = make(chan error, 1)
	go func() { done <- Run(ctx, o) }()
	return c, done
}

func TestOverflowTriggersRescan(t *testing.T) {
	root := t.TempDir()
	p := filepath.Join(root, "s.jsonl")
	os.WriteFile(p, []byte("{\"a\":1}\n"), 0o644)
	cfg := testPolicy(t, root)
	src := newFake()
	var logs logBuf
	ready := make(chan struct{})
	cancel, done := start(t, Options{
		Load: func() (*policy.Config, []string, error) { return cfg, nil, nil },
		Log:  slog.New(slog.NewJSONHandler(&logs, nil)), Ready: ready, Notify: func(string) error { return nil },
		NewSource: func() (watcher.Source, error) { return src, nil },
	})
	defer func() { cancel(); <-done }()
	<-ready
	// Damage with no event at all: only a rescan can see it.
	os.WriteFile(p, []byte("{\"a\":1}\n{\"a\""), 0o644)
	src.errs <- fsnotify.ErrEventOverflow
	waitFor(t, "the rescan to heal the file", func() bool {
		b, _ := os.ReadFile(p)
		return string(b) == "{\"a\":1}\n"
	})
	waitFor(t, "file.healed", func() bool { return len(logs.events("file.healed")) > 0 })
	if len(logs.events("watch.overflow")) == 0 {
		t.Fatal("no watch.overflow event")
	}
	if ev := logs.events("file.healed"); len(ev) != 1 || ev[0]["strategy"] != "salvage" || ev[0]["rule"] != "j" {
		t.Fatalf("file.healed events: %v", ev)
	}
}

func TestReloadKeepsOldPolicyOnError(t *testing.T) {
	root := t.TempDir()
	p := filepath.Join(root, "s.jsonl")
	os.WriteFile(p, []byte("{\"a\":1}\n"), 0o644)
	cfg := testPolicy(t, root)
	bad := false
	reload := make(chan struct{})
	var logs logBuf
	var notes []string
	var mu sync.Mutex
	ready := make(chan struct{})
	cancel, done := start(t, Options{
		Load: func() (*policy.Config, []string, error) {
			if bad {
				return nil, nil, &policy.Error{File: "p.yaml", Line: 3, Field: "rules[0].settle", Msg: `"2x" is not a duration`}
			}
			return cfg, nil, nil
		},
		Log: slog.New(slog.NewJSONHandler(&logs, nil)), Reload: reload, Ready: ready,
		Notify: func(s string) error { mu.Lock(); notes = append(notes, s); mu.Unlock(); return nil },
	})
	defer func() { cancel(); <-done }()
	<-ready
	bad = true
	reload <- struct{}{}
	waitFor(t, "policy.invalid", func() bool { return len(logs.events("policy.invalid")) == 1 })
	// The old policy still heals, through real inotify events.
	os.WriteFile(p, []byte("{\"a\":1}\n{\"a\""), 0o644)
	waitFor(t, "heal under the old policy", func() bool {
		b, _ := os.ReadFile(p)
		return string(b) == "{\"a\":1}\n"
	})
	bad = false
	reload <- struct{}{}
	waitFor(t, "policy.reloaded", func() bool { return len(logs.events("policy.reloaded")) == 1 })
	// READY=1 follows the rescan under the new policy, a moment after policy.reloaded.
	joined := func() string { mu.Lock(); defer mu.Unlock(); return strings.Join(notes, "|") }
	waitFor(t, "READY=1 after RELOADING=1", func() bool { return strings.Contains(joined(), "RELOADING=1|READY=1") })
	if j := joined(); !strings.HasPrefix(j, "READY=1") || strings.Count(j, "RELOADING=1") != 1 {
		t.Fatalf("notifications: %q", j)
	}
}

func TestShutdownLeavesNoGoroutine(t *testing.T) {
	before := runtime.NumGoroutine()
	root := t.TempDir()
	os.WriteFile(filepath.Join(root, "s.jsonl"), []byte("{\"a\":1}\n"), 0o644)
	cfg := testPolicy(t, root)
	cfg.HTTP.Listen = "127.0.0.1:0"
	ready := make(chan struct{})
	cancel, done := start(t, Options{Load: func() (*policy.Config, []string, error) { return cfg, nil, nil }, Ready: ready, Notify: func(string) error { return nil }})
	<-ready
	cancel()
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("Run did not return after cancel")
	}
	waitFor(t, "goroutines to end", func() bool { return runtime.NumGoroutine() <= before })
}

func TestObserveModeWritesNothing(t *testing.T) {
	root := t.TempDir()
	p := filepath.Join(root, "s.jsonl")
	os.WriteFile(p, []byte("{\"a\":1}\n{\"a\""), 0o644)
	cfg := testPolicy(t, root)
	cfg.Rules[0].Mode = "observe"
	var logs logBuf
	ready := make(chan struct{})
	cancel, done := start(t, Options{Load: func() (*policy.Config, []string, error) { return cfg, nil, nil },
		Log: slog.New(slog.NewJSONHandler(&logs, nil)), Ready: ready, Notify: func(string) error { return nil }})
	defer func() { cancel(); <-done }()
	<-ready
	waitFor(t, "heal_refused", func() bool { return len(logs.events("file.heal_refused")) == 1 })
	if b, _ := os.ReadFile(p); string(b) != "{\"a\":1}\n{\"a\"" {
		t.Fatal("observe mode wrote the file")
	}
}

func TestFlappingFileStopsBeingHealed(t *testing.T) {
	root := t.TempDir()
	p := filepath.Join(root, "s.jsonl")
	os.WriteFile(p, []byte("{\"a\":1}\n"), 0o644)
	cfg := testPolicy(t, root)
	var logs logBuf
	ready := make(chan struct{})
	cancel, done := start(t, Options{Load: func() (*policy.Config, []string, error) { return cfg, nil, nil },
		Log: slog.New(slog.NewJSONHandler(&logs, nil)), Ready: ready, Notify: func(string) error { return nil },
		FlapHeals: 2, FlapWindow: time.Hour})
	defer func() { cancel(); <-done }()
	<-ready
	for i := 0; i < 4; i++ {
		os.WriteFile(p, []byte("{\"a\":1}\n{\"a\""), 0o644)
		if i < 3 {
			n := i + 1
			waitFor(t, "heal", func() bool { return len(logs.events("file.healed")) == n })
		}
	}
	waitFor(t, "file.flapping", func() bool { return len(logs.events("file.flapping")) == 1 })
	waitFor(t, "file.damaged (inspected, not healed)", func() bool { return len(logs.events("file.damaged")) >= 1 })
	if b, _ := os.ReadFile(p); string(b) != "{\"a\":1}\n{\"a\"" {
		t.Fatalf("a flapping file was healed again: %q", b)
	}
}

// An app without a lock that writes over a healed file the moment the heal's rename lands
// wrote a version of its own: its event must not pass for the event of the heal, and its
// damage is healed in turn.
func TestAppWriteRightAfterHealIsNotTakenForOurs(t *testing.T) {
	root := t.TempDir()
	p := filepath.Join(root, "s.jsonl")
	os.WriteFile(p, []byte("{\"a\":1}\n"), 0o644)
	cfg := testPolicy(t, root)
	var logs logBuf
	ready := make(chan struct{})
	var once sync.Once
	appWrote := make(chan struct{})
	cancel, done := start(t, Options{
		Load: func() (*policy.Config, []string, error) { return cfg, nil, nil },
		Log:  slog.New(slog.NewJSONHandler(&logs, nil)), Ready: ready, Notify: func(string) error { return nil },
		Step: func(step, path string) {
			if step != "renamed" || path != p {
				return
			}
			once.Do(func() {
				// The app saves in place (open "w"), over the file the heal just renamed
				// there, and its save is torn too.
				if err := os.WriteFile(p, []byte("{\"a\":1}\n{\"b\":2}\n{\"b\""), 0o644); err != nil {
					t.Error(err)
				}
				close(appWrote)
			})
		},
	})
	defer func() { cancel(); <-done }()
	<-ready
	os.WriteFile(p, []byte("{\"a\":1}\n{\"a\""), 0o644)
	<-appWrote
	waitFor(t, "the app's torn save to be healed too", func() bool {
		b, _ := os.ReadFile(p)
		return string(b) == "{\"a\":1}\n{\"b\":2}\n" && len(logs.events("file.healed")) == 2
	})
	if ev := logs.events("file.healed"); len(ev) != 2 || ev[0]["quarantine"] == ev[1]["quarantine"] {
		t.Fatalf("file.healed events: %v", ev)
	}
}

// startYAML starts the daemon on the policy text yaml, its JSON log in the returned buffer,
// with the options of o (Load, Log, Ready and Notify are set here), and waits until it is
// ready. The daemon stops when the test ends.
func startYAML(t *testing.T, yaml string, o Options) *logBuf {
	t.Helper()
	cfg, err := policy.Parse("test.yaml", []byte(yaml))
	if err != nil {
		t.Fatal(err)
	}
	logs := &logBuf{}
	ready := make(chan struct{})
	o.Load = func() (*policy.Config, []string, error) { return cfg, nil, nil }
	o.Log, o.Ready, o.Notify = slog.New(slog.NewJSONHandler(logs, nil)), ready, func(string) error { return nil }
	cancel, done := start(t, o)
	t.Cleanup(func() { cancel(); <-done })
	<-ready
	return logs
}
