package apps

import (
	"bytes"
	"io"

	"github.com/sessionmedic/sessionmedic/heal/format"
	"github.com/sessionmedic/sessionmedic/heal/fsio"
	"github.com/sessionmedic/sessionmedic/heal/jsonv"
)

// headerSpot is where a rebuild-header strategy puts a header back in a file: at the start of
// its first non-blank line; the file's bytes are kept from from on after the rebuilt header;
// torn is the torn first line (the file's own, or, when a salvage already dropped it, the one
// of the file at path; nil when there was none).
type headerSpot struct {
	at, from int64
	torn     []byte
}

// findHeaderSpot reads r (size bytes) to its first non-blank line. ok is false when there is
// nothing to rebuild: no line, a single torn line and nothing after it, or a first line that
// isHeader says is a header already. A torn line 1 is read up to line1Max bytes, as the
// file's own first line is when a salvage dropped it.
func findHeaderSpot(p format.Profile, path string, r io.ReaderAt, size int64, isHeader func(*jsonv.Value) bool, line1Max int64) (h headerSpot, ok bool, err error) {
	err = format.SplitAtLong(p, r, size, nil, func(l format.Line) error {
		if l.Blank {
			return nil
		}
		h.at, h.from = int64(l.Start), int64(l.Start)
		switch {
		case l.Val == nil && !l.Terminated:
			// the file is one torn line: nothing to keep after it
		case l.Val == nil:
			h.from, ok = int64(l.End), true
			n := int64(l.End - l.Start) // without its '\n'
			if l.Terminated {
				n--
			}
			n = min(n, line1Max)
			if !l.Long() {
				h.torn = bytes.Clone(l.Raw[:n])
				break
			}
			h.torn = make([]byte, n)
			if k, rerr := r.ReadAt(h.torn, int64(l.Start)); k < len(h.torn) {
				if rerr == nil || rerr == io.EOF {
					rerr = io.ErrUnexpectedEOF
				}
				return rerr
			}
		case isHeader(l.Val):
		default: // the salvage dropped line 1 (the file's own, if torn), or there never was one
			ok = true
			if fl, _ := fsio.FirstLine(path, line1Max); jsonv.Valid(fl, p.Dialect()) != nil {
				h.torn = fl
			}
		}
		return format.Stop
	})
	return h, ok && err == nil, err
}

// after calls fn with each line of r from h.from on that want (nil: all) says it needs
// (splitFrom).
func (h headerSpot) after(p format.Profile, r io.ReaderAt, size int64, want func([]byte) bool, fn func(l format.Line) error) error {
	return splitFrom(p, r, h.from, size, want, fn)
}

// splitFrom is format.SplitAtLong of r's bytes [from, size), a line's offsets in r.
func splitFrom(p format.Profile, r io.ReaderAt, from, size int64, want func([]byte) bool, fn func(l format.Line) error) error {
	return format.SplitAtLong(p, io.NewSectionReader(r, from, size-from), size-from, want, func(l format.Line) error {
		l.Start += int(from)
		l.End += int(from)
		return fn(l)
	})
}

// splice is r with head put at h.at, the bytes before it and from h.from on kept.
func (h headerSpot) splice(size int64, head ...[]byte) *format.Splice {
	sp := &format.Splice{}
	sp.AddRange(0, h.at)
	for _, b := range head {
		sp.AddData(b)
	}
	sp.AddRange(h.from, size-h.from)
	return sp
}
