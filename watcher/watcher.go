// Package watcher turns filesystem events under a set of roots into settled paths: one watch per
// directory, recursive, a per-path quiet period with a minimum and a maximum wait, and rescan
// signals when events may have been lost.
//
// It knows nothing of file formats or policy: a filter function says which paths matter, a
// settle function says how long each path must be quiet.
//
// Caveats (inotify's, mostly):
//   - A directory created under a watched one is watched and then walked, and the files found
//     in it are reported as changed: files land before the watch exists.
//   - After a kernel queue overflow or a source error, events may have been lost anywhere: every
//     root is sent on Rescans. Only a rescan recovers.
//   - A root that does not exist yet is waited for by watching its nearest existing ancestor.
//     Renaming an ancestor of a root (or of that waiting point) is not seen; the watches follow
//     the moved directory. The daemon's slow periodic rescan is the safety net.
//   - Roots are followed when they are symbolic links; nothing below a root is.
package watcher

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sync/atomic"
	"time"

	"github.com/fsnotify/fsnotify"
	"github.com/sessionmedic/sessionmedic/internal/pathx"
)

// Event says that a path changed and is now quiet (or has been changing for too long).
type Event struct {
	Path   string // a file (not directory) path under a root that changed (written, created, removed or renamed)
	Forced bool   // delivered because MaxWait passed while writes never stopped: inspect read-only
}

// Options configures a Watcher.
type Options struct {
	// Roots are absolute directory paths; they may not exist yet.
	Roots []string
	// Filter reports whether a path matters. For a directory, false means: do not watch it and
	// do not descend. Roots themselves are not filtered. nil accepts everything.
	Filter func(path string, isDir bool) bool
	// Settle returns the quiet period and the maximum wait for a path; it is asked once per
	// pending period. A settle under 1ms counts as 1ms; a maxWait <= 0 means no maximum.
	// nil means 2s and 30s.
	Settle func(path string) (settle, maxWait time.Duration)
	// Source delivers the raw events. nil means a real fsnotify watcher, created by Run.
	// Run closes the Source when it returns.
	Source Source
	// RetryWatches is how often directories whose watch could not be added (the inotify
	// watch limit, most often) are tried again; once a watch is in place, the files found in
	// its directory are reported as changed. 0 means DefaultRetryWatches.
	RetryWatches time.Duration
	// MaxWatches bounds the directories watched at once (0: no bound but the kernel's). A
	// directory past it is not watched: it is reported once as a [*BudgetError], its roots
	// are rescanned (and again at every RetryWatches while it stays unwatched), and it is
	// watched as soon as the budget allows.
	MaxWatches int
}

// BudgetError: a directory was left unwatched because MaxWatches directories are watched.
type BudgetError struct {
	Dir    string
	Budget int
}

func (e *BudgetError) Error() string {
	return fmt.Sprintf("watch budget of %d directories used up: %s is not watched; its files are found by periodic rescans (raise watch_budget, or narrow the rule's paths)", e.Budget, e.Dir)
}

// Source is the seam over fsnotify: the real one is an *fsnotify.Watcher, tests inject a fake
// that sends events, errors and overflows.
type Source interface {
	Add(dir string) error
	Remove(dir string) error
	Events() <-chan fsnotify.Event
	Errors() <-chan error
	Close() error
}

// Default settle times, used when Options.Settle is nil.
const (
	DefaultSettle  = 2 * time.Second
	DefaultMaxWait = 30 * time.Second
	// DefaultRetryWatches: an operator who raises fs.inotify.max_user_watches sees the missing
	// watches added within this long, without a restart.
	DefaultRetryWatches = time.Minute
)

// Watcher watches the roots of its Options. Create it with New, start it with Run.
type Watcher struct {
	roots  []string
	filter func(string, bool) bool
	settle func(string) (time.Duration, time.Duration)
	source Source
	retry  time.Duration
	budget int

	events    chan Event
	rescans   chan string
	errs      chan error
	ready     chan struct{}
	dirs      atomic.Int64 // written by the Run goroutine, read by Dirs
	unwatched atomic.Int64 // directories waiting for a watch; written by Run, read by Unwatched
	started   atomic.Bool
}

// New checks the options and returns a Watcher; nothing is watched until Run.
func New(o Options) (*Watcher, error) {
	w := &Watcher{
		filter:  o.Filter,
		settle:  o.Settle,
		source:  o.Source,
		retry:   o.RetryWatches,
		budget:  o.MaxWatches,
		events:  make(chan Event),
		rescans: make(chan string),
		errs:    make(chan error),
		ready:   make(chan struct{}),
	}
	for _, r := range o.Roots {
		if !filepath.IsAbs(r) {
			return nil, fmt.Errorf("watcher: root %q is not absolute", r)
		}
		r = filepath.Clean(r)
		if !slices.Contains(w.roots, r) {
			w.roots = append(w.roots, r)
		}
	}
	if w.retry <= 0 {
		w.retry = DefaultRetryWatches
	}
	if w.settle == nil {
		w.settle = func(string) (time.Duration, time.Duration) { return DefaultSettle, DefaultMaxWait }
	}
	return w, nil
}

// Events delivers settled paths. Run keeps processing filesystem events while nobody reads it:
// settled paths wait in a queue (one entry per path, the latest verdict wins).
func (w *Watcher) Events() <-chan Event { return w.events }

// Rescans delivers a root whose events may have been lost: rescan it. Pending rescans are
// coalesced, so a slow reader never stalls the watcher.
func (w *Watcher) Rescans() <-chan string { return w.rescans }

// Errors delivers non-fatal problems (a watch that could not be added, a source error), for
// logging. Pending errors are buffered; duplicates and, past the buffer, new errors are dropped.
func (w *Watcher) Errors() <-chan error { return w.errs }

// Ready is closed once the initial watches are in place. It is also closed when Run returns
// before that, so waiting on it never hangs.
func (w *Watcher) Ready() <-chan struct{} { return w.ready }

// Dirs returns the number of directories currently watched. It is safe to call concurrently.
func (w *Watcher) Dirs() int { return int(w.dirs.Load()) }

// Unwatched returns the number of directories that should be watched and are not (the
// watch budget or the kernel's limit): their files are found by rescans only. It is safe
// to call concurrently.
func (w *Watcher) Unwatched() int { return int(w.unwatched.Load()) }

// Run adds the watches (walking each existing root, watching every directory the filter
// allows) and then processes events until ctx is done. It returns nil on cancellation and an
// error when the source cannot be created or fails for good. When it returns, Events, Rescans
// and Errors are closed and the source is closed; Run starts no goroutine of its own, and the
// source's are gone once its Close returns. Run may be called once.
func (w *Watcher) Run(ctx context.Context) error {
	if !w.started.CompareAndSwap(false, true) {
		return errors.New("watcher: Run called twice")
	}
	readyClosed := false
	defer func() {
		w.dirs.Store(0)
		if !readyClosed {
			close(w.ready)
		}
		close(w.events)
		close(w.rescans)
		close(w.errs)
	}()

	src := w.source
	if src == nil {
		s, err := newFSSource()
		if err != nil {
			return err
		}
		src = s
	}
	defer src.Close()

	l := newLoop(w, src)
	defer l.timer.Stop()
	defer l.retryTimer.Stop()
	for _, r := range w.roots {
		if fi, err := os.Stat(r); err == nil && !fi.IsDir() {
			l.out.addError(fmt.Errorf("watcher: root %s is not a directory", r))
		}
		l.resolve(r, false)
	}
	close(w.ready)
	readyClosed = true
	return l.run(ctx)
}

// loop is the state of one Run. It lives in the Run goroutine: nothing else reads or writes it
// (the watch count is published through Watcher.dirs).
type loop struct {
	w     *Watcher
	src   Source
	roots map[string]bool

	dirs  map[string]*dir   // every watched directory
	waits map[string]string // missing root -> the existing ancestor watched for it

	pending map[string]*pend // paths waiting to settle
	queue   pendQueue        // the same, ordered by deadline
	timer   *time.Timer      // fires at queue[0].deadline
	armed   time.Time        // the deadline timer is set for; zero when stopped

	failed     map[string]bool // directories whose watch could not be added, to try again
	told       map[string]bool // directories whose missing watch was reported, until watched
	retryTimer *time.Timer     // runs while failed is not empty
	retrying   bool

	out outbox
}

func newLoop(w *Watcher, src Source) *loop {
	l := &loop{
		w:       w,
		src:     src,
		roots:   make(map[string]bool, len(w.roots)),
		dirs:    make(map[string]*dir),
		waits:   make(map[string]string),
		pending: make(map[string]*pend),
		timer:   time.NewTimer(time.Hour),
		failed:  make(map[string]bool),
		told:    make(map[string]bool),
	}
	l.timer.Stop()
	l.retryTimer = time.NewTimer(time.Hour)
	l.retryTimer.Stop()
	for _, r := range w.roots {
		l.roots[r] = true
	}
	return l
}

func (l *loop) run(ctx context.Context) error {
	srcEvents, srcErrors := l.src.Events(), l.src.Errors()
	for {
		var (
			evOut chan<- Event
			ev    Event
			rsOut chan<- string
			rs    string
			erOut chan<- error
			er    error
		)
		if len(l.out.events) > 0 {
			evOut, ev = l.w.events, *l.out.events[0]
		}
		if len(l.out.rescans) > 0 {
			rsOut, rs = l.w.rescans, l.out.rescans[0]
		}
		if len(l.out.errs) > 0 {
			erOut, er = l.w.errs, l.out.errs[0]
		}

		select {
		case <-ctx.Done():
			return nil
		case e, ok := <-srcEvents:
			if !ok {
				return errors.New("watcher: event source closed")
			}
			l.handle(e)
		case err, ok := <-srcErrors:
			if !ok {
				srcErrors = nil
				continue
			}
			l.sourceError(err)
		case <-l.timer.C:
			l.armed = time.Time{}
			l.fire(time.Now())
		case <-l.retryTimer.C:
			l.retrying = false
			l.retryFailed()
		case evOut <- ev:
			l.out.popEvent()
		case rsOut <- rs:
			l.out.popRescan()
		case erOut <- er:
			l.out.popError()
		}
		l.schedule()
	}
}

// handle dispatches one raw event.
func (l *loop) handle(e fsnotify.Event) {
	if e.Op&^fsnotify.Chmod == 0 {
		return // Chmod only (on Linux also the first sign of a delete; the Remove follows)
	}
	p := filepath.Clean(e.Name)
	switch {
	case e.Has(fsnotify.Create):
		l.created(p)
	case e.Has(fsnotify.Remove), e.Has(fsnotify.Rename):
		l.removed(p)
	case e.Has(fsnotify.Write):
		l.written(p)
	}
}

// sourceError handles an error from the source: events may have been lost, and the source
// cannot say where, so every root is rescanned.
func (l *loop) sourceError(err error) {
	if !errors.Is(err, fsnotify.ErrEventOverflow) {
		l.out.addError(fmt.Errorf("watcher: %w", err))
	}
	for _, r := range l.w.roots {
		l.out.addRescan(r)
	}
}

// rescanRoots asks for a rescan of every root that contains path.
func (l *loop) rescanRoots(path string) {
	for _, r := range l.w.roots {
		if pathx.Within(r, path) {
			l.out.addRescan(r)
		}
	}
}

func (l *loop) allow(path string, isDir bool) bool {
	return l.w.filter == nil || l.w.filter(path, isDir)
}
