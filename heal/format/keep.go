package format

import (
	"bytes"
	"crypto/sha256"
	"hash/maphash"
	"io"
	"sync/atomic"

	"github.com/sessionmedic/sessionmedic/heal/fsio"
	"github.com/sessionmedic/sessionmedic/heal/jsonv"
)

// KeepFigures is what a JSONL salvage ([PlanKeep]) keeps and loses of the original, as
// [Records] and [Loss] count them.
type KeepFigures struct {
	Keep      int   // records the result holds
	Total     int   // records of the original
	Lost      int   // ... the result loses
	LostBytes int64 // ... and their bytes
}

// hunkBudget and hunkLines are the most bytes and lines of damaged lines a salvage holds at
// once: a longer run of them is repaired in pieces of this size (a record split by raw
// newlines across the cut is not joined back).
const (
	hunkBudget = 16 << 20
	hunkLines  = 4096
)

// PlanKeep is [KeepLines] of the size bytes of f, read once in blocks and never held: the
// salvage as a [Splice] of the original (nil when it keeps nothing), and its figures. Only
// the damaged lines are held, a run of them at a time (a "hunk": an invalid line and the
// invalid or blank lines after it), and repaired as KeepLines repairs them: split
// ([SplitLine]) or joined back ([RejoinLines]). What a hunk loses is measured on the hunk
// and its repair alone (nothing else of the result can be a damaged line's whole version,
// but a torn last line's, which is looked for in the whole result). A line longer than
// LineWindow is judged from f: a valid one is kept as a range, a damaged one held into the
// hunk as a shorter one is, up to hunkBudget (heldDamaged), and dropped whole beyond. A
// profile whose salvage needs more than its lines (a [SalvageFinisher]) is not planned here.
func PlanKeep(p Profile, path string, f io.ReaderAt, size int64) (*Splice, KeepFigures, error) {
	return planKeep(p, path, f, size, keepWalker(p, f, size))
}

// keepWalker walks the lines of r for a salvage: a line longer than LineWindow judged from
// r, its record's skeleton made for a Superseder (which parses the records it keeps).
func keepWalker(p Profile, r io.ReaderAt, size int64) walker {
	_, superseder := p.(Superseder)
	lj := &longJudge{r: rulesOf(p), window: lineWindow, skel: superseder}
	return readWalker(r, size, min(StreamBuf, lineWindow), MaxLine, lj)
}

// TornCut is a salvage planned by [PlanTornCut]: the plan, its figures, the sums and the
// verdict on its result.
type TornCut struct {
	Keep    *Splice
	Fig     KeepFigures
	OldSHA  string     // the original's
	Verdict Verdict    // the result's, judged as InspectSum judges it (unset for TrySalvage's: its caller judges it)
	KeepSHA string     // the result's: set when Verdict is healthy
	Lines   int        // the lines before the torn one (none blank)
	kept    *tailState // planned by AppendCache.TryTorn: the state of the bytes kept
	from    *Front     // TrySalvage's: the checklist's state at the remembered bytes' end, its result's judge's start
}

// JudgeResult is InspectAt of tc's result, a salvage TrySalvage planned of f: its records
// judged from the end of the bytes the daemon remembers, the checklist going on from the
// state it kept there, where it kept one (else from the start). Where the result is healthy
// and so judged, what tc kept is given the state its judge reached: the state the appends
// to the healed file are judged from. The state goes on once: the caller has dropped the
// cache's entry of the file (AppendCache.Drop) before, and judges tc's result once.
func (tc *TornCut) JudgeResult(p Profile, path string, f io.ReaderAt) (Verdict, error) {
	v, end, err := InspectEndAfter(tc.from, p, path, f, tc.Keep)
	tc.from = nil
	if err == nil && v.Status == Healthy && tc.kept != nil {
		kept := *tc.kept
		kept.keepEnd(end, tc.Keep.Size())
		tc.kept = &kept
	}
	return v, err
}

// Resumed: tc's result is to be judged from the state the daemon kept (see JudgeResult).
func (tc *TornCut) Resumed() bool { return tc.from != nil }

// PlanTornCut is [PlanKeep], the original's sha256 and [InspectSum] of its result, in one
// pass, for a file whose last line, from x on, is torn (unterminated, not blank, not a
// record) and whose lines before it are all records: the salvage then keeps exactly the
// bytes before x (plus what the torn line's repair rebuilds, which PlanTornCut does not
// plan), so the walk that looks for lines to keep is not needed — the judge of the result
// walks them, and the read that hashes them counts them. ok is false, and nothing planned,
// when the file is not such a file or the salvage is not such a cut: a blank line before x
// (the salvage drops it), a profile whose salvage drops repeated or superseded records, a
// torn line the salvage rebuilds a record from or too long to hold, a result that is not
// healthy. The figures, the sums and the verdict are the ones PlanKeep, a sha256 of the file
// and InspectSum give.
func PlanTornCut(p Profile, path string, f io.ReaderAt, size, x int64) (tc TornCut, ok bool, err error) {
	if _, seq := p.(SequenceChecker); !seq || x <= 0 || x >= size || size-x >= int64(lineWindow)/2 {
		return tc, false, nil
	}
	if _, ok := p.(Superseder); ok {
		return tc, false, nil
	}
	// A profile that drops a repeated line: the cut is the walk's when no line repeats,
	// which a set of the lines' hashes tells (a repeat, or two lines of one hash, or a line
	// too long to hash in place: the walk decides).
	var lineSet map[uint64]struct{}
	var seed maphash.Seed
	if d, ok := p.(DuplicateDropper); ok && d.DropsDuplicateLines() {
		lineSet, seed = map[uint64]struct{}{}, maphash.MakeSeed()
	}
	torn := make([]byte, size-x+1) // with the byte before it
	if _, err := f.ReadAt(torn, x-1); err != nil && err != io.EOF {
		return tc, false, err
	}
	last := torn[1:]
	if torn[0] != '\n' || bytes.IndexByte(last, '\n') >= 0 || ValidRecord(p, last) ||
		blankLine(last) {
		return tc, false, nil
	}
	// The original is hashed beside the judge, which takes both CPUs unless it must see the
	// lines in order (to find a repeat): its sum at x is the cut's. That read also looks for
	// the torn line's whole version before it (see keeper.flush), and counts the lines before
	// it (each ends with '\n'); a blank one is found by whichever goroutine judges it.
	cw := &fsio.ContainsWriter{Needle: last}
	nl := &newlines{}
	a := hashAside(f, size, x, io.MultiWriter(cw, nl))
	defer a.Stop()
	var blanks atomic.Int64
	repeats := 0
	v, err := judgeAt(p, path, f, x, func(line []byte, long *longLine) {
		if long != nil && (long.blank || long.nul) || long == nil && blankLine(line) {
			blanks.Add(1)
		}
		if lineSet != nil {
			if long != nil {
				repeats++
				return
			}
			key := maphash.Bytes(seed, bytes.TrimRight(line, "\r"))
			if _, ok := lineSet[key]; ok {
				repeats++
			}
			lineSet[key] = struct{}{}
		}
	}, lineSet == nil)
	lineSet = nil
	if err != nil || v.Status != Healthy || blanks.Load() > 0 || repeats > 0 {
		return tc, false, err
	}
	old, err := a.Wait()
	if err != nil {
		return tc, false, err
	}
	lines := nl.n
	keep, fig, cut, err := tornKeep(p, path, f, x, lines, last, cw.Found)
	if err != nil || !cut {
		return tc, false, err
	}
	return TornCut{Keep: keep, Fig: fig, OldSHA: old, Verdict: v, KeepSHA: a.MarkSum(), Lines: lines}, true, nil
}

// newlines counts the '\n' written to it.
type newlines struct{ n int }

func (c *newlines) Write(p []byte) (int, error) {
	c.n += bytes.Count(p, []byte{'\n'})
	return len(p), nil
}

// tornKeep is the salvage of a file of f whose lines before x (lines of them, all records)
// are kept and whose last line, torn (its whole version found before it or not), is the only
// damaged one: measured, and repaired, as the salvage's walk would have (see keeper.flush:
// that whole version may be anywhere before it). cut is false when the salvage is not the
// bytes before x (it rebuilt a record from the torn line: judged the usual way).
func tornKeep(p Profile, path string, f io.ReaderAt, x int64, lines int, torn []byte, found bool) (keep *Splice, fig KeepFigures, cut bool, err error) {
	k := keeperAfter(p, path, x, lines)
	k.tornIn = func(raw []byte) (bool, bool) { return found, bytes.Equal(raw, torn) }
	k.hunk, k.hunkN = torn, 1
	if err := k.flush(f); err != nil || !k.s.Prefix() {
		return nil, fig, false, err
	}
	return k.s, k.fig, true, nil
}

// InspectTorn is, for a file whose last line is torn and whose cut PlanTornCut plans, the
// file's verdict — the one StreamInspect gives it: the torn line's fault, the walk having met
// no fault before it — and that cut, from PlanTornCut's one pass. ok is false, and nothing
// judged but the file's last bytes, for any other file: it is judged the usual way.
func InspectTorn(p Profile, path string, f io.ReaderAt, size int64) (v Verdict, tc TornCut, ok bool, err error) {
	if _, seq := p.(SequenceChecker); !seq {
		return v, tc, false, nil
	}
	x, torn, ok, err := tornTail(f, size)
	if !ok || err != nil {
		return v, tc, false, err
	}
	if tc, ok, err = PlanTornCut(p, path, f, size, x); !ok || err != nil {
		return v, TornCut{}, false, err
	}
	_, _, fault := judgeLine(rulesOf(p), x, torn, false)
	if fault == nil {
		return v, TornCut{}, false, nil // a record after all: PlanTornCut refuses those
	}
	return fault.verdict(tc.Lines + 1), tc, true, nil
}

// tornTail is the last line of the size bytes of f when no '\n' ends it (torn) and the line
// before it ends within half the line window from the end (where InspectTorn plans a cut):
// where it starts (x) and its bytes. ok is false for any other file: a whole last line, no
// line before it, one that starts further back.
func tornTail(f io.ReaderAt, size int64) (x int64, torn []byte, ok bool, err error) {
	if size < 2 {
		return 0, nil, false, nil
	}
	var end [1]byte
	if _, err := f.ReadAt(end[:], size-1); err != nil || end[0] == '\n' {
		return 0, nil, false, err // a whole last line: not torn
	}
	n := min(size, int64(lineWindow)/2)
	tail := make([]byte, n)
	if _, err := f.ReadAt(tail, size-n); err != nil && err != io.EOF {
		return 0, nil, false, err
	}
	i := bytes.LastIndexByte(tail, '\n')
	if i < 0 {
		return 0, nil, false, nil // no line before it, or one PlanTornCut does not cut
	}
	return size - n + int64(i) + 1, tail[i+1:], true, nil
}

// TornStart is where the torn last line of the size bytes of f starts, when InspectTorn
// would plan its cut there (see tornTail).
func TornStart(f io.ReaderAt, size int64) (int64, bool) {
	x, _, ok, err := tornTail(f, size)
	return x, ok && err == nil
}

// planKeep is PlanKeep of the lines walk walks.
func planKeep(p Profile, path string, f io.ReaderAt, size int64, walk walker) (*Splice, KeepFigures, error) {
	return keepFrom(newKeeper(p, path), f, walk, size)
}

// keepFrom is the salvage k plans walking the lines walk gives of f from what k has kept on
// (its result's size: the bytes k kept are the original's first ones) up to size.
func keepFrom(k *keeper, f io.ReaderAt, walk walker, size int64) (*Splice, KeepFigures, error) {
	if err := k.walk(f, walk, k.s.Size(), size); err != nil {
		return nil, KeepFigures{}, err
	}
	if k.s.Size() == 0 {
		return nil, k.fig, nil
	}
	return k.s, k.fig, nil
}

// keeper is one PlanKeep pass.
type keeper struct {
	p    Profile
	path string
	gone func(*jsonv.Value) bool // a Superseder's: records kept elsewhere
	seen map[[16]byte]bool       // a DuplicateDropper's: the record lines kept, by hash
	s    *Splice
	fig  KeepFigures

	hunk  []byte // the damaged lines held, each with its '\n' when it had one
	hunkN int    // ... and how many

	// tornIn, when set, says whether the result so far holds the torn line given (known
	// from a pass that searched it), and known whether it could tell.
	tornIn func(raw []byte) (in, known bool)
}

func newKeeper(p Profile, path string) *keeper {
	k := &keeper{p: p, path: path, s: &Splice{}}
	if s, ok := p.(Superseder); ok {
		k.gone = s.Superseded(path)
	}
	if d, ok := p.(DuplicateDropper); ok && d.DropsDuplicateLines() {
		k.seen = map[[16]byte]bool{}
	}
	return k
}

// keeperAfter is a keeper that has kept the first x bytes of the file as they are: lines
// records, none blank, no damaged line held when they end (a salvage keeps such bytes whole).
func keeperAfter(p Profile, path string, x int64, lines int) *keeper {
	k := newKeeper(p, path)
	k.s.AddRange(0, x)
	k.fig.Keep, k.fig.Total = lines, lines
	return k
}

// walk takes the lines walk gives of f's bytes [from, to), and flushes the damaged lines held
// at their end.
func (k *keeper) walk(f io.ReaderAt, walk walker, from, to int64) error {
	err := walk(from, to, false, func(start int64, line []byte, terminated bool, long *longLine) error {
		if long != nil {
			return k.long(f, start, long)
		}
		return k.line(f, start, line, terminated)
	})
	if err != nil {
		return err
	}
	return k.flush(f)
}

// line takes a line held (without its '\n').
func (k *keeper) line(f io.ReaderAt, start int64, line []byte, terminated bool) error {
	if !ValidRecord(k.p, line) {
		return k.damaged(f, line, terminated)
	}
	if err := k.flush(f); err != nil {
		return err
	}
	k.fig.Total++
	if k.seen != nil {
		key := lineKey(bytes.TrimRight(line, "\r"))
		if k.seen[key] {
			return nil // a byte-identical copy is kept: nothing lost
		}
		k.seen[key] = true
	}
	if k.gone != nil {
		if v, err := jsonv.Parse(bytes.TrimSuffix(line, []byte("\r")), k.p.Dialect()); err == nil && k.gone(v) {
			return nil // kept elsewhere: nothing lost
		}
	}
	k.keep(start, int64(len(line)), terminated)
	return nil
}

// damaged takes a line held that is no valid record (blank, or damaged) into the hunk.
func (k *keeper) damaged(f io.ReaderAt, line []byte, terminated bool) error {
	blank := blankLine(line)
	if blank && k.hunk == nil {
		return nil // a blank line is no record, and not kept
	}
	if k.hunk != nil && (len(k.hunk)+len(line) > hunkBudget || k.hunkN == hunkLines) {
		if err := k.flush(f); err != nil {
			return err
		}
		if blank {
			return nil
		}
	}
	k.hunk = append(k.hunk, line...)
	if terminated {
		k.hunk = append(k.hunk, '\n')
	}
	k.hunkN++
	return nil
}

// heldDamaged: a damaged line over the window that a salvage holds all the same, as it holds
// damaged lines under it (up to hunkBudget), for the records in it (keeper.flush): records
// glued in it split, a record torn across it and the next line rejoined. Longer, it is
// dropped whole (its bytes quarantined with the original).
func heldDamaged(long *longLine) bool {
	return !long.record && !long.blank && !long.nul && long.n <= hunkBudget
}

// readLine is the n bytes of f at start: a line judged streaming, read whole.
func readLine(f io.ReaderAt, start, n int64) ([]byte, error) {
	line := make([]byte, n)
	if k, err := f.ReadAt(line, start); k < len(line) {
		if err == nil || err == io.EOF {
			err = io.ErrUnexpectedEOF // cut short since its end was found
		}
		return nil, err
	}
	return line, nil
}

// blankLine: a line (without its '\n') holds no record, nor anything else: whitespace only.
func blankLine(line []byte) bool {
	return len(bytes.TrimSpace(bytes.TrimSuffix(line, []byte("\r")))) == 0
}

// keep keeps the record line of n bytes at start (given a '\n' when it had none).
func (k *keeper) keep(start, n int64, terminated bool) {
	k.fig.Keep++
	if terminated {
		k.s.AddRange(start, n+1)
		return
	}
	k.s.AddRange(start, n)
	k.s.AddData([]byte{'\n'})
}

// long takes a line too long to hold, judged from f.
func (k *keeper) long(f io.ReaderAt, start int64, long *longLine) error {
	if heldDamaged(long) {
		// Held, as a damaged line under the window is, for the records in it: glued ones
		// split, a torn one rejoined (flush).
		line, err := readLine(f, start, long.n)
		if err != nil {
			return err
		}
		return k.damaged(f, line, long.terminated) // judged no record by the long judge already
	}
	if err := k.flush(f); err != nil {
		return err
	}
	if long.blank || long.nul {
		return nil
	}
	ll := long.n
	if long.terminated {
		ll++
	}
	if !long.record {
		// Dropped whole: a record if it starts as one.
		obj, err := longStartsRecord(k.p, f, start, long.n)
		if err != nil {
			return err
		}
		if obj {
			k.fig.Total++
			k.fig.Lost++
		}
		k.fig.LostBytes += ll
		return nil
	}
	k.fig.Total++
	if k.seen != nil {
		key, err := longKey(f, start, long.n)
		if err != nil {
			return err
		}
		if k.seen[key] {
			return nil
		}
		k.seen[key] = true
	}
	if k.gone != nil && long.skel != nil {
		if v, err := jsonv.Parse(long.skel, k.p.Dialect()); err == nil && k.gone(v) {
			return nil
		}
	}
	k.keep(start, long.n, long.terminated)
	return nil
}

// flush repairs the hunk held, as KeepLines repairs its lines, and measures what it loses.
func (k *keeper) flush(f io.ReaderAt) error {
	if k.hunk == nil {
		return nil
	}
	hunk := k.hunk
	k.hunk, k.hunkN = nil, 0
	lines := split(hunk, k.p, false)
	var out []byte
	for i := 0; i < len(lines); i++ {
		l := lines[i]
		if l.Blank {
			continue
		}
		if rec, n := RejoinLines(k.p, lines, i); rec != nil {
			out = k.add(out, rec)
			i += n - 1
			continue
		}
		for _, rec := range SplitLine(k.p, l.Raw) {
			out = k.add(out, rec)
		}
	}
	// A torn last line (the file's) may have its whole version anywhere in the result.
	elsewhere := func(raw []byte) bool {
		if k.tornIn != nil {
			if in, known := k.tornIn(raw); known {
				return in
			}
		}
		cw := &fsio.ContainsWriter{Needle: raw}
		err := k.s.writeTo(cw, f)
		return err == nil && cw.Found
	}
	m := newLossMeter(k.p, out, false)
	m.elsewhere = elsewhere
	for _, l := range lines {
		if !l.Blank {
			m.line(l.Raw, false, l.Terminated, int64(l.End-l.Start), false)
		}
	}
	m.end()
	k.fig.Total += m.total
	k.fig.Lost += m.lost
	k.fig.LostBytes += m.lostBytes
	k.fig.Keep += Records(k.p, out)
	k.s.AddData(out)
	return nil
}

// add appends a record rebuilt from damaged lines to out, unless it repeats one kept (for a
// DuplicateDropper: the first of byte-identical records is kept, wherever it came from).
func (k *keeper) add(out, rec []byte) []byte {
	if k.seen != nil {
		key := lineKey(bytes.TrimRight(rec, "\r"))
		if k.seen[key] {
			return out
		}
		k.seen[key] = true
	}
	return append(append(out, rec...), '\n')
}

// lineKey identifies a record line (without its '\r's) among those a salvage kept.
func lineKey(b []byte) [16]byte {
	h := sha256.Sum256(b)
	return [16]byte(h[:16])
}

// longKey is lineKey of the n-byte line at start of f, read from f.
func longKey(f io.ReaderAt, start, n int64) ([16]byte, error) {
	h, err := longLineHash(f, start, n)
	return [16]byte(h[:16]), err
}

// longStartsRecord is startsRecord of the n-byte line at start of f, its first bytes read
// from f.
func longStartsRecord(p Profile, f io.ReaderAt, start, n int64) (bool, error) {
	var head [4096]byte
	k, err := f.ReadAt(head[:min(int64(len(head)), n)], start)
	if err != nil && err != io.EOF {
		return false, err
	}
	return startsRecord(p, head[:k]), nil
}

// longLineHash is the sha256 of the n-byte line at start of f without its trailing '\r's,
// read from f (a line too long to hold).
func longLineHash(f io.ReaderAt, start, n int64) (key [sha256.Size]byte, err error) {
	keyN, err := TrimmedLen(f, start, n)
	if err != nil {
		return key, err
	}
	h := sha256.New()
	if _, err := io.Copy(h, io.NewSectionReader(f, start, keyN)); err != nil {
		return key, err
	}
	h.Sum(key[:0])
	return key, nil
}
