package watcher

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/fsnotify/fsnotify"
)

// fakeSource is a Source the test drives: it sends events and errors by hand, and makes Add
// fail for chosen directories.
type fakeSource struct {
	events chan fsnotify.Event
	errors chan error

	mu      sync.Mutex
	watched map[string]bool
	addErr  map[string]error
	closed  bool
}

func newFakeSource() *fakeSource {
	return &fakeSource{
		events:  make(chan fsnotify.Event),
		errors:  make(chan error),
		watched: make(map[string]bool),
		addErr:  make(map[string]error),
	}
}

func (f *fakeSource) Add(dir string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if err := f.addErr[dir]; err != nil {
		return err
	}
	f.watched[dir] = true
	return nil
}

func (f *fakeSource) Remove(dir string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if !f.watched[dir] {
		return fsnotify.ErrNonExistentWatch
	}
	delete(f.watched, dir)
	return nil
}

func (f *fakeSource) Events() <-chan fsnotify.Event { return f.events }
func (f *fakeSource) Errors() <-chan error          { return f.errors }

func (f *fakeSource) Close() error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.closed = true
	return nil
}

func (f *fakeSource) isClosed() bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.closed
}

// delivery is an Event and when it came, relative to the harness's mark.
type delivery struct {
	at time.Duration
	ev Event
}

// harness runs a Watcher and records everything it sends.
type harness struct {
	t      *testing.T
	w      *Watcher
	cancel context.CancelFunc
	runErr chan error
	wg     sync.WaitGroup

	mu      sync.Mutex
	start   time.Time
	evs     []delivery
	rescans []string
	errs    []error
}

func start(t *testing.T, o Options) *harness {
	t.Helper()
	w, err := New(o)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	h := &harness{t: t, w: w, cancel: cancel, runErr: make(chan error, 1), start: time.Now()}
	go func() { h.runErr <- w.Run(ctx) }()
	h.wg.Add(3)
	go func() {
		defer h.wg.Done()
		for e := range w.Events() {
			h.mu.Lock()
			h.evs = append(h.evs, delivery{time.Since(h.start), e})
			h.mu.Unlock()
		}
	}()
	go func() {
		defer h.wg.Done()
		for r := range w.Rescans() {
			h.mu.Lock()
			h.rescans = append(h.rescans, r)
			h.mu.Unlock()
		}
	}()
	go func() {
		defer h.wg.Done()
		for err := range w.Errors() {
			h.mu.Lock()
			h.errs = append(h.errs, err)
			h.mu.Unlock()
		}
	}()
	<-w.Ready()
	return h
}

// stop cancels Run and waits for it and for the readers.
func (h *harness) stop() {
	h.t.Helper()
	h.cancel()
	select {
	case err := <-h.runErr:
		if err != nil {
			h.t.Errorf("Run: %v", err)
		}
	case <-time.After(10 * time.Second):
		h.t.Fatal("Run did not return after cancel")
	}
	h.wg.Wait()
}

// mark makes now the zero of delivery times.
func (h *harness) mark() {
	h.mu.Lock()
	h.start = time.Now()
	h.mu.Unlock()
}

func (h *harness) events() []delivery {
	h.mu.Lock()
	defer h.mu.Unlock()
	return slices.Clone(h.evs)
}

func (h *harness) paths() []string {
	var ps []string
	for _, d := range h.events() {
		ps = append(ps, d.ev.Path)
	}
	return ps
}

func (h *harness) gotRescans() []string {
	h.mu.Lock()
	defer h.mu.Unlock()
	return slices.Clone(h.rescans)
}

func (h *harness) gotErrors() []error {
	h.mu.Lock()
	defer h.mu.Unlock()
	return slices.Clone(h.errs)
}

// eventually polls cond (for the real filesystem, where nothing can be waited on exactly).
func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// waitPaths waits until every path has been delivered at least once.
func (h *harness) waitPaths(paths ...string) {
	h.t.Helper()
	eventually(h.t, "events for "+filepath.Base(paths[0])+"...", func() bool {
		got := h.paths()
		for _, p := range paths {
			if !slices.Contains(got, p) {
				return false
			}
		}
		return true
	})
}

func fixed(settle, maxWait time.Duration) func(string) (time.Duration, time.Duration) {
	return func(string) (time.Duration, time.Duration) { return settle, maxWait }
}

func writeFile(t *testing.T, path, data string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(data), 0o644); err != nil {
		t.Fatal(err)
	}
}

func appendFile(t *testing.T, path, data string) {
	t.Helper()
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.WriteString(data); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
}

// realRun starts a Watcher on the real inotify source.
func realRun(t *testing.T, o Options) *harness {
	t.Helper()
	if o.Settle == nil {
		o.Settle = fixed(50*ms, 5*time.Second)
	}
	return start(t, o)
}

func mkdirAll(t *testing.T, path string) {
	t.Helper()
	if err := os.MkdirAll(path, 0o755); err != nil {
		t.Fatal(err)
	}
}
