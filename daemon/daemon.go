// Package daemon is the long-running loop that joins the watcher, the policy and the heal
// engine: an initial scan, then settled events, a bounded worker pool, retries with backoff,
// a circuit breaker, policy reload, systemd notification and the HTTP endpoints.
package daemon

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"runtime"
	"sync"
	"sync/atomic"
	"time"

	"github.com/sessionmedic/sessionmedic/daemon/events"
	"github.com/sessionmedic/sessionmedic/heal"
	"github.com/sessionmedic/sessionmedic/internal/pathx"
	"github.com/sessionmedic/sessionmedic/policy"
	"github.com/sessionmedic/sessionmedic/watcher"
)

// Options configure Run.
type Options struct {
	// Load reads the policy: at start (an error is fatal) and on every reload (an error is
	// logged as policy.invalid and the running policy stays). skipped lists default
	// locations left out because they do not exist.
	Load    func() (cfg *policy.Config, skipped []string, err error)
	Source  string // where the policy comes from, for the logs
	Log     *slog.Logger
	Level   *slog.LevelVar // set from the policy's log.level at start and on reload
	Reload  <-chan struct{}
	Version string
	// Revision is the VCS revision of the build ("": what the Go toolchain recorded).
	Revision string
	// WatchConfig, when set, is the policy file to watch: a change on disk reloads as
	// Reload does, once the directory has been quiet for WatchDebounce (default 500ms).
	WatchConfig   string
	WatchDebounce time.Duration

	Workers    int           // parallel inspections; default 4 per CPU (the work waits on the disk more than on the CPU)
	Rescan     time.Duration // safety-net full rescan; default 10m
	PruneEvery time.Duration // retention: the state dir is pruned this long after a heal wrote to it (and at every rescan); default 1m
	FlapHeals  int           // circuit breaker: more heals than this in FlapWindow stops healing a file; default 3
	FlapWindow time.Duration // default 10m
	Backoff    time.Duration // first retry of a busy file; doubles up to 1m; default 500ms
	// BusyWarnEvery: a file busy for longer than its rule's max_wait is said at WARN
	// (file.busy), and again this long after, while it stays busy; default 1h.
	BusyWarnEvery time.Duration

	// NewSource builds the watcher's event source (tests inject overflows); nil = fsnotify.
	NewSource func() (watcher.Source, error)
	// Notify sends a systemd notification; nil = sd_notify over $NOTIFY_SOCKET.
	Notify func(state string) error
	// Step, when set, is called at each step of the heal protocol (crash-point tests).
	Step func(step, path string)
	// Faults, when set, is handed to every engine the daemon builds (see heal.Options.Faults):
	// the in-process I/O-fault tests fail the heals' file operations through it.
	Faults func(op, path string) error
	// Ready, when set, is closed once the first scan finished.
	Ready chan<- struct{}
}

// ConfigError is a start-up failure the configuration must fix rather than a fault of the
// program: the policy's http.listen address cannot be bound (in use, or not this host's).
type ConfigError struct{ Err error }

func (e *ConfigError) Error() string { return e.Err.Error() }
func (e *ConfigError) Unwrap() error { return e.Err }

// job is one inspection to run.
type job struct {
	t         heal.Target
	forced    bool      // inspect read-only: writes never stopped
	checkOnly bool      // the file's circuit breaker is open
	since     time.Time // when the file settled (for the latency histogram)
	scan      *scan     // the scan this job belongs to, if any
	eng       *heal.Engine
}

type result struct {
	j   job
	r   heal.Report
	dur time.Duration
}

// scan counts one rule's (re)scan until its last file is inspected.
type scan struct {
	rule             string
	pending          int
	files, damaged   int
	notJudged        int // files skipped as not judged (over max_file_size, unreadable)
	start            time.Time
	initial, started bool
}

// Run runs the daemon until ctx is done. It returns an error only when it cannot start.
func Run(ctx context.Context, o Options) error {
	o.defaults()
	cfg, skipped, err := o.Load()
	if err != nil {
		return err
	}
	// Bind the HTTP address first: an address in use is a start-up error, before anything
	// else is said or done.
	var ln net.Listener
	if cfg.HTTP.Listen != "" {
		if ln, err = net.Listen("tcp", cfg.HTTP.Listen); err != nil {
			return &ConfigError{fmt.Errorf("http listen %s: %w", cfg.HTTP.Listen, err)}
		}
		defer func() {
			if ln != nil {
				ln.Close()
			}
		}()
	}
	m := newMetrics(o.Version, o.Revision)
	d := &loop{o: o, log: o.Log, m: m, damaged: newDamageBook(m), notJudged: newNotJudgedBook(m), busy: newBusyBook(m, o.BusyWarnEvery), alive: time.Now()}
	d.reloads = d.m.addReloadSeries()
	d.setPolicy(cfg)
	if rec, err := d.eng.Recover(); err != nil {
		return fmt.Errorf("journal recovery: %w", err)
	} else {
		for _, r := range rec {
			d.log.Warn(events.JournalRecovered, "path", r.Path, "id", r.ID, "outcome", r.Outcome)
		}
	}
	paths := []string{}
	for _, r := range cfg.Rules {
		paths = append(paths, r.Paths...)
	}
	d.log.Info(events.Started, "version", o.Version, "policy", o.Source, "rules", len(cfg.Rules), "paths", paths, "state_dir", cfg.StateDir)
	if len(skipped) > 0 {
		d.log.Info(events.SkippedDefaults, "paths", skipped)
	}
	if len(cfg.Rules) == 0 {
		events.AnnounceNothing(d.log, skipped)
	}
	var wg sync.WaitGroup
	defer wg.Wait()
	d.wg = &wg
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	if o.WatchConfig != "" {
		cw, err := newConfigWatch(o.WatchConfig)
		if err != nil {
			return err
		}
		changed := make(chan struct{}, 1)
		d.cfgChanged = changed
		wg.Add(1)
		go func() { defer wg.Done(); cw.run(ctx, changed, o.WatchDebounce, d.log) }()
	}
	defer d.stopHTTP() // after the loop stopped, before wg.Wait
	if ln != nil {
		d.startHTTP(ln, cfg.HTTP.Listen)
		ln = nil // the server closes it
	}
	return d.run(ctx, &wg)
}

func (o *Options) defaults() {
	if o.Workers <= 0 {
		o.Workers = min(4*runtime.NumCPU(), 32)
	}
	if o.Rescan <= 0 {
		o.Rescan = 10 * time.Minute
	}
	if o.PruneEvery <= 0 {
		o.PruneEvery = time.Minute
	}
	if o.FlapHeals <= 0 {
		o.FlapHeals = 3
	}
	if o.FlapWindow <= 0 {
		o.FlapWindow = 10 * time.Minute
	}
	if o.Backoff <= 0 {
		o.Backoff = 500 * time.Millisecond
	}
	if o.BusyWarnEvery <= 0 {
		o.BusyWarnEvery = time.Hour
	}
	if o.WatchDebounce <= 0 {
		o.WatchDebounce = 500 * time.Millisecond
	}
	if o.Log == nil {
		o.Log = slog.New(slog.DiscardHandler)
	}
	if o.Notify == nil {
		o.Notify = sdNotify
	}
}

// loop holds the daemon's state. Everything below is owned by the goroutine running
// loop.run, except the fields marked otherwise.
type loop struct {
	o   Options
	log *slog.Logger
	m   *metrics // safe for concurrent use

	cfg *policy.Config
	eng *heal.Engine

	queue     []job
	queued    map[string]bool
	inflight  map[string]bool
	again     map[string]job // requested while in flight
	ours      map[string]heal.Identity
	retries   map[string]int
	heals     map[string][]time.Time
	flapping  map[string]time.Time
	restored  map[string]string // path → the quarantine entry an operator restored there, once said
	damaged   *damageBook
	notJudged *notJudgedBook
	busy      *busyBook
	scans     []*scan

	ready     atomic.Bool  // read by /readyz
	alive     time.Time    // last loop iteration
	aliveNs   atomic.Int64 // read by /healthz
	counts    struct{ checked, healed, refused, unhealable int }
	watchDir  func() int
	unwatched func() int // directories left to rescans (the watch budget, the kernel's limit)
	budget    int        // the watch budget in force

	wg         *sync.WaitGroup // Run's: goroutines that outlive the loop
	srv        *http.Server    // serving http.listen, nil when off
	httpAddr   string          // the http.listen srv was bound for
	pprof      atomic.Bool     // http.pprof; read by the HTTP handlers
	reloads    *reloadStatus
	cfgChanged <-chan struct{} // the policy file changed on disk (WatchConfig)
	prune      pruner
	refused    refusals
}

func (d *loop) setPolicy(cfg *policy.Config) {
	d.cfg = cfg
	d.refused.dirs = nil // a reload says again what still stands
	d.eng = heal.New(cfg, heal.Options{Step: d.o.Step, Faults: d.o.Faults})
	d.m.initRules(cfg.Rules, d.eng.DamageKinds)
	d.pprof.Store(cfg.HTTP.Pprof)
	if d.o.Level != nil {
		d.o.Level.Set(levelOf(cfg.Log.Level))
	}
}

func levelOf(s string) slog.Level {
	switch s {
	case "debug":
		return slog.LevelDebug
	case "warn":
		return slog.LevelWarn
	case "error":
		return slog.LevelError
	}
	return slog.LevelInfo
}

// startWatcher starts a watcher over the policy's roots; stop cancels it and waits.
func (d *loop) startWatcher(ctx context.Context) (*watcher.Watcher, func(), error) {
	cfg, eng := d.cfg, d.eng
	d.budget = watchBudget(cfg.WatchBudget)
	d.m.watchBudget.Set(float64(d.budget))
	opts := watcher.Options{
		Roots:      cfg.Roots(),
		MaxWatches: d.budget,
		Filter: func(p string, isDir bool) bool {
			if isDir {
				return !pathx.Within(cfg.StateDir, p)
			}
			if _, _, ok := cfg.RuleFor(p); ok {
				return true
			}
			if _, ok := eng.StoreOfWAL(p); ok {
				return true // a SQLite store's commits: judged as the store (onEvent)
			}
			_, _, ok := cfg.TempRuleFor(p)
			return ok
		},
		Settle: func(p string) (time.Duration, time.Duration) {
			if store, ok := eng.StoreOfWAL(p); ok {
				p = store
			}
			if r, _, ok := cfg.RuleFor(p); ok {
				return r.Settle, r.MaxWait
			}
			if r, _, ok := cfg.TempRuleFor(p); ok {
				return r.Settle, r.MaxWait
			}
			return 2 * time.Second, 30 * time.Second
		},
	}
	if d.o.NewSource != nil {
		src, err := d.o.NewSource()
		if err != nil {
			return nil, nil, err
		}
		opts.Source = src
	}
	w, err := watcher.New(opts)
	if err != nil {
		return nil, nil, err
	}
	wctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		if err := w.Run(wctx); err != nil && wctx.Err() == nil {
			d.log.Error(events.WatchError, "err", err)
		}
	}()
	d.watchDir, d.unwatched = w.Dirs, w.Unwatched
	return w, func() { cancel(); <-done }, nil
}

func (d *loop) run(ctx context.Context, wg *sync.WaitGroup) error {
	d.queued, d.inflight, d.again = map[string]bool{}, map[string]bool{}, map[string]job{}
	d.ours, d.retries = map[string]heal.Identity{}, map[string]int{}
	d.heals, d.flapping = map[string][]time.Time{}, map[string]time.Time{}
	d.restored = map[string]string{}

	w, stopWatcher, err := d.startWatcher(ctx)
	if err != nil {
		return err
	}
	defer func() { stopWatcher() }()

	jobs := make(chan job)
	results := make(chan result, d.o.Workers)
	var workers sync.WaitGroup
	for i := 0; i < d.o.Workers; i++ {
		workers.Add(1)
		go func() {
			defer workers.Done()
			for j := range jobs {
				results <- d.work(ctx, j)
			}
		}()
	}
	defer func() {
		close(jobs)
		// Drain results so no worker blocks while finishing its file.
		go func() {
			for range results {
			}
		}()
		workers.Wait()
		close(results)
	}()

	retry := make(chan job, 64)
	var retryWG sync.WaitGroup
	defer retryWG.Wait()

	// Scan only once every watch is in place: a write between a scan and the watch that
	// would have seen it would otherwise wait for the periodic rescan.
	select {
	case <-w.Ready():
	case <-ctx.Done():
		d.stopping(ctx)
		return nil
	}
	d.scanAll(true)
	d.startPrune() // what a previous run left over the limits goes now
	defer d.prune.wait()
	rescan := time.NewTicker(d.o.Rescan)
	defer rescan.Stop()
	pruneTick := time.NewTicker(d.o.PruneEvery)
	defer pruneTick.Stop()
	var watchdog <-chan time.Time
	if iv := watchdogInterval(); iv > 0 {
		t := time.NewTicker(iv)
		defer t.Stop()
		watchdog = t.C
	}
	status := time.NewTicker(10 * time.Second)
	defer status.Stop()

	evC, rsC, erC := watchChans(w)
	reload := func() {
		if nw, stop, ok := d.reload(ctx, stopWatcher); ok {
			w, stopWatcher = nw, stop
			evC, rsC, erC = watchChans(w)
		}
	}
	for {
		d.aliveNs.Store(time.Now().UnixNano())
		var out chan job
		var next job
		if len(d.queue) > 0 {
			out, next = jobs, d.queue[0]
			next.eng = d.eng // workers never read the loop's fields: a reload swaps d.eng
		}
		select {
		case <-ctx.Done():
			d.stopping(ctx)
			return nil
		case out <- next:
			d.queue = d.queue[1:]
			delete(d.queued, next.t.Path)
			d.inflight[next.t.Path] = true
		case res := <-results:
			d.finish(res, retry, ctx, &retryWG)
		case j := <-retry:
			if j, ok := d.retarget(j); ok {
				d.enqueue(j)
			}
		case ev, ok := <-evC:
			if !ok {
				// The watcher stopped (it could not start, or lost its source): the periodic
				// rescan still finds damage, only later.
				d.log.Error(events.WatchError, "err", "the watcher stopped; damage is found by the periodic rescan only")
				evC, rsC, erC = nil, nil, nil
				continue
			}
			d.onEvent(ev)
		case root, ok := <-rsC:
			if ok {
				d.onRescan(root)
			}
		case err, ok := <-erC:
			var be *watcher.BudgetError
			switch {
			case !ok:
			case errors.As(err, &be):
				d.log.Warn(events.WatchBudgetExhausted, "rule", d.ruleOfDir(be.Dir), "dir", be.Dir, "budget", be.Budget,
					"watched", d.watchDir(), "err", err)
				d.m.unwatchedDirs.Set(float64(d.unwatched()))
			default:
				d.log.Error(events.WatchError, "err", err)
			}
		case <-rescan.C:
			d.scanAll(false)
			d.startPrune()
		case <-pruneTick.C:
			if d.prune.dirty {
				d.startPrune()
			}
		case p := <-d.prune.done:
			d.pruned(p)
		case <-d.o.Reload:
			reload()
		case <-d.cfgChanged:
			reload()
		case <-watchdog:
			d.o.Notify("WATCHDOG=1")
		case <-status.C:
			d.sendStatus()
		}
	}
}

// stopping says why the loop stops: the cause of ctx's end (the signal, with cmd's
// signal context).
func (d *loop) stopping(ctx context.Context) {
	d.o.Notify("STOPPING=1")
	reason := "stopped"
	if c := context.Cause(ctx); c != nil && c != context.Canceled {
		reason = c.Error()
	}
	d.log.Info(events.Stopping, "reason", reason)
}

func watchChans(w *watcher.Watcher) (<-chan watcher.Event, <-chan string, <-chan error) {
	if w == nil {
		return nil, nil, nil
	}
	return w.Events(), w.Rescans(), w.Errors()
}

func (d *loop) sendStatus() {
	dirs := 0
	if d.watchDir != nil {
		dirs = d.watchDir()
	}
	d.m.watchedDirs.Set(float64(dirs))
	if d.unwatched != nil {
		d.m.unwatchedDirs.Set(float64(d.unwatched()))
	}
	status := fmt.Sprintf("STATUS=watching %d directories; %d files checked, %d healed, %d refused",
		dirs, d.counts.checked, d.counts.healed, d.counts.refused)
	if n := d.counts.unhealable; n > 0 {
		status += fmt.Sprintf("; %d directories cannot be healed (rule.cannot_heal)", n)
	}
	if !d.refused.space.IsZero() {
		status += "; the state dir is short of space (state.space_low)"
	}
	d.o.Notify(status)
}
