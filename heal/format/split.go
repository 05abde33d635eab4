package format

import (
	"bytes"

	"github.com/sessionmedic/sessionmedic/heal/jsonv"
)

// maxSplitStarts bounds the record starts tried on one line, so that a hostile line full of
// them costs a bounded number of passes.
const maxSplitStarts = 256

// SplitLine is what a Splitter's salvage keeps of a line that is not one valid record (its
// bytes without the '\n'). A NUL run (a power cut's zeroed bytes) replaced what was there: the
// line is cut at each run and the pieces are taken alone, never joined across one (bytes before
// and after a run are of different records, or of one record with a hole). Of each piece: the
// piece when it is one valid record; else, for the smallest b that is 0 or an offset where one
// of the app's record starts begins, the piece's bytes from b when they are one or more whole
// records back to back with nothing after. The records are returned in order, each exactly
// its bytes; nil when the line holds none.
func SplitLine(p Profile, line []byte) [][]byte {
	s, ok := p.(Splitter)
	if !ok {
		return nil
	}
	body := bytes.TrimSuffix(line, []byte("\r"))
	if bytes.IndexByte(body, 0) < 0 {
		return splitPiece(p, s, body)
	}
	var out [][]byte
	for _, piece := range bytes.Split(body, []byte{0}) {
		out = append(out, splitPiece(p, s, piece)...)
	}
	return out
}

// splitPiece is SplitLine of a piece of a line that holds no NUL.
func splitPiece(p Profile, s Splitter, body []byte) [][]byte {
	if len(bytes.TrimSpace(body)) == 0 {
		return nil
	}
	if ValidRecord(p, body) {
		return [][]byte{body}
	}
	starts := []int{0}
	for i := 1; i < len(body) && len(starts) < maxSplitStarts; i++ {
		if body[i] != '{' {
			continue
		}
		for _, m := range s.RecordStarts() {
			if bytes.HasPrefix(body[i:], m) {
				starts = append(starts, i)
				break
			}
		}
	}
	for _, b := range starts {
		if recs := wholeRecords(p, s, body[b:]); recs != nil {
			return recs
		}
	}
	return nil
}

// wholeRecords splits b into whole records back to back, or returns nil. The boundaries are
// found first, and the records parsed only when the whole of b is records: a line that is not
// costs one scan per start, never a tree.
func wholeRecords(p Profile, s Splitter, b []byte) [][]byte {
	var out [][]byte
	for len(b) > 0 {
		if b[0] != '{' {
			return nil
		}
		end, err := jsonv.FirstValue(b, p.Dialect())
		if err != nil {
			return nil
		}
		out = append(out, b[:end])
		b = b[end:]
	}
	for _, rec := range out {
		v, err := jsonv.Parse(rec, p.Dialect())
		if err != nil || !s.Whole(v) {
			return nil
		}
	}
	return out
}

// maxRejoin is how many lines a record split by raw newlines is looked for over.
const maxRejoin = 16

// RejoinLines: lines[i], a line that is no record, and the lines after it are one record a
// raw newline (or several) split: the record, with each newline escaped as \n, and how many
// lines it took; nil when no join of up to maxRejoin lines, none of them a record, is one
// whole record of p. A join parses only where each newline was inside a string (a backslash
// anywhere else is no JSON), so it never guesses: the bytes are the record's, and the
// newline within its string was the writer's.
func RejoinLines(p Profile, lines []Line, i int) ([]byte, int) {
	r, ok := p.(Rejoiner)
	if !ok || !r.RejoinsSplitRecords() || lines[i].Val != nil || !lines[i].Terminated {
		return nil, 0
	}
	first := bytes.TrimSuffix(lines[i].Raw, []byte("\r"))
	if len(first) == 0 || first[0] != '{' || bytes.IndexByte(first, 0) >= 0 {
		return nil, 0
	}
	joined := bytes.Clone(first)
	for k := i + 1; k < len(lines) && k <= i+maxRejoin; k++ {
		l := lines[k]
		if l.Val != nil || bytes.IndexByte(l.Raw, 0) >= 0 {
			return nil, 0
		}
		joined = append(append(joined, '\\', 'n'), bytes.TrimSuffix(l.Raw, []byte("\r"))...)
		if v, err := jsonv.Parse(joined, p.Dialect()); err == nil {
			if !r.Whole(v) {
				return nil, 0
			}
			return joined, k - i + 1
		}
		if !l.Terminated {
			return nil, 0
		}
	}
	return nil, 0
}
