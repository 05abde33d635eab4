package apps

import (
	"fmt"

	"github.com/sessionmedic/sessionmedic/heal/format"
	"github.com/sessionmedic/sessionmedic/heal/jsonv"
)

// The checks of the coding CLIs' checklists that span records, for a transcript judged
// streaming (format.SequenceChecker): each keeps a few numbers, never the records.

// NewSequence: a Claude transcript must hold a user or assistant record somewhere.
func (claudeCodeLog) NewSequence() format.Sequence { return &claudeSequence{} }

type claudeSequence struct{ conversation bool }

func (s *claudeSequence) Record(rec []byte) string {
	if !s.conversation {
		if v, err := jsonv.Parse(rec, jsonv.Dialect{}); err == nil {
			t := strOf(v.Get("type"))
			s.conversation = t == "user" || t == "assistant"
		}
	}
	return ""
}

func (s *claudeSequence) End() string {
	if !s.conversation {
		return claudeNoConversation().Detail
	}
	return ""
}

// NewSequence: a paginated rollout's ordinals never repeat or go back, its header has one,
// and so has its last record (checkCodex, which the in-memory pass applies).
func (codexLog) NewSequence() format.Sequence { return &codexSequence{} }

type codexSequence struct {
	n                   int
	paginated, lastHas  bool
	headerHas, fork     bool
	start, prev, header int64
}

func (s *codexSequence) Record(rec []byte) string {
	v, err := jsonv.Parse(rec, jsonv.Dialect{})
	if err != nil {
		return err.Error()
	}
	s.n++
	o := v.Get("ordinal")
	s.lastHas = codexOrdinal(o)
	if s.n == 1 {
		meta := v.Get("payload")
		s.paginated = strOf(meta.Get("history_mode")) == "paginated"
		if e := meta.Get("history_base").Get("end_ordinal_exclusive"); codexOrdinal(e) {
			s.start, s.fork = e.Int, true
		}
		s.headerHas = s.lastHas
		if !s.lastHas {
			return ""
		}
		if o.Int != s.start && !(s.fork && o.Int == 0) {
			return fmt.Sprintf("session_meta has ordinal %d, want %d", o.Int, s.start)
		}
		s.prev = max(o.Int, s.start-1)
		return ""
	}
	if o == nil {
		return ""
	}
	s.paginated = true
	if !s.lastHas {
		return "ordinal is not a non-negative integer"
	}
	if !s.headerHas && s.n > 1 {
		return "session_meta of a paginated rollout has no ordinal"
	}
	if o.Int <= s.prev {
		return fmt.Sprintf("ordinal %d after %d (reused or decreasing; never renumbered)", o.Int, s.prev)
	}
	s.prev = o.Int
	return ""
}

func (s *codexSequence) End() string {
	switch {
	case !s.paginated || s.n == 0:
		return ""
	case !s.headerHas:
		return "session_meta of a paginated rollout has no ordinal"
	case !s.lastHas:
		return "the last record has no ordinal (the app refuses to resume)"
	}
	return ""
}
