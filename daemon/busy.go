package daemon

import (
	"time"

	"github.com/sessionmedic/sessionmedic/heal"
	"github.com/sessionmedic/sessionmedic/policy"
)

// busyAdvice is what an operator can do about a file busy for long, said with file.busy at
// WARN: the reason names the protocol and the holder.
const busyAdvice = "sessionmedic heals the file as soon as the holder named in reason lets go. " +
	"If that holder no longer runs (a process killed where sessionmedic cannot see it, in another container " +
	"or pid namespace, leaves its lock or registry entry behind), stop what still holds it or remove what it left, " +
	"or run sessionmedic in that process's pid namespace; `sessionmedic heal -dry-run PATH` shows the same reason"

// busyBook is every file busy now: since when its busy verdicts run, and when it was last
// said at WARN. It is the source of the files_busy_stuck gauge. The loop's goroutine owns it.
type busyBook struct {
	m     *metrics
	every time.Duration // file.busy at WARN again this long after the last
	files map[string]busyEntry
}

type busyEntry struct {
	rule  string
	since time.Time // the first busy verdict of this run of them
	said  time.Time // the last file.busy at WARN; zero: none yet
}

func newBusyBook(m *metrics, every time.Duration) *busyBook {
	return &busyBook{m: m, every: every, files: map[string]busyEntry{}}
}

// verdict records a report: a busy one starts or continues a run of busy verdicts; any other
// ends it. For a busy one it returns how long the file has been busy, whether this verdict
// is to be said at WARN (busy for longer than bound, the rule's max_wait, and not said at
// WARN within b.every), and whether this run was said at WARN before.
func (b *busyBook) verdict(path, rule string, r heal.Report, bound time.Duration, now time.Time) (busyFor time.Duration, warn, warned bool) {
	if r.Verdict != heal.Busy {
		b.clear(path)
		return 0, false, false
	}
	e, ok := b.files[path]
	if !ok || e.rule != rule {
		b.clear(path)
		e = busyEntry{rule: rule, since: now}
	}
	busyFor, warned = now.Sub(e.since), !e.said.IsZero()
	if bound <= 0 {
		bound = policy.DefaultMaxWait
	}
	if busyFor > bound && (e.said.IsZero() || now.Sub(e.said) >= b.every) {
		if e.said.IsZero() {
			b.m.busyStuck.WithLabelValues(rule).Inc()
		}
		e.said, warn = now, true
	}
	b.files[path] = e
	return busyFor, warn, warned
}

func (b *busyBook) clear(path string) {
	e, ok := b.files[path]
	if !ok {
		return
	}
	delete(b.files, path)
	if !e.said.IsZero() {
		b.m.busyStuck.WithLabelValues(e.rule).Dec()
	}
}

// prune takes back the files under root (every file, with root "") that are gone (see
// goneAfterScan).
func (b *busyBook) prune(cfg *policy.Config, root string, targets []heal.Target) {
	pruneGone(b.files, goneAfterScan(cfg, root, targets), b.clear)
}
