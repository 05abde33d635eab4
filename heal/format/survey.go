package format

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"hash"
	"io"

	"github.com/sessionmedic/sessionmedic/heal/fsio"
	"github.com/sessionmedic/sessionmedic/heal/jsonv"
)

// SurveyOptions says what else a [Survey] measures.
type SurveyOptions struct {
	// FirstValueEnd, when over 0, is the end of a JSON document's first value (the document
	// has trailing garbage): its bytes [0, FirstValueEnd) are hashed (not asked of JSONL).
	FirstValueEnd int64
	// BOMLess: the file's bytes past its 3-byte byte order mark are hashed.
	BOMLess bool
	// Unchanged, when set, is asked after the pass over the file and before it is read
	// again: false ends the survey with [fsio.ErrChanged].
	Unchanged func() bool
	// OwnSalvage: the caller plans the salvage itself (an app's, [PlanKeep]): the valid
	// lines' hash and the search for a torn last line's whole version in them are not made,
	// and the result's SalvSHA is empty.
	OwnSalvage bool
	// Gone, when set, says a record is kept elsewhere (a [Superseder]'s): a candidate that
	// lacks it loses nothing, as [Loss] counts.
	Gone func(rec *jsonv.Value) bool
	// OldSHA, when set, is the original's hex sha256, already known (a pass that planned
	// the salvage made it): the result's, not computed again.
	OldSHA string
}

// SurveyCand is a candidate replacement held in memory (a backup, the last-good copy),
// measured against the original by [Survey].
type SurveyCand struct {
	Data []byte
	// File, when Data is nil, holds a JSONL candidate instead, Size bytes of it, measured
	// from it without holding it (Survey's error is errors.Is ErrHoldCandidate when it
	// cannot be: the caller holds it then).
	File io.ReaderAt
	Size int64
	// Filled by Survey:
	PrefixN   int64 // how much of Data the original starts with
	SuffixN   int64 // JSON: how much of Data past PrefixN the original ends with
	Lost      int   // JSONL: the original's records Data does not hold
	LostBytes int64 // ... and their bytes, each with its '\n'
}

// ErrHoldCandidate: a candidate given by its file (SurveyCand.File) could not be measured
// from it (a line over the line window, too many searches of its bytes, a read that
// failed): the caller measures it held.
var ErrHoldCandidate = errors.New("the candidate is measured held whole")

// holdErr is err said as ErrHoldCandidate (err kept in the chain).
func holdErr(err error) error {
	if errors.Is(err, errHoldRepair) {
		return ErrHoldCandidate
	}
	return fmt.Errorf("%w: %w", ErrHoldCandidate, err)
}

// SurveyResult is what one pass over an original gives for planning its repair.
type SurveyResult struct {
	OldSHA string // hex sha256 of the original

	// JSONL: the original's records (non-blank lines), and its salvage (each valid record
	// line ended by '\n'): the lines it keeps, the records and bytes it loses, its size,
	// whether the original starts with it, and its hex sha256.
	Total         int
	SalvKeep      int
	SalvLost      int
	SalvLostBytes int64
	SalvSize      int64
	SalvPrefix    bool
	SalvSHA       string
	Line1Blank    bool // JSONL: line 1 is blank past a 3-byte byte order mark

	// BOMLess: the hash of the bytes past the byte order mark, and their first byte.
	NormSHA   string
	NormFirst fsio.FirstNonWS
	// FirstValueEnd > 0 (JSON): the hash of the first value's bytes, and their first byte.
	ValueSHA   string
	ValueFirst fsio.FirstNonWS
}

// Survey reads the original (size bytes of f) once and measures what the repair plans of a
// file of profile p need: its hash, for JSONL the salvage's figures and each candidate's
// loss, and the hashes opt asks for. A line over LineWindow is walked from f, never held,
// but a damaged one up to hunkBudget, which the salvage holds too (heldDamaged) and which
// is measured as a line under the window is; a number over [MaxLine] is [ErrNoStream].
func Survey(f io.ReaderAt, size int64, p Profile, opt SurveyOptions, cands []*SurveyCand) (SurveyResult, error) {
	var res SurveyResult
	// Each candidate's loss, measured line by line; its long lines (that a long line of the
	// original may be) also by hash, as a long line of the original is never held.
	meters := make([]*lossMeter, len(cands))
	prefix := make([]*fsio.PrefixMatch, len(cands))
	var ws []io.Writer
	var oldSum, valueSum func() string
	firstValue := !p.JSONL() && opt.FirstValueEnd > 0
	if opt.OldSHA == "" {
		// The original's hash, which takes a JSON document's first value's sum on its way.
		mh := fsio.NewMarkHash(max(opt.FirstValueEnd, 0))
		ws, oldSum = append(ws, mh), mh.Sum
		if firstValue {
			valueSum = mh.MarkSum
		}
	} else if firstValue {
		vh := fsio.NewRangeHash(0, opt.FirstValueEnd)
		ws, valueSum = append(ws, vh), vh.Sum
	}
	for i, c := range cands {
		prefix[i] = &fsio.PrefixMatch{Data: c.Data}
		if c.Data == nil && c.File != nil {
			if !p.JSONL() {
				return SurveyResult{}, ErrHoldCandidate
			}
			prefix[i].At, prefix[i].Size = c.File, c.Size
			m, err := newFileLossMeter(p, c.File, c.Size, true)
			if err != nil {
				return SurveyResult{}, holdErr(err)
			}
			meters[i] = m
		} else if p.JSONL() {
			meters[i] = newLossMeter(p, c.Data, true)
		}
		ws = append(ws, prefix[i])
	}
	normH := fsio.NewRangeHash(3, size)
	normFirst := &fsio.FirstNonWS{From: 3}
	if opt.BOMLess {
		ws = append(ws, normH, normFirst)
	}
	valueFirst := &fsio.FirstNonWS{}
	if firstValue {
		ws = append(ws, valueFirst)
	}
	// JSONL: the salvage's lines, and each line's fate in every candidate.
	var (
		droppedBefore bool
		torn          []byte // an unterminated invalid last line
		tornLen       int64
		tornN         int
		salvLines     hash.Hash // nil: not hashed (OwnSalvage)
	)
	if !opt.OwnSalvage {
		salvLines = sha256.New()
	}
	res.SalvPrefix = true
	var err error
	// One read of the original feeds every writer in order (teeAt), however the walk reads.
	ta := &teeAt{r: io.NewSectionReader(f, 0, size), w: io.MultiWriter(ws...)}
	if p.JSONL() {
		// A line longer than LineWindow is judged from the file, never held: its bytes are
		// hashed from the file, and it is compared with the candidates' long lines by hash.
		lj := &longJudge{r: rulesOf(p), window: lineWindow}
		walk := readWalker(ta, size, min(StreamBuf, lineWindow), MaxLine, lj)
		err = walk(0, size, false, func(start int64, line []byte, terminated bool, long *longLine) error {
			held := false // a damaged line over the window, judged no record already
			if long != nil && heldDamaged(long) {
				// A damaged line up to hunkBudget is held, as the salvage holds it to split
				// and rejoin its records (keeper.long): measured as a line under the window.
				var err error
				if line, err = readLine(f, start, long.n); err != nil {
					return err
				}
				long, held = nil, true
			}
			if long != nil {
				return surveyLong(p, &res, f, start, long, meters, salvLines, &droppedBefore)
			}
			ll := int64(len(line))
			if terminated {
				ll++
			}
			if start == 0 && len(line) >= 3 {
				res.Line1Blank = blankLine(line[3:])
			}
			valid := !held && ValidRecord(p, line)
			if valid {
				res.SalvKeep++
				res.SalvSize += int64(len(line)) + 1
				if salvLines != nil {
					salvLines.Write(line)
					salvLines.Write([]byte{'\n'})
				}
				if droppedBefore || !terminated {
					res.SalvPrefix = false
				}
			} else {
				droppedBefore = true
			}
			body := bytes.TrimSuffix(line, []byte("\r"))
			if len(bytes.TrimSpace(body)) == 0 {
				return nil
			}
			gone := false
			if opt.Gone != nil && valid && len(meters) > 0 {
				if v, err := jsonv.Parse(body, p.Dialect()); err == nil {
					gone = opt.Gone(v)
				}
			}
			for _, m := range meters {
				m.line(line, valid, terminated, ll, gone)
			}
			if NULRun(line) {
				return nil // no record, no history (as Loss counts)
			}
			if valid {
				res.Total++
				return nil
			}
			n := heldRecords(p, line)
			res.Total += n
			res.SalvLost += n
			res.SalvLostBytes += ll
			if !terminated {
				torn, tornLen, tornN = bytes.Clone(line), ll, n
			}
			return nil
		})
		if err == nil {
			err = ta.through(size)
		}
	} else {
		err = ta.through(size)
	}
	if err != nil {
		return SurveyResult{}, err
	}
	if opt.Unchanged != nil && !opt.Unchanged() {
		return SurveyResult{}, fsio.ErrChanged
	}
	res.OldSHA = opt.OldSHA
	if oldSum != nil {
		res.OldSHA = oldSum()
	}
	// A torn last record whose whole version the salvage holds is not lost.
	if torn != nil && res.SalvKeep > 0 && !opt.OwnSalvage {
		cw := &fsio.ContainsWriter{Needle: torn}
		if _, err := (ValidLines{Profile: p, Size: size}).WriteOut(cw, f); err != nil {
			return SurveyResult{}, err
		}
		if cw.Found {
			res.SalvLost -= tornN
			res.SalvLostBytes -= tornLen
		}
	}
	for i, c := range cands {
		c.PrefixN = prefix[i].N
		if prefix[i].Err != nil {
			return SurveyResult{}, holdErr(prefix[i].Err)
		}
		if !p.JSONL() {
			if c.SuffixN, err = commonSuffix(f, size, c.Data, c.PrefixN); err != nil {
				return SurveyResult{}, err
			}
		}
		if m := meters[i]; m != nil {
			m.end()
			if m.err != nil {
				return SurveyResult{}, holdErr(m.err)
			}
			c.Lost, c.LostBytes = m.lost, m.lostBytes
		}
	}
	if salvLines != nil {
		res.SalvSHA = hex.EncodeToString(salvLines.Sum(nil))
	}
	if opt.BOMLess {
		res.NormSHA, res.NormFirst = normH.Sum(), *normFirst
	}
	if valueSum != nil {
		res.ValueSHA, res.ValueFirst = valueSum(), *valueFirst
	}
	return res, nil
}

// commonSuffix is how many bytes the original (size bytes of f) and data share at their
// ends, neither reaching into the first from bytes they share at the start (as a JSON
// repair's loss is measured).
func commonSuffix(f io.ReaderAt, size int64, data []byte, from int64) (int64, error) {
	limit := min(size, int64(len(data))) - from
	var buf [4096]byte
	var n int64
	for n < limit {
		k := min(int64(len(buf)), limit-n)
		b := buf[:k]
		if _, err := f.ReadAt(b, size-n-k); err != nil && err != io.EOF {
			return 0, err
		}
		for i := k - 1; i >= 0; i-- {
			if b[i] != data[int64(len(data))-n-k+i] {
				return n + (k - 1 - i), nil
			}
		}
		n += k
	}
	return n, nil
}

// JSONRecords is [Records] for a valid generic JSON document whose first byte is known.
func JSONRecords(f fsio.FirstNonWS) int {
	if f.Found && f.C == '{' {
		return 1
	}
	return 0
}

// surveyLong is Survey's measure of a line too long to hold (judged streaming: a valid one,
// or a damaged one over hunkBudget): its bytes are read again from f for the salvage's hash
// and its key's; a torn one is counted lost (its whole version is not searched for in the
// salvage, nor in the candidates).
func surveyLong(p Profile, res *SurveyResult, f io.ReaderAt, start int64, long *longLine, meters []*lossMeter, salvLines hash.Hash, droppedBefore *bool) error {
	ll := long.n
	if long.terminated {
		ll++
	}
	if start == 0 && long.n >= 3 {
		first, err := firstNonSpace(io.NewSectionReader(f, 3, max(long.body, 3)-3), 64<<10)
		if err != nil {
			return err
		}
		res.Line1Blank = first < 0
	}
	if long.record {
		res.SalvKeep++
		res.SalvSize += long.n + 1
		if salvLines != nil {
			if _, err := io.Copy(salvLines, io.NewSectionReader(f, start, long.n)); err != nil {
				return err
			}
			salvLines.Write([]byte{'\n'})
		}
		if *droppedBefore || !long.terminated {
			res.SalvPrefix = false
		}
	} else {
		*droppedBefore = true
	}
	if long.blank {
		return nil
	}
	if long.nul {
		return nil
	}
	// A damaged line counts one record if it starts as an object does (as heldRecords
	// counts a line held, but for the records glued in it).
	obj, err := longStartsRecord(p, f, start, long.n)
	if err != nil {
		return err
	}
	if long.record || obj {
		res.Total++
	}
	if !long.record {
		if obj {
			res.SalvLost++
		}
		res.SalvLostBytes += ll
	}
	if len(meters) == 0 {
		return nil
	}
	key, err := longLineHash(f, start, long.n)
	if err != nil {
		return err
	}
	for _, m := range meters {
		m.longLine(key, long.record, obj, ll)
	}
	return nil
}

// teeAt is a ReaderAt that writes every byte of r to w once, in order, as reads reach it
// (a read past what was written first writes the gap); through writes the rest up to n.
type teeAt struct {
	r    io.ReaderAt
	w    io.Writer
	done int64 // bytes written to w
	err  error
}

func (t *teeAt) ReadAt(p []byte, off int64) (int, error) {
	if off > t.done {
		if err := t.through(off); err != nil {
			return 0, err
		}
	}
	k, err := t.r.ReadAt(p, off)
	if end := off + int64(k); end > t.done && t.err == nil {
		if _, werr := t.w.Write(p[t.done-off : k]); werr != nil {
			t.err = werr
		}
		t.done = end
	}
	if t.err != nil {
		return k, t.err
	}
	return k, err
}

// through writes to w the bytes of r up to n not written yet.
func (t *teeAt) through(n int64) error {
	if t.err != nil {
		return t.err
	}
	if n > t.done {
		k, err := io.CopyBuffer(t.w, io.NewSectionReader(t.r, t.done, n-t.done), make([]byte, min(n-t.done, StreamBuf)))
		t.done += k
		if err != nil {
			t.err = err
		}
	}
	return t.err
}
