package daemon

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"runtime/debug"
	"sync"
	"time"

	"github.com/sessionmedic/sessionmedic/daemon/events"
	"github.com/sessionmedic/sessionmedic/heal"
	"github.com/sessionmedic/sessionmedic/internal/panics"
	"github.com/sessionmedic/sessionmedic/internal/pathx"
	"github.com/sessionmedic/sessionmedic/policy"
	"github.com/sessionmedic/sessionmedic/watcher"
)

// scanAll queues every file of every rule; with initial, the first scan's end makes the
// daemon ready.
func (d *loop) scanAll(initial bool) {
	targets, errs := d.eng.Targets(nil, nil)
	for _, err := range errs {
		d.log.Error(events.WatchError, "err", err)
	}
	d.damaged.prune(d.cfg, "", targets)
	d.notJudged.prune(d.cfg, "", targets)
	d.busy.prune(d.cfg, "", targets)
	d.m.setRuleFiles(d.cfg.Rules, targets)
	events.Announce(d.log, events.Coverage(d.cfg, targets))
	d.counts.unhealable = d.unhealable(targets, time.Now())
	d.prune.paths = d.prune.paths[:0]
	for _, t := range targets {
		if !t.Temp && !t.Missing && t.Skip == "" {
			d.prune.paths = append(d.prune.paths, t.Path)
		}
	}
	d.startScan(targets, initial)
}

// onRescan rescans the rules under one root after events may have been lost.
func (d *loop) onRescan(root string) {
	for _, r := range d.cfg.Rules {
		for _, p := range r.Paths {
			if pathx.Within(root, p) || pathx.Within(p, root) {
				d.log.Warn(events.WatchOverflow, "rule", r.Name)
				d.m.overflows.WithLabelValues(r.Name).Inc()
			}
		}
	}
	targets, errs := d.eng.Targets([]string{root}, nil)
	for _, err := range errs {
		if !errors.Is(err, os.ErrNotExist) {
			d.log.Error(events.WatchError, "err", err)
		}
	}
	d.damaged.prune(d.cfg, root, targets)
	d.notJudged.prune(d.cfg, root, targets)
	d.busy.prune(d.cfg, root, targets)
	d.startScan(targets, false)
}

func (d *loop) startScan(targets []heal.Target, initial bool) {
	byRule := map[string]*scan{}
	now := time.Now()
	for _, r := range d.cfg.Rules {
		s := &scan{rule: r.Name, start: now, initial: initial}
		byRule[r.Name] = s
		d.scans = append(d.scans, s)
	}
	for _, t := range targets {
		s := byRule[t.Rule.Name]
		if s == nil {
			s = &scan{rule: t.Rule.Name, start: now, initial: initial}
			byRule[t.Rule.Name] = s
			d.scans = append(d.scans, s)
		}
		if d.enqueue(job{t: t, scan: s, since: now}) {
			s.pending++
		}
	}
	d.endScans()
}

// endScans logs every finished scan and marks the daemon ready after the first one.
func (d *loop) endScans() {
	kept := d.scans[:0]
	initialLeft := false
	for _, s := range d.scans {
		if s.pending > 0 {
			kept = append(kept, s)
			initialLeft = initialLeft || s.initial
			continue
		}
		d.log.Info(events.ScanFinished, "rule", s.rule, "files", s.files, "damaged", s.damaged, "not_judged", s.notJudged, "duration", time.Since(s.start).Round(time.Millisecond).String())
	}
	finished := len(kept) < len(d.scans)
	d.scans = kept
	if finished && len(kept) == 0 && len(d.queue) == 0 {
		// A scan's burst (targets, reports, read buffers) is garbage now: give it back, so
		// that the resident size while idle is the watcher's, not the scan's peak.
		debug.FreeOSMemory()
	}
	if !initialLeft && !d.ready.Load() {
		d.ready.Store(true)
		d.o.Notify("READY=1")
		d.sendStatus()
		if d.o.Ready != nil {
			close(d.o.Ready)
		}
	}
}

// enqueue adds a job unless the path is already waiting; a path in flight is run again
// after it finishes. It reports whether the job was taken on.
func (d *loop) enqueue(j job) bool {
	p := j.t.Path
	switch {
	case d.inflight[p]:
		if _, dup := d.again[p]; dup {
			return false
		}
		j.scan = nil
		d.again[p] = j
		return false
	case d.queued[p]:
		return false
	}
	if until, ok := d.flapping[p]; ok {
		if time.Now().Before(until) {
			j.checkOnly = true
		} else {
			delete(d.flapping, p)
		}
	}
	d.queued[p] = true
	d.queue = append(d.queue, j)
	return true
}

// onEvent turns a settled path into a job.
func (d *loop) onEvent(ev watcher.Event) {
	p := ev.Path
	if store, ok := d.eng.StoreOfWAL(p); ok {
		// A commit to a SQLite store (or a checkpoint that removed its -wal): the store is
		// judged, as often as its spacing lets it be (heal/sqlite.go).
		p = store
	}
	id, err := heal.Fingerprint(p)
	if err == nil {
		if mine, ok := d.ours[p]; ok && mine.Same(id) {
			return // the event of our own heal
		}
		delete(d.ours, p)
	}
	if errors.Is(err, os.ErrNotExist) {
		// A file went away: that is damage only where its absence is (a store renamed away).
		for _, t := range d.eng.MissingIn(filepath.Dir(p)) {
			d.enqueue(job{t: t, since: time.Now()})
		}
		if t, ok := d.eng.Deleted(p); ok {
			d.enqueue(job{t: t, since: time.Now()})
		} else {
			d.damaged.clear(p) // gone; a file whose absence is damage is judged again
			d.notJudged.clear(p)
			d.busy.clear(p)
			if _, _, ok := d.cfg.RuleFor(p); ok {
				_ = d.eng.Forget(p) // its last-good copy is kept for the retention window only
			}
		}
		return
	}
	if r, _, ok := d.cfg.RuleFor(p); ok {
		d.enqueue(job{t: heal.Target{Path: p, Rule: r}, forced: ev.Forced, since: time.Now()})
		return
	}
	if r, _, ok := d.cfg.TempRuleFor(p); ok && r.HasStrategy(policy.CleanTemp) {
		d.enqueue(job{t: heal.Target{Path: p, Rule: r, Temp: true}, forced: ev.Forced, since: time.Now()})
	}
}

// work runs in a worker goroutine: inspect, and heal unless the file never went quiet or
// its breaker is open.
func (d *loop) work(ctx context.Context, j job) result {
	start := time.Now()
	var r heal.Report
	if j.forced || j.checkOnly {
		r = j.eng.Check(j.t)
	} else {
		r = j.eng.Heal(ctx, j.t, false)
	}
	return result{j: j, r: r, dur: time.Since(start)}
}

// finish records a result: metrics, the event log, retries, the circuit breaker.
func (d *loop) finish(res result, retry chan<- job, ctx context.Context, wg *sync.WaitGroup) {
	j, r := res.j, res.r
	p := j.t.Path
	delete(d.inflight, p)
	rule := j.t.Rule.Name
	d.counts.checked++
	d.m.checked.WithLabelValues(rule).Inc()
	d.m.checkDuration.WithLabelValues(rule).Observe(res.dur.Seconds())
	d.m.settleToVerdict.WithLabelValues(rule).Observe(time.Since(j.since).Seconds())
	if j.scan != nil {
		j.scan.pending--
		j.scan.files++
		if r.Verdict == heal.Damaged {
			j.scan.damaged++
		}
		if r.NotJudged {
			j.scan.notJudged++
		}
	}
	// The report's own lines (events.Report) name the rule and the path themselves: they
	// take d.log; log is for the daemon's other lines about this file.
	log := d.log.With("rule", rule, "path", p)
	now := time.Now()
	if r.CopyErr != "" {
		d.copyFailed(rule, p, r.CopyErr, now)
	}
	if r.InternalError != "" {
		// A defect met on this file, contained: said at ERROR each time, counted for alerts.
		d.m.internalErrors.WithLabelValues(rule).Inc()
		log.Error(events.FileInternalError, "err", r.InternalError, "at", panics.Trace(r.Stack), "advice", internalAdvice)
	}
	d.damaged.verdict(p, rule, r, now)
	if d.notJudged.verdict(p, rule, r) {
		// A session file not guarded: said once for each reason, counted while it lasts.
		log.Warn(events.FileNotJudged, "reason", r.Detail, "advice", notJudgedAdvice)
	}
	busyFor, warn, warned := d.busy.verdict(p, rule, r, j.t.Rule.MaxWait, now)
	retries := d.retries[p] // busy verdicts of p in a row before this one
	if r.Verdict != heal.Busy {
		delete(d.retries, p)
	}
	switch {
	case r.Verdict == heal.Damaged && r.Action == heal.ActionHealed:
		d.counts.healed++
		d.m.damage.WithLabelValues(rule, r.Kind).Inc()
		d.m.heals.WithLabelValues(rule, r.Strategy, resultHealed).Inc()
		d.m.quarantineBytes.Add(float64(r.QuarantinedBytes))
		d.prune.dirty = true // the state dir grew: pruned at the next tick
		events.Report(d.log, r)
		// Only the version the heal itself left is ours (taken at the replace, not now: an
		// app may have written over it since, and that write's event must be seen).
		for path, id := range r.Wrote {
			d.ours[path] = id
		}
		d.breaker(j.t, log)
	case r.Verdict == heal.Damaged && r.Action == heal.ActionRefused:
		d.counts.refused++
		d.m.damage.WithLabelValues(rule, r.Kind).Inc()
		d.m.refused.WithLabelValues(rule, r.Kind).Inc()
		d.m.heals.WithLabelValues(rule, r.Strategy, resultRefused).Inc()
		events.Report(d.log, r)
	case r.Verdict == heal.Damaged && r.HandsOff:
		// An operator restored these bytes: said once, then reported as damage left alone.
		if d.restored[p] != r.Quarantine {
			d.restored[p] = r.Quarantine
			log.Warn(events.FileRestored, "quarantine", r.Quarantine)
		}
		d.m.damage.WithLabelValues(rule, r.Kind).Inc()
		events.Report(d.log, r)
	case r.Verdict == heal.Damaged:
		d.m.damage.WithLabelValues(rule, r.Kind).Inc()
		events.Report(d.log, r)
	case r.Verdict == heal.Busy:
		d.m.heals.WithLabelValues(rule, r.Strategy, resultBusy).Inc()
		args := []any{"detail", r.Detail, "reason", r.Reason}
		if busyDamage(r) {
			args = append([]any{"kind", r.Kind, "offset", r.Offset}, args...) // the damage it keeps from its heal
		}
		switch {
		case warn:
			// Busy for longer than the rule's max_wait: said loudly, with what to do, and
			// again every BusyWarnEvery while it lasts.
			log.Warn(events.FileBusy, append(args, "retries", retries, "busy_for", busyFor.Round(time.Second).String(),
				"advice", busyAdvice)...)
		case retries == busyRetriesSaid && !warned:
			// Still busy after its retries: said once where an operator looks, then quiet.
			log.Info(events.FileBusy, append(args, "retries", retries)...)
		default:
			log.Debug(events.FileBusy, args...)
		}
		d.later(job{t: j.t, since: time.Now()}, retry, ctx, wg)
	}
	if !r.HandsOff {
		delete(d.restored, p)
	}
	if again, ok := d.again[p]; ok {
		delete(d.again, p)
		d.enqueue(again)
	}
	if j.scan != nil {
		d.endScans()
	}
}

// retarget is a retry of a busy file under the policy in force now (a reload may have
// changed its rule or dropped it); ok is false for a file no rule covers any more, whose
// retries end there.
func (d *loop) retarget(j job) (job, bool) {
	p := j.t.Path
	r, _, ok := d.cfg.RuleFor(p)
	if j.t.Temp {
		r, _, ok = d.cfg.TempRuleFor(p)
	}
	if !ok {
		delete(d.retries, p)
		d.busy.clear(p)
		d.damaged.clear(p)
		d.notJudged.clear(p)
		return j, false
	}
	j.t.Rule = r
	return j, true
}

// busyRetriesSaid is how many retries a file stays busy through before its next busy
// verdict is logged at INFO (once in a row).
const busyRetriesSaid = 3

// later retries a busy file with exponential backoff.
func (d *loop) later(j job, retry chan<- job, ctx context.Context, wg *sync.WaitGroup) {
	n := d.retries[j.t.Path]
	d.retries[j.t.Path] = n + 1
	wait := d.o.Backoff << min(n, 7)
	if wait > time.Minute {
		wait = time.Minute
	}
	wg.Add(1)
	go func() {
		defer wg.Done()
		t := time.NewTimer(wait)
		defer t.Stop()
		select {
		case <-t.C:
			select {
			case retry <- j:
			case <-ctx.Done():
			}
		case <-ctx.Done():
		}
	}()
}

// breaker opens for a file healed more than FlapHeals times within FlapWindow: it is then
// only inspected, never healed, until the window has passed (file.flapping).
func (d *loop) breaker(t heal.Target, log interface {
	Error(msg string, args ...any)
}) {
	now := time.Now()
	var recent []time.Time
	for _, h := range d.heals[t.Path] {
		if now.Sub(h) < d.o.FlapWindow {
			recent = append(recent, h)
		}
	}
	recent = append(recent, now)
	d.heals[t.Path] = recent
	if len(recent) > d.o.FlapHeals {
		if _, open := d.flapping[t.Path]; !open {
			log.Error(events.FileFlapping, "heals", len(recent), "window", d.o.FlapWindow.String())
			d.m.flapping.WithLabelValues(t.Rule.Name).Inc()
		}
		d.flapping[t.Path] = now.Add(d.o.FlapWindow)
	}
}

// internalAdvice is what file.internal_error tells the operator.
const internalAdvice = "this file is neither judged nor healed, and is left as it is; the daemon goes on with the others and " +
	"judges it again when it changes or at the next full rescan. It is a defect of sessionmedic: please report err and at " +
	"(keep a copy of the file if you can share it); `sessionmedic check PATH` shows the same"

// notJudgedAdvice is what file.not_judged tells the operator.
const notJudgedAdvice = "this session file is not judged, so damage to it is neither seen nor healed: " +
	"over max_file_size, raise the rule's limits.max_file_size (the daemon judges files of any size streaming); " +
	"unreadable, give sessionmedic read access to it (or run it as the tree's owner or root); " +
	"holding a record too large to judge within the memory bounds, it stays unguarded while it holds it; " +
	"the daemon judges it again when it changes"
