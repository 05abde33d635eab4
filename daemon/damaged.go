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
// files_damaged and damage_oldest_timestamp_seconds gauges. The loop's goroutine owns it.
type damageBook struct {
	m     *metrics
	files map[string]damageEntry
}

type damageEntry struct {
	rule, kind string
	since      time.Time // when the file was first seen damaged, without a healthy verdict since
}

func newDamageBook(m *metrics) *damageBook {
	return &damageBook{m: m, files: map[string]damageEntry{}}
}

// verdict records what a report says of its file: damage left there (refused, flapping,
// hands-off, or only inspected) counts it; a heal, or a healthy or skipped verdict, takes it
// back; a busy file keeps what was known.
func (b *damageBook) verdict(path, rule string, r heal.Report, now time.Time) {
	switch {
	case r.Verdict == heal.Damaged && r.Action != heal.ActionHealed:
		b.set(path, rule, r.Kind, now)
	case r.Verdict == heal.Busy:
	default:
		b.clear(path)
	}
}

func (b *damageBook) set(path, rule, kind string, now time.Time) {
	e, ok := b.files[path]
	if ok && e.rule == rule && e.kind == kind {
		return
	}
	if ok {
		b.m.damaged.WithLabelValues(e.rule, e.kind).Dec()
	} else {
		e.since = now // a file damaged all along keeps its first sighting when its kind changes
	}
	e.rule, e.kind = rule, kind
	b.files[path] = e
	b.m.damaged.WithLabelValues(rule, kind).Inc()
	b.oldest()
}

func (b *damageBook) clear(path string) {
	e, ok := b.files[path]
	if !ok {
		return
	}
	delete(b.files, path)
	b.m.damaged.WithLabelValues(e.rule, e.kind).Dec()
	b.oldest()
}

// prune takes back the files under root (every file, with root "") that are gone: no longer
// covered by a rule of cfg, or neither among the scan's targets nor on disk any more.
func (b *damageBook) prune(cfg *policy.Config, root string, targets []heal.Target) {
	listed := make(map[string]bool, len(targets))
	for _, t := range targets {
		listed[t.Path] = true
	}
	for p := range b.files {
		if root != "" && !pathx.Within(root, p) {
			continue
		}
		_, _, covered := cfg.RuleFor(p)
		if !covered {
			_, _, covered = cfg.TempRuleFor(p)
		}
		if _, err := os.Lstat(p); !covered || (!listed[p] && errors.Is(err, fs.ErrNotExist)) {
			b.clear(p)
		}
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
