package format

import (
	"bytes"
	"crypto/sha256"
	"errors"
	"hash/maphash"
	"io"
	"slices"
	"strings"

	"github.com/sessionmedic/sessionmedic/heal/fsio"
	"github.com/sessionmedic/sessionmedic/heal/jsonv"
)

// Salvage is the repair a damaged file's own bytes allow: a JSON document keeps the bytes of
// its first complete value (nil when there is nothing after it to drop, or no such value);
// JSONL keeps every complete record line byte for byte (see [KeepLines]).
func Salvage(p Profile, path string, data []byte) []byte {
	out, _ := SalvageFigures(p, path, data)
	return out
}

// SalvageFigures is [Salvage], with what a JSONL salvage keeps and loses as [PlanKeep]
// measures it (nil for JSON, or when the app's [SalvageFinisher] changed the salvage: [Loss]
// measures those).
func SalvageFigures(p Profile, path string, data []byte) ([]byte, *KeepFigures) {
	if !p.JSONL() {
		end, err := jsonv.FirstValue(data, p.Dialect())
		if err != nil || end >= len(bytes.TrimRight(data, " \t\r\n")) {
			return nil, nil
		}
		return data[:end], nil
	}
	out, fig := KeepLinesFigures(p, path, data)
	if f, ok := p.(SalvageFinisher); ok && out != nil {
		if fin := f.FinishSalvage(path, data, out); !bytes.Equal(fin, out) {
			return fin, nil
		}
	}
	return out, &fig
}

// Loss counts what a repair's bytes (data, holding keep records) drop of the damaged file's
// (old): the records old held, those the user loses, and their bytes. A record is lost when
// the result holds neither its line nor, in its place, a whole version of it (the line a
// backup or the last-good copy has where old has a torn or garbled one); a damaged line
// counts the records it held (two glued records are two); a NUL run, blank line or byte
// order mark is no record and costs nothing.
func Loss(p Profile, path string, old, data []byte, keep int) (total, lostRecords int, lostBytes int64) {
	if !p.JSONL() {
		total = Records(p, old)
		if lost := total - keep; lost > 0 {
			lostRecords = lost
		}
		return total, lostRecords, docLostBytes(old, data)
	}
	var gone func(*jsonv.Value) bool
	if s, ok := p.(Superseder); ok {
		gone = s.Superseded(path)
	}
	m := newLossMeter(p, data, false)
	for _, l := range split(old, p, gone != nil) {
		if !l.Blank {
			m.line(l.Raw, l.Val != nil, l.Terminated, int64(l.End-l.Start), l.Val != nil && gone != nil && gone(l.Val))
		}
	}
	m.end()
	return m.total, m.lost, m.lostBytes
}

// lossMeter measures, line by line of a damaged file, what a repair (data) loses of it, as
// [Loss] counts.
type lossMeter struct {
	p      Profile
	res    repairLines                 // the repair's lines
	long   map[[sha256.Size]byte][]int // the long lines of the repair by hash, when asked
	a      aligner                     // damaged lines since the last line data holds in order
	pieces [][]byte                    // the lines of the hunk split into records

	total, lost int
	lostBytes   int64

	// elsewhere, when set, looks for a torn last line's whole version in the rest of the
	// result (data being the repair of one hunk of the file, see PlanKeep).
	elsewhere func(raw []byte) bool

	err error // the repair could not be read (or must be held: errHoldRepair)
}

// repairLines is a repair's non-blank lines (without '\r') as a lossMeter reads them: held
// (heldLines) or read from its file (fileLines).
type repairLines interface {
	count() int
	// indexFrom is the index of the first line at or after from equal to line (its '\r'
	// aside), or -1.
	indexFrom(line []byte, from int) int
	line(i int) ([]byte, error)
	// contains: b is anywhere in the repair's bytes.
	contains(b []byte) (bool, error)
}

// heldLines is a repair held whole.
type heldLines struct {
	data []byte
	set  lineSet
}

func (h *heldLines) count() int                          { return len(h.set.all) }
func (h *heldLines) indexFrom(line []byte, from int) int { return h.set.indexFrom(line, from) }
func (h *heldLines) line(i int) ([]byte, error)          { return h.set.all[i], nil }
func (h *heldLines) contains(b []byte) (bool, error)     { return bytes.Contains(h.data, b), nil }

func newLossMeter(p Profile, data []byte, long bool) *lossMeter {
	h := &heldLines{data: data, set: newLineSet(data)}
	m := &lossMeter{p: p, res: h}
	if long {
		m.long = map[[sha256.Size]byte][]int{}
		for i, l := range h.set.all {
			if len(l) > lineWindow/2 {
				k := sha256.Sum256(l)
				m.long[k] = append(m.long[k], i)
			}
		}
	}
	return m
}

// contains is m.res.contains, a failure kept in m.err (and the bytes then not found).
func (m *lossMeter) contains(b []byte) bool {
	if m.err != nil {
		return false
	}
	found, err := m.res.contains(b)
	if err != nil {
		m.err = err
	}
	return found
}

// line measures a non-blank line of the damaged file, of ll bytes with its '\n': a valid
// record or not, terminated or not, preserved elsewhere (a finished archive) or not.
func (m *lossMeter) line(raw []byte, valid, terminated bool, ll int64, preserved bool) {
	if NULRun(raw) {
		return
	}
	if i := m.res.indexFrom(raw, m.a.next); i >= 0 {
		m.total++
		m.settle(i)
		return
	}
	if valid {
		m.total++
		if m.res.indexFrom(raw, 0) < 0 && !preserved {
			m.lost++
			m.lostBytes += ll
		}
		return
	}
	if !terminated && (m.contains(raw) || m.elsewhere != nil && m.elsewhere(raw)) {
		m.total += heldRecords(m.p, raw)
		return // a torn last record whose whole version the result holds
	}
	if recs := SplitLine(m.p, raw); recs != nil {
		// Split: each whole record kept or lost, and each stretch of bytes around them (a
		// stub) one record more, lost unless it is the torn start of a record split out of
		// the same line and kept (a writer's first try, written again in full), or no
		// record at all when it does not start as one (garbage: its bytes only).
		var keptRecs [][]byte
		for _, r := range recs {
			m.total++
			if m.contains(r) {
				keptRecs = append(keptRecs, r)
			} else {
				m.lost++
				m.lostBytes += int64(len(r))
			}
		}
		for _, s := range stubs(raw, recs) {
			if tornCopy(s, keptRecs) {
				continue
			}
			if startsRecord(m.p, s) {
				m.total++
				m.lost++
			}
			m.lostBytes += int64(len(s))
		}
		m.pieces = append(m.pieces, raw)
		return
	}
	n := heldRecords(m.p, raw)
	m.total += n
	m.a.add(n, ll, raw)
}

// stubs are the stretches of a split line (raw) around its records (recs, slices of raw in
// order), each without the blanks, NULs and byte order mark around it; none is empty.
func stubs(raw []byte, recs [][]byte) [][]byte {
	var out [][]byte
	add := func(b []byte) {
		if b = bytes.Trim(bytes.TrimPrefix(bytes.Trim(b, " \t\r\x00"), BOM), " \t\r\x00"); len(b) > 0 {
			out = append(out, b)
		}
	}
	at := 0
	for _, r := range recs {
		i := bytes.Index(raw[at:], r)
		if i < 0 {
			break // not a slice of raw: the rest is judged as one stub
		}
		add(raw[at : at+i])
		at += i + len(r)
	}
	add(raw[at:])
	return out
}

// tornCopy: a stub (s) is the torn start of one of the records split out of its own line
// that the result keeps (keptRecs).
func tornCopy(s []byte, keptRecs [][]byte) bool {
	for _, r := range keptRecs {
		if len(s) < len(r) && bytes.HasPrefix(r, s) {
			return true
		}
	}
	return false
}

// longLine measures a line too long to hold, by the hash of its bytes without '\r': a
// damaged one counts one record if it starts as an object does (obj), and a torn one is not
// looked for in the result.
func (m *lossMeter) longLine(key [sha256.Size]byte, valid, obj bool, ll int64) {
	records := 0
	if valid || obj {
		records = 1
	}
	m.total += records
	for _, i := range m.long[key] {
		if i >= m.a.next {
			m.settle(i)
			return
		}
	}
	if valid {
		if len(m.long[key]) == 0 {
			m.lost++
			m.lostBytes += ll
		}
		return
	}
	m.a.add(records, ll, nil)
}

// settle ends the hunk at the result's line to, which matches the damaged file's line: the
// result's lines in the hunk's place (but the pieces split out of its lines) may be whole
// versions of its damaged records.
func (m *lossMeter) settle(to int) {
	// The aligner looks at most maxAhead lines past each one it matches, and matches each
	// record of a pending line at most once: the gap's lines past those are never read (none
	// when nothing is pending).
	need := 0
	if len(m.a.pending) > 0 {
		need = maxAhead
		for _, h := range m.a.pending {
			need += h.records * maxAhead
		}
	}
	var gap [][]byte
	for i := m.a.next; i < to && len(gap) < need; i++ {
		r, err := m.res.line(i)
		if err != nil {
			m.err = err
			break
		}
		if !containedIn(m.pieces, r) {
			gap = append(gap, r)
		}
	}
	n, b := m.a.settle(gap, to)
	m.lost += n
	m.lostBytes += b
	m.pieces = m.pieces[:0]
}

// end ends the last hunk at the result's end.
func (m *lossMeter) end() {
	m.settle(m.res.count())
}

// docLostBytes is what a JSON document's repair (data) drops of the damaged one (old): the
// bytes between what they share at the start and at the end.
func docLostBytes(old, data []byte) int64 {
	pre := fsio.CommonPrefix(old, data)
	suf := 0
	for suf < len(old)-pre && suf < len(data)-pre && old[len(old)-1-suf] == data[len(data)-1-suf] {
		suf++
	}
	return int64(max(len(old)-pre-suf, 0))
}

// heldRecords is how many records a damaged line held: its whole objects one after another
// and a torn or garbled rest, or, for a profile that knows how its records start, one more
// than the records that start right after another ends ("}{"), whole or not. A line that
// does not start as an object is the piece of a record (one a raw newline split) or
// garbage: none, its bytes lost with the record's — but in JSON Lines, where any value is a
// record, any line holds one.
func heldRecords(p Profile, raw []byte) int {
	b := bytes.TrimRight(recordFrom(raw), " \t\r\x00")
	n := 0
	rest := b
	for len(rest) > 0 && rest[0] == '{' && n < maxSplitStarts {
		end, err := jsonv.FirstValue(rest, p.Dialect())
		if err != nil || end <= 0 {
			break
		}
		n++
		rest = bytes.Trim(rest[end:], " \t\x00")
	}
	if len(rest) > 0 && (n > 0 || rest[0] == '{' || rulesOf(p).anyValue) {
		n++ // a torn or garbled record (any value is one in JSON Lines)
	}
	if s, ok := p.(Splitter); ok {
		starts := 0
		if len(b) > 0 && b[0] == '{' {
			starts = 1
		}
		for i := bytes.Index(b, []byte("}{")); i >= 0 && starts < maxSplitStarts; {
			for _, m := range s.RecordStarts() {
				if bytes.HasPrefix(b[i+1:], m) {
					starts++
					break
				}
			}
			j := bytes.Index(b[i+1:], []byte("}{"))
			if j < 0 {
				break
			}
			i += 1 + j
		}
		n = max(n, starts)
	}
	return n
}

// recordFrom is a damaged line from where a record would start: past a byte order mark,
// blanks, '\r's and NULs.
func recordFrom(raw []byte) []byte {
	return bytes.TrimLeft(bytes.TrimPrefix(bytes.TrimLeft(raw, " \t\r\x00"), BOM), " \t\r\x00")
}

// startsRecord: a damaged line (its first bytes, head) starts as a record of p does (an
// object; in JSON Lines, anything).
func startsRecord(p Profile, head []byte) bool {
	b := recordFrom(head)
	return len(b) > 0 && (b[0] == '{' || rulesOf(p).anyValue)
}

// aligner follows a damaged file's lines against a repair's, in order: a damaged line
// between two lines both hold (in a hunk) is made good by a line of the repair in the same
// place that is its whole version (see [wholeVersion]).
type aligner struct {
	next    int // the repair's line after the last one matched
	pending []hunkLine
}

// hunkLine is a damaged line of a hunk: the records and bytes it held, and its ends.
type hunkLine struct {
	records int
	bytes   int64
	n       int    // its length without '\r'
	head    []byte // its first bytes
	tail    []byte // ... and last, up to hunkEnds each
}

const (
	maxHunk  = 4096 // lines a hunk remembers one by one; past it they are added up, and lost
	hunkEnds = 256
	maxAhead = 1024 // lines of the repair a damaged line's whole version is looked for in
)

func (a *aligner) add(records int, ll int64, raw []byte) {
	if len(a.pending) == maxHunk {
		a.pending[maxHunk-1].records += records
		a.pending[maxHunk-1].bytes += ll
		a.pending[maxHunk-1].n = -1
		return
	}
	raw = bytes.TrimRight(raw, "\r")
	a.pending = append(a.pending, hunkLine{records: records, bytes: ll, n: len(raw),
		head: bytes.Clone(raw[:min(len(raw), hunkEnds)]), tail: bytes.Clone(raw[max(len(raw)-hunkEnds, 0):])})
}

// settle ends the hunk at the repair's line at, gap being the repair's lines in its place:
// each damaged line's records are made good by as many whole versions of it in gap, in
// order; the records left are lost, with their line's bytes.
func (a *aligner) settle(gap [][]byte, at int) (lost int, lostBytes int64) {
	j, last := 0, -1
	for _, h := range a.pending {
		left := h.records
		if last >= 0 && h.within(gap[last]) {
			continue // a piece of the record last matched (one a raw newline split, rejoined)
		}
		if left == 0 {
			lostBytes += h.bytes // the piece of a record, or garbage
			continue
		}
		for k := j; k < len(gap) && k < j+maxAhead && left > 0; k++ {
			if h.wholeVersion(gap[k]) {
				left--
				j, last = k+1, k
			}
		}
		if left > 0 {
			lost += left
			lostBytes += h.bytes
		}
	}
	a.pending, a.next = a.pending[:0], at+1
	return lost, lostBytes
}

// within: the damaged line h is part of c (its ends, all of a short line, are in c).
func (h hunkLine) within(c []byte) bool {
	return h.n > 0 && bytes.Contains(c, h.head) && bytes.Contains(c, h.tail)
}

// wholeVersion: c may be the whole version of the damaged line h (or of one of the records
// glued in it): what they share at the start and at the end is at least half of the shorter
// (a torn line is its whole version's start; a flipped byte, a NUL run or a byte order mark
// spoils a few bytes of it).
func (h hunkLine) wholeVersion(c []byte) bool {
	if h.n < 0 {
		return false
	}
	short := min(h.n, len(c))
	if short == 0 {
		return false
	}
	pre := fsio.CommonPrefix(h.head, c)
	suf := 0
	for suf < len(h.tail) && suf < len(c) && h.tail[len(h.tail)-1-suf] == c[len(c)-1-suf] {
		suf++
	}
	// The ends stored are at most hunkEnds each: a long line is judged on them.
	return pre+suf >= max(min(short, 2*hunkEnds)/2, min(short, 8))
}

func containedIn(in [][]byte, b []byte) bool {
	for _, s := range in {
		if bytes.Contains(s, b) {
			return true
		}
	}
	return false
}

// NULRun: a line (its '\r' aside) of NUL bytes only, what a power cut leaves where pages were
// never written: no record, however it is counted.
func NULRun(raw []byte) bool {
	b := bytes.TrimSuffix(raw, []byte("\r"))
	return len(b) > 0 && AllNUL(b)
}

// lineSet is a file's non-blank lines (without '\r') in order, as slices of its bytes, and
// where each is: a big file's lines are not copied to be looked up.
type lineSet struct {
	seed  maphash.Seed
	lines map[uint64][]int // a line's hash: the indexes in all of the lines with it
	all   [][]byte
}

func newLineSet(data []byte) lineSet {
	s := lineSet{seed: maphash.MakeSeed(), lines: map[uint64][]int{}}
	jsonv.Lines(data, func(_ int, line []byte, _ bool) bool {
		line = bytes.TrimRight(line, "\r")
		if len(bytes.TrimSpace(line)) > 0 {
			h := maphash.Bytes(s.seed, line)
			s.lines[h] = append(s.lines[h], len(s.all))
			s.all = append(s.all, line)
		}
		return true
	})
	return s
}

// indexFrom is the index of the first line at or after from equal to line, or -1.
func (s lineSet) indexFrom(line []byte, from int) int {
	line = bytes.TrimRight(line, "\r")
	at := s.lines[maphash.Bytes(s.seed, line)] // in order: the first at or after from found by a search
	k, _ := slices.BinarySearch(at, from)
	for _, i := range at[k:] {
		if bytes.Equal(s.all[i], line) {
			return i
		}
	}
	return -1
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
	if salvaged == nil {
		return nil
	}
	u, _ := UnionFrom(p, lastGood, bytes.NewReader(salvaged), int64(len(salvaged)), 0)
	return u
}

// ErrUnionTooLarge: the records a union would add to the last-good copy are over its budget.
var ErrUnionTooLarge = errors.New("the union would hold too many new records")

// UnionFrom is [Union] of a salvage of size bytes read from salv a line at a time (a salvage
// is valid record lines, each ended by '\n'): only the last-good copy, the keys of its
// records and the salvaged records it lacks are held — up to budget bytes of them
// (0: no limit), else ErrUnionTooLarge. A salvaged line longer than LineWindow is not held
// either: ErrUnionTooLarge.
func UnionFrom(p Profile, lastGood []byte, salv io.ReaderAt, size int64, budget int) ([]byte, error) {
	if !p.JSONL() {
		return nil, nil
	}
	kp := newKeyParser(p)
	// The copy's records, by key: a salvaged record the copy has is not held (but for the
	// newest version of a keyed record replaced in place, a "\x00" key). Each is read once,
	// and kept as its bounds in the copy and its key.
	inCopy := map[[16]byte]bool{}
	type copyRec struct {
		start, end int
		k          [16]byte
	}
	var recs []copyRec
	eachKeyed(kp, lastGood, func(start, end int, k [16]byte) {
		inCopy[k] = true
		recs = append(recs, copyRec{start, end, k})
	})
	newest, added, order, err := unionAdds(kp, &longJudge{r: rulesOf(p), window: lineWindow}, inCopy, salv, size, budget)
	if err != nil {
		return nil, err
	}
	held := 0
	for _, b := range added {
		held += len(b)
	}
	// The result is allocated once, at its size.
	n := held
	for _, r := range recs {
		if b, ok := newest[r.k]; ok {
			n += len(b)
		} else {
			n += r.end - r.start
		}
	}
	out := make([]byte, 0, n)
	for _, r := range recs {
		if b, ok := newest[r.k]; ok {
			out = append(out, b...)
		} else {
			out = append(out, lastGood[r.start:r.end]...)
		}
	}
	for _, k := range order {
		out = append(out, added[k]...)
	}
	return out, nil
}

// UnionSplice is UnionFrom of a copy read from its file (copySize bytes of lastGood), said as
// a splice of that file: the copy's records as ranges of it, the newer versions and the
// records the salvage adds (within budget, as UnionFrom) held. Its bytes, read with the copy
// (Splice.At(lastGood)), are UnionFrom's. The copy is read three times: for its keys, then,
// once the salvage is read, for its records' places. A line of the copy over the line window
// is errHoldRepair (ErrHoldCandidate): the copy is to be held.
func UnionSplice(p Profile, lastGood io.ReaderAt, copySize int64, salv io.ReaderAt, size int64, budget int) (*Splice, error) {
	if !p.JSONL() {
		return nil, nil
	}
	kp := newKeyParser(p)
	lj := &longJudge{r: rulesOf(p), window: lineWindow}
	copyLines := func(fn func(start, end int64, k [16]byte)) error {
		err := readWalker(lastGood, copySize, min(StreamBuf, lineWindow), MaxLine, lj)(0, copySize, false,
			func(start int64, line []byte, terminated bool, long *longLine) error {
				if long != nil {
					return ErrHoldCandidate
				}
				k, ok := kp.key(line)
				if !ok {
					return nil
				}
				end := start + int64(len(line))
				if terminated {
					end++
				}
				fn(start, end, k)
				return nil
			})
		return err
	}
	inCopy := map[[16]byte]bool{}
	if err := copyLines(func(_, _ int64, k [16]byte) { inCopy[k] = true }); err != nil {
		return nil, err
	}
	newest, added, order, err := unionAdds(kp, lj, inCopy, salv, size, budget)
	if err != nil {
		return nil, err
	}
	// The versions and records held are the splice's own (each its own piece, not copied).
	sp := &Splice{}
	if err := copyLines(func(start, end int64, k [16]byte) {
		if b, ok := newest[k]; ok {
			sp.addHeld(b)
		} else {
			sp.AddRange(start, end-start)
		}
	}); err != nil {
		return nil, err
	}
	for _, k := range order {
		sp.addHeld(added[k])
	}
	return sp, nil
}

// UnionCount is what [UnionFrom] and [Records] would say of a last-good copy and of its
// union with a salvage (see [UnionCounts]).
type UnionCount struct {
	Copy, Union int  // the copy's records, the union's
	Made        bool // a union is made (UnionFrom refuses one over its budget)
	Same        bool // ... and it is the copy's bytes, no more, no less
	Exact       bool // the figures are those of the bytes held (else none is given)
}

// UnionCounts measures the copy (copySize bytes of lastGood) and its union with the salvage
// (size bytes of salv) from both, without holding either. The count is not Exact where the
// bytes held could be counted otherwise than the lines walked: a line over the line window,
// or a record without its '\n' (which a union would glue to the next record it holds), in
// either.
func UnionCounts(p Profile, lastGood io.ReaderAt, copySize int64, salv io.ReaderAt, size int64, budget int) (UnionCount, error) {
	var c UnionCount
	if !p.JSONL() {
		return c, nil
	}
	kp := newKeyParser(p)
	lj := &longJudge{r: rulesOf(p), window: lineWindow}
	inCopy := map[[16]byte]bool{}
	exact, clean := true, true // clean: every line of the copy a record with its '\n'
	err := readWalker(lastGood, copySize, min(StreamBuf, lineWindow), MaxLine, lj)(0, copySize, false,
		func(_ int64, line []byte, terminated bool, long *longLine) error {
			if long != nil {
				exact = false
				return Stop
			}
			k, ok := kp.key(line)
			if !ok {
				clean = false
				return nil
			}
			if !terminated {
				exact = false
				return Stop
			}
			inCopy[k] = true
			c.Copy++
			return nil
		})
	if errors.Is(err, Stop) || !exact {
		return UnionCount{}, nil
	}
	if err != nil {
		return UnionCount{}, err
	}
	added := map[[16]byte]int{} // the salvaged records the copy lacks: the newest one's size
	held, replaced := 0, false
	c.Made = true
	err = readWalker(salv, size, min(StreamBuf, lineWindow), MaxLine, lj)(0, size, false,
		func(_ int64, line []byte, terminated bool, long *longLine) error {
			if long != nil {
				if long.record {
					c.Made = false // ErrUnionTooLarge
				}
				return nil
			}
			k, ok := kp.key(line)
			if !ok {
				return nil
			}
			if !terminated {
				exact = false
				return Stop
			}
			if inCopy[k] {
				// The copy's version stays, or the newest replaces it in place.
				replaced = replaced || kp.replaced
				return nil
			}
			n := len(line) + 1
			old, seen := added[k]
			if !seen {
				c.Union++
			}
			if held += n - old; budget > 0 && held > budget {
				c.Made = false // ErrUnionTooLarge
			}
			added[k] = n
			return nil
		})
	if errors.Is(err, Stop) || !exact {
		return UnionCount{}, nil
	}
	if err != nil {
		return UnionCount{}, err
	}
	c.Union += c.Copy
	c.Same = c.Made && clean && !replaced && c.Union == c.Copy
	c.Exact = true
	return c, nil
}

// unionAdds reads the salvage (size bytes of salv) against the copy's record keys (inCopy),
// as a union takes it: the newest salvaged version of each of the copy's records replaced in
// place ("\x00" keys), and the salvaged records the copy lacks (the newest version of each,
// in the order first salvaged), within budget (ErrUnionTooLarge).
func unionAdds(kp *keyParser, lj *longJudge, inCopy map[[16]byte]bool, salv io.ReaderAt, size int64, budget int) (newest, added map[[16]byte][]byte, order [][16]byte, err error) {
	newest = map[[16]byte][]byte{}
	added = map[[16]byte][]byte{}
	held := 0
	walk := readWalker(salv, size, min(StreamBuf, lineWindow), MaxLine, lj)
	err = walk(0, size, false, func(start int64, line []byte, terminated bool, long *longLine) error {
		if long != nil {
			if long.record {
				return ErrUnionTooLarge
			}
			return nil
		}
		k, ok := kp.key(line)
		if !ok {
			return nil
		}
		if inCopy[k] && !kp.replaced {
			return nil // the copy's version stays: nothing to hold
		}
		rec := append(bytes.Clone(line), '\n')
		if !terminated {
			rec = rec[:len(rec)-1] // as the salvage has it
		}
		switch {
		case inCopy[k]:
			newest[k] = rec
		default:
			old, seen := added[k]
			if !seen {
				order = append(order, k)
			}
			if held += len(rec) - len(old); budget > 0 && held > budget {
				return ErrUnionTooLarge
			}
			added[k] = rec
		}
		return nil
	})
	if err != nil {
		return nil, nil, nil, err
	}
	return newest, added, order, nil
}

// eachKeyed calls fn for each record of data in order: its bytes [start, end) (with its '\n'
// when it has one) and the lineKey of its recordKey.
func eachKeyed(kp *keyParser, data []byte, fn func(start, end int, k [16]byte)) {
	jsonv.Lines(data, func(start int, line []byte, terminated bool) bool {
		k, ok := kp.key(line)
		if !ok {
			return true
		}
		end := start + len(line)
		if terminated {
			end++
		}
		fn(start, end, k)
		return true
	})
}

// keyParser gives the lineKey of a record line's recordKey (ok false: no valid record),
// built from the record's tree when the profile keys records (RecordKeyer): only what its
// RecordKey reads when the profile says so (RecordKeyFielder: built in one reused arena, no
// tree left behind per record), else the whole tree. replaced says whether the last key was
// of a record replaced in place (a "\x00" key).
type keyParser struct {
	p        Profile
	keyed    bool
	fields   *jsonv.Fields
	arena    jsonv.Arena
	replaced bool
}

func newKeyParser(p Profile) *keyParser {
	kp := &keyParser{p: p}
	_, kp.keyed = p.(RecordKeyer)
	if f, ok := p.(RecordKeyFielder); ok {
		kp.fields = f.RecordKeyFields()
	}
	return kp
}

func (kp *keyParser) key(line []byte) ([16]byte, bool) {
	kp.replaced = false
	body := bytes.TrimSuffix(line, []byte("\r"))
	trimmed := bytes.TrimSpace(body)
	if len(trimmed) == 0 || !ValidRecord(kp.p, line) {
		return [16]byte{}, false
	}
	if kp.keyed && trimmed[0] == '{' {
		l := Line{Raw: line, Val: anyObject}
		if kp.fields != nil {
			l.Val = kp.arena.ParseFieldsValid(body, kp.p.Dialect(), kp.fields)
		} else {
			v, err := jsonv.Parse(body, kp.p.Dialect())
			if err != nil {
				return [16]byte{}, false
			}
			l.Val = v
		}
		if key := kp.p.(RecordKeyer).RecordKey(l.Val); key != "" {
			kp.replaced = strings.HasPrefix(key, "\x00")
			return lineKey([]byte(key)), true
		}
	}
	// recordKey's own: the line itself, hashed where it lies.
	return lineKey(bytes.TrimRight(line, "\r")), true
}
