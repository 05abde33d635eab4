package daemon

import (
	"github.com/sessionmedic/sessionmedic/heal"
	"github.com/sessionmedic/sessionmedic/policy"
)

// notJudgedBook is every session file not judged now (larger than its rule's max_file_size,
// not readable, not to be judged within the memory bounds), as its last verdict said: the
// source of the files_not_judged gauge and of file.not_judged, said once per file and
// reason. The loop's goroutine owns it.
type notJudgedBook struct {
	m     *metrics
	files map[string]notJudgedEntry
}

type notJudgedEntry struct{ rule, reason string }

func newNotJudgedBook(m *metrics) *notJudgedBook {
	return &notJudgedBook{m: m, files: map[string]notJudgedEntry{}}
}

// verdict records what a report says of its file: not judged counts it, and is to be said
// (say) when it was not known so for that reason; any other verdict but a busy one or an
// internal error (which keep what was known) takes it back.
func (b *notJudgedBook) verdict(path, rule string, r heal.Report) (say bool) {
	switch {
	case r.Verdict == heal.Skipped && r.NotJudged:
		e, ok := b.files[path]
		if ok && e.rule == rule && e.reason == r.Detail {
			return false
		}
		if ok {
			b.m.notJudged.WithLabelValues(e.rule).Dec()
		}
		b.files[path] = notJudgedEntry{rule, r.Detail}
		b.m.notJudged.WithLabelValues(rule).Inc()
		return true
	case r.Verdict == heal.Busy, r.InternalError != "":
	default:
		b.clear(path)
	}
	return false
}

func (b *notJudgedBook) clear(path string) {
	if e, ok := b.files[path]; ok {
		delete(b.files, path)
		b.m.notJudged.WithLabelValues(e.rule).Dec()
	}
}

// prune takes back the files under root (every file, with root "") that are gone: no longer
// covered by a rule of cfg, or neither among the scan's targets nor on disk any more.
func (b *notJudgedBook) prune(cfg *policy.Config, root string, targets []heal.Target) {
	pruneGone(b.files, goneAfterScan(cfg, root, targets), b.clear)
}
