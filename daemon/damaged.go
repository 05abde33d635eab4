package daemon

import (
	"errors"
	"io/fs"
	"os"
	"time"

	"github.com/sessionmedic/sessionmedic/heal"
	"github.com/sessionmedic/sessionmedic/internal/pathx"
	"github.com/sessionmedic/sessionmedic/policy"
)

// damageBook is every file damaged now, as its last verdict said: the source of the
// files_damaged, files_damaged_busy and damage_oldest_timestamp_seconds gauges. The loop's
// goroutine owns it.
type damageBook struct {
	m     *metrics
	files map[string]damageEntry
}

type damageEntry struct {
	rule, kind string
	busy       bool      // the damage was found, and a holder (the app's lock, a live process) keeps the heal off
	since      time.Time // when the file was first seen damaged, without a healthy verdict since
}

func newDamageBook(m *metrics) *damageBook {
	return &damageBook{m: m, files: map[string]damageEntry{}}
}

// verdict records what a report says of its file: damage left there (refused, flapping,
// hands-off, only inspected, or found and kept from its heal by a busy holder) counts it; a
// heal, or a healthy or skipped verdict, takes it back; a file busy before any damage was
// seen (it changed while it was read), or not judged (an internal error), keeps what was
// known.
func (b *damageBook) verdict(path, rule string, r heal.Report, now time.Time) {
	switch {
	case r.Verdict == heal.Damaged && r.Action != heal.ActionHealed:
		b.set(path, rule, r.Kind, false, now)
	case r.Verdict == heal.Busy && busyDamage(r):
		b.set(path, rule, r.Kind, true, now)
	case r.Verdict == heal.Busy, r.InternalError != "":
	default:
		b.clear(path)
	}
}

// busyDamage: a busy report whose inspection found damage (its kind), which a holder then
// kept from its heal; not one busy before any verdict (kind "busy").
func busyDamage(r heal.Report) bool {
	return r.Verdict == heal.Busy && r.Kind != "" && r.Kind != string(heal.Busy)
}

func (b *damageBook) set(path, rule, kind string, busy bool, now time.Time) {
	e, ok := b.files[path]
	if ok && e.rule == rule && e.kind == kind && e.busy == busy {
		return
	}
	if ok {
		b.count(e, -1)
	} else {
		e.since = now // a file damaged all along keeps its first sighting when its kind changes
	}
	e.rule, e.kind, e.busy = rule, kind, busy
	b.files[path] = e
	b.count(e, 1)
	b.oldest()
}

// count moves the gauges of e's labels by n.
func (b *damageBook) count(e damageEntry, n float64) {
	b.m.damaged.WithLabelValues(e.rule, e.kind).Add(n)
	if e.busy {
		b.m.damagedBusy.WithLabelValues(e.rule).Add(n)
	}
}

func (b *damageBook) clear(path string) {
	e, ok := b.files[path]
	if !ok {
		return
	}
	delete(b.files, path)
	b.count(e, -1)
	b.oldest()
}

// prune takes back the files under root (every file, with root "") that are gone: no longer
// covered by a rule of cfg, or neither among the scan's targets nor on disk any more.
func (b *damageBook) prune(cfg *policy.Config, root string, targets []heal.Target) {
	pruneGone(b.files, goneAfterScan(cfg, root, targets), b.clear)
}

// pruneGone clears (clear) each file of files that is gone.
func pruneGone[E any](files map[string]E, gone func(p string) bool, clear func(p string)) {
	for p := range files {
		if gone(p) {
			clear(p)
		}
	}
}

// goneAfterScan says of a path under root (every path, with root "") whether it is gone once
// a scan of root listed targets: no longer covered by a rule of cfg, or neither among the
// targets nor on disk any more.
func goneAfterScan(cfg *policy.Config, root string, targets []heal.Target) func(p string) bool {
	listed := make(map[string]bool, len(targets))
	for _, t := range targets {
		listed[t.Path] = true
	}
	return func(p string) bool {
		if root != "" && !pathx.Within(root, p) {
			return false
		}
		_, _, covered := cfg.RuleFor(p)
		if !covered {
			_, _, covered = cfg.TempRuleFor(p)
		}
		_, err := os.Lstat(p)
		return !covered || (!listed[p] && errors.Is(err, fs.ErrNotExist))
	}
}

// oldest sets damage_oldest_timestamp_seconds from the book.
func (b *damageBook) oldest() {
	var first time.Time
	for _, e := range b.files {
		if first.IsZero() || e.since.Before(first) {
			first = e.since
		}
	}
	if first.IsZero() {
		b.m.oldestDamage.Set(0)
		return
	}
	b.m.oldestDamage.Set(float64(first.UnixNano()) / 1e9)
}
