package daemon

import (
	"time"

	"github.com/sessionmedic/sessionmedic/daemon/events"
	"github.com/sessionmedic/sessionmedic/heal"
)

// The daemon enforces the policy's retention itself (quarantine.max_age and max_bytes,
// last_good.max_total_bytes, the copies of deleted files), as `heal` does after each run:
// nobody else prunes a state dir a daemon writes to, and a tree's user can make it grow (a
// sparse session quarantined whole). A prune runs after the first scan, at every periodic
// rescan, and at the first prune tick after a heal wrote to the state dir; one at a time, in
// a goroutine of its own that the loop owns and waits for.

// pruner is the loop's prune state; the loop goroutine owns it.
type pruner struct {
	dirty   bool // a heal wrote to the state dir since the last prune began
	running bool
	again   bool // asked for while one was running
	done    chan pruneResult
	paths   []string // a full scan's files, whose largest the next prune measures (nil: as before)
}

type pruneResult struct {
	p   heal.Pruned
	err error
	// The state dir's free space after the prune (-1: unknown), and the largest of the
	// paths given to it (largest < 0: none given).
	free      int64
	largestAt string
	largest   int64
}

// startPrune prunes the state dir with the current engine, unless a prune is running (then
// one more follows it).
func (d *loop) startPrune() {
	if d.prune.done == nil {
		d.prune.done = make(chan pruneResult, 1)
	}
	if d.prune.running {
		d.prune.again = true
		return
	}
	d.prune.running, d.prune.dirty = true, false
	eng, paths, stateDir := d.eng, d.prune.paths, d.cfg.StateDir
	d.prune.paths = nil
	go func() {
		p, err := eng.PruneStats()
		res := pruneResult{p: p, err: err, largest: -1}
		if paths != nil {
			res.largestAt, res.largest = largestOf(paths)
		}
		res.free = freeBytes(stateDir)
		d.prune.done <- res
	}()
}

// pruned takes a prune's result (in the loop goroutine): the log line, the metrics.
func (d *loop) pruned(r pruneResult) {
	d.prune.running = false
	if r.err != nil {
		d.log.Error(events.StatePruneError, "err", r.err, "state_dir", d.cfg.StateDir)
	}
	p := r.p
	if n := p.Quarantined + p.LastGood + p.Deleted; n > 0 {
		d.log.Info(events.StatePruned, "quarantine_entries", p.Quarantined, "last_good_copies", p.LastGood,
			"deleted_files_copies", p.Deleted, "freed_bytes", p.Freed, "quarantine_bytes", p.QuarantineBytes)
	}
	d.m.pruned.WithLabelValues("quarantine").Add(float64(p.Quarantined))
	d.m.pruned.WithLabelValues("last-good").Add(float64(p.LastGood + p.Deleted))
	d.m.quarantineDisk.Set(float64(p.QuarantineBytes))
	if r.largest >= 0 {
		d.refused.largestAt, d.refused.largest = r.largestAt, r.largest
	}
	d.space(r.free, time.Now())
	if d.prune.again {
		d.prune.again = false
		d.startPrune()
	}
}

// wait waits for a prune in flight (the loop is stopping).
func (p *pruner) wait() {
	if p.running {
		<-p.done
		p.running = false
	}
}
