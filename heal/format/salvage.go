package format

import (
	"bytes"
	"hash/maphash"
	"strings"

	"github.com/sessionmedic/sessionmedic/heal/fsio"
	"github.com/sessionmedic/sessionmedic/heal/jsonv"
)

// Salvage is the repair a damaged file's own bytes allow: a JSON document keeps the bytes of
// its first complete value (nil when there is nothing after it to drop, or no such value);
// JSONL keeps every complete record line byte for byte (see [KeepLines]).
func Salvage(p Profile, path string, data []byte) []byte {
	if !p.JSONL() {
		end, err := jsonv.FirstValue(data, p.Dialect())
		if err != nil || end >= len(bytes.TrimRight(data, " \t\r\n")) {
			return nil
		}
		return data[:end]
	}
	return KeepLines(p, path, data)
}

// Loss counts what a repair's bytes (data, holding keep records) drop of the damaged file's
// (old): the records of old, those lost, and the bytes lost.
func Loss(p Profile, path string, old, data []byte, keep int) (total, lostRecords int, lostBytes int64) {
	if !p.JSONL() {
		total = Records(p, old)
		if lost := total - keep; lost > 0 {
			lostRecords = lost
		}
		lostBytes = int64(len(old) - fsio.CommonPrefix(old, data))
		if lostBytes < 0 {
			lostBytes = 0
		}
		return total, lostRecords, lostBytes
	}
	kept := newLineSet(data)
	var gone func(*jsonv.Value) bool
	if s, ok := p.(Superseder); ok {
		gone = s.Superseded(path)
	}
	for _, l := range split(old, p, gone != nil) {
		if l.Blank {
			continue
		}
		if NULRun(l.Raw) {
			// A run of NULs (a power cut's zeroed pages) held no record: its bytes go, no
			// history with them.
			if !kept.has(l.Raw) {
				lostBytes += int64(l.End - l.Start)
			}
			continue
		}
		total++
		if kept.has(l.Raw) || (l.Val == nil && !l.Terminated && bytes.Contains(data, l.Raw)) {
			continue // kept, or a torn last record whose whole version the result holds
		}
		if l.Val == nil && !p.Plain() && kept.hasPrefixed(l.Raw) {
			// A torn line the repair replaced by its whole version (a rebuilt or restored
			// header). Plain profiles are measured as the streamed survey measures them.
			continue
		}
		if l.Val != nil && gone != nil && gone(l.Val) {
			continue // preserved in a finished archive
		}
		if l.Val == nil {
			if recs := SplitLine(p, l.Raw); recs != nil {
				// Split: what is lost is the bytes around the whole records kept.
				kept := 0
				for _, r := range recs {
					if bytes.Contains(data, r) {
						kept += len(r)
					}
				}
				if lost := bytes.Count(l.Raw, []byte{0}); len(bytes.TrimSuffix(l.Raw, []byte("\r")))-lost > kept {
					lostRecords++
				}
				lostBytes += int64(len(l.Raw) - kept)
				continue
			}
		}
		lostRecords++
		lostBytes += int64(l.End - l.Start)
	}
	return total, lostRecords, lostBytes
}

// NULRun: a line (its '\r' aside) of NUL bytes only, what a power cut leaves where pages were
// never written: no record, however it is counted.
func NULRun(raw []byte) bool {
	b := bytes.TrimSuffix(raw, []byte("\r"))
	return len(b) > 0 && AllNUL(b)
}

// lineSet is the set of a file's lines (without '\r'), as slices of its bytes: a big file's
// lines are not copied to be looked up.
type lineSet struct {
	seed  maphash.Seed
	lines map[uint64][][]byte
	all   [][]byte
}

func newLineSet(data []byte) lineSet {
	s := lineSet{seed: maphash.MakeSeed(), lines: map[uint64][][]byte{}}
	jsonv.Lines(data, func(_ int, line []byte, _ bool) bool {
		line = bytes.TrimRight(line, "\r")
		if len(bytes.TrimSpace(line)) > 0 {
			h := maphash.Bytes(s.seed, line)
			s.lines[h] = append(s.lines[h], line)
			s.all = append(s.all, line)
		}
		return true
	})
	return s
}

func (s lineSet) has(line []byte) bool {
	line = bytes.TrimRight(line, "\r")
	for _, l := range s.lines[maphash.Bytes(s.seed, line)] {
		if bytes.Equal(l, line) {
			return true
		}
	}
	return false
}

// hasPrefixed: a line of the set starts with the bytes of raw (a torn record whose whole
// version the set holds).
func (s lineSet) hasPrefixed(raw []byte) bool {
	raw = bytes.TrimRight(raw, "\r")
	if len(raw) == 0 {
		return false
	}
	for _, l := range s.all {
		if bytes.HasPrefix(l, raw) {
			return true
		}
	}
	return false
}

// recordKey identifies a JSONL record across versions of a file.
func recordKey(p Profile, l Line) string {
	if k, ok := p.(RecordKeyer); ok {
		if key := k.RecordKey(l.Val); key != "" {
			return key
		}
	}
	return string(bytes.TrimRight(l.Raw, "\r"))
}

// Union merges a JSONL last-good copy with salvaged records the copy lacks (an append log
// whose tail was torn after the copy was taken): last-good's records in order, a newer
// version of a keyed record (the metadata line) replacing its old one, then the new records
// in order. It is nil for JSON, or when nothing was salvaged.
func Union(p Profile, lastGood, salvaged []byte) []byte {
	if !p.JSONL() || salvaged == nil {
		return nil
	}
	newer := map[string][]byte{}
	var order []string
	_, keyed := p.(RecordKeyer)
	for _, l := range split(salvaged, p, keyed) {
		if l.Val == nil {
			continue
		}
		k := recordKey(p, l)
		if _, dup := newer[k]; !dup {
			order = append(order, k)
		}
		newer[k] = salvaged[l.Start:l.End]
	}
	var out []byte
	used := map[string]bool{}
	for _, l := range split(lastGood, p, keyed) {
		if l.Val == nil {
			continue
		}
		k := recordKey(p, l)
		if b, ok := newer[k]; ok && strings.HasPrefix(k, "\x00") {
			out = append(out, b...)
		} else {
			out = append(out, lastGood[l.Start:l.End]...)
		}
		used[k] = true
	}
	for _, k := range order {
		if !used[k] {
			out = append(out, newer[k]...)
		}
	}
	return out
}
