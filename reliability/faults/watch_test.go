package faults

import (
	"context"
	"log/slog"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/fsnotify/fsnotify"
	"github.com/sessionmedic/sessionmedic/daemon"
	"github.com/sessionmedic/sessionmedic/policy"
	"github.com/sessionmedic/sessionmedic/watcher"
)

// slowSource is inotify whose watches take a while to add, as on a large or busy tree (or a
// slow network filesystem): each Add waits delay first.
type slowSource struct {
	w     *fsnotify.Watcher
	delay time.Duration
}

func (s slowSource) Add(dir string) error {
	time.Sleep(s.delay)
	return s.w.Add(dir)
}
func (s slowSource) Remove(dir string) error       { return s.w.Remove(dir) }
func (s slowSource) Events() <-chan fsnotify.Event { return s.w.Events }
func (s slowSource) Errors() <-chan error          { return s.w.Errors }
func (s slowSource) Close() error                  { return s.w.Close() }

// TestDaemonSeesADamageRightAfterReady: the daemon says it is ready (Options.Ready, READY=1,
// /readyz) once its first scan finished. A file damaged right after that must be healed
// without waiting for the periodic rescan, however long the watches take to set up.
func TestDaemonSeesADamageRightAfterReady(t *testing.T) {
	s := sample{app: "copaw", src: "corrupt_extra_data_race"}
	e, caseDir, _ := s.layout(t, 50*time.Millisecond, nil)
	console := filepath.Join(caseDir, "sessions", "console", "default_console--default.json")
	damaged, err := os.ReadFile(console)
	if err != nil {
		t.Fatal(err)
	}
	cfg := e.Policy
	var logs logBuffer
	ready := make(chan struct{})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		done <- daemon.Run(ctx, daemon.Options{
			Load:   func() (*policy.Config, []string, error) { return cfg, nil, nil },
			Log:    slog.New(slog.NewJSONHandler(&logs, &slog.HandlerOptions{Level: slog.LevelDebug})),
			Notify: func(string) error { return nil }, Ready: ready, Backoff: 20 * time.Millisecond, Rescan: time.Hour,
			NewSource: func() (watcher.Source, error) {
				w, err := fsnotify.NewWatcher()
				return slowSource{w: w, delay: 100 * time.Millisecond}, err
			},
		})
	}()
	defer func() {
		cancel()
		<-done
	}()
	<-ready
	// The deadlines below only bound a failure (the rescan is an hour away, so a missed write
	// is never healed within them); a pass waits for the event alone, however loaded the
	// machine.
	healed := waitEvents(t, &logs, 0, caseDir, []string{"sessions/console/default_console--default.json"}, time.Minute, "file.healed")
	if len(healed) != 1 {
		t.Fatalf("the first scan did not heal the damaged file:\n%s", logs.tail(3000))
	}
	stats.scenarios.Add(1)
	mark := len(logs.lines())
	if err := os.WriteFile(console, damaged, 0o644); err != nil {
		t.Fatal(err)
	}
	// The watches are all in place half a second after ready; the heal takes settle (50ms) more.
	if got := waitEvents(t, &logs, mark, caseDir, []string{"sessions/console/default_console--default.json"}, time.Minute, "file.healed", "file.heal_refused"); len(got) == 0 {
		b, _ := os.ReadFile(console)
		violate(t, "a file damaged right after the daemon was ready was not healed within a minute (it holds %d bytes, the damaged %d): "+
			"the first scan ran while the watches were still being added, and the write fell between the two; only the periodic rescan would find it", len(b), len(damaged))
	}
}
