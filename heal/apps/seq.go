package apps

import (
	"github.com/sessionmedic/sessionmedic/heal/format"
	"github.com/sessionmedic/sessionmedic/heal/fsio"
	"github.com/sessionmedic/sessionmedic/heal/jsonv"
)

// headerSpot is where a rebuild-header strategy puts a header back in data: the lines of
// data, the index fi of its first non-blank one, the offset from which data's bytes are
// kept after the rebuilt header, and the torn first line (data's own, or, when a salvage
// already dropped it, the file's at path; nil when there was none). ok is false when there is
// nothing to rebuild: no line, a single torn line and nothing after it, or a first line that
// isHeader says is a header already.
type headerSpot struct {
	lines []format.Line
	fi    int
	from  int
	torn  []byte
}

func findHeaderSpot(p format.Profile, path string, data []byte, isHeader func(*jsonv.Value) bool, line1Max int64) (headerSpot, bool) {
	h := headerSpot{lines: format.Split(data, p)}
	for h.fi < len(h.lines) && h.lines[h.fi].Blank {
		h.fi++
	}
	if h.fi == len(h.lines) {
		return h, false
	}
	first := h.lines[h.fi]
	h.from = first.Start
	switch {
	case first.Val == nil && !first.Terminated:
		return h, false // the file is one torn line: nothing to keep after it
	case first.Val == nil:
		h.torn, h.from = first.Raw, first.End
	case isHeader(first.Val):
		return h, false
	default: // the salvage dropped line 1 (the file's own, if torn), or there never was one
		if l, _ := fsio.FirstLine(path, line1Max); jsonv.Valid(l, p.Dialect()) != nil {
			h.torn = l
		}
	}
	return h, true
}
