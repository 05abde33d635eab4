package format

import (
	"bufio"
	"bytes"
	"errors"
	"io"
	"sync"

	"github.com/sessionmedic/sessionmedic/heal/fsio"
	"github.com/sessionmedic/sessionmedic/heal/jsonv"
)

// Streaming validation keeps memory bounded whatever the file's size: a JSONL file is read a
// block at a time into one reused buffer per worker (a line longer than the block is held
// whole up to LineWindow, and a longer one judged from the file, see longline.go); a JSON
// document holds one chunk and its longest number (a string is never held whole).
const (
	StreamBuf = 1 << 20  // the block (or chunk) read at a time
	MaxLine   = 64 << 20 // the longest line a walker without a long-line judge holds, and the longest number or literal
)

// ErrNoStream: the file cannot be judged streaming (a number or literal over MaxLine, a long
// record whose skeleton is too large, a line over MaxLine where nothing judges long ones);
// the caller falls back to reading it whole.
var ErrNoStream = errors.New("cannot be judged streaming")

// Stop, returned by the function a walk calls (EachLine's, SplitAtLong's, EachLineBack's, the
// walkers'), ends the walk early; SplitAtLong and EachLineBack then return no error.
var Stop = errors.New("stop the walk")

// StreamInspect validates an append-only JSONL file record by record (see [StreamLines]),
// reading it in blocks and judging the lines in place (see [readWalker]; one without a record
// checklist on several CPUs, see [plainLines]).
func StreamInspect(path string, p Profile) (Verdict, fsio.Identity, error) {
	v, id, _, err := StreamInspectFront(path, p)
	return v, id, err
}

// StreamInspectFront is [StreamInspect], and what its pass knew when the first damaged line
// stopped it, or at its end when it found the file healthy (an end Front; nil when it has
// nothing to give, see [Front]).
func StreamInspectFront(path string, p Profile) (Verdict, fsio.Identity, *Front, error) {
	f, id, err := fsio.OpenRegular(path)
	if err != nil {
		return Verdict{}, fsio.Identity{}, nil, err
	}
	defer f.Close()
	// What is judged before any record (a skip, an empty file, NULs only, a byte order
	// mark) is judged as Inspect judges it.
	head := make([]byte, min(id.Size, 64<<10))
	if _, err := f.ReadAt(head, 0); err != nil && err != io.EOF {
		return Verdict{}, id, nil, err
	}
	v, done, err := judgeFront(p, File{Path: path}, head, id.Size, func() (bool, error) {
		if !AllNUL(head) {
			return false, nil // (a byte that is not NUL in the head: read no further)
		}
		return AllNULAt(f, 0, id.Size)
	})
	if err != nil {
		return Verdict{}, id, nil, err
	}
	var fr *Front
	if !done {
		v, fr, _ = judgeLinesFrom(p, path, nil, id.Size, true, func(maxHeld int, lj *longJudge) walker { return readWalker(f, id.Size, StreamBuf, maxHeld, lj) })
	}
	if !fsio.StillSame(f, id) {
		return Verdict{}, id, nil, fsio.ErrChanged
	}
	return v, id, fr, nil
}

// StreamLines judges a JSONL file read from r as [Inspect] does (without a last-good copy),
// applying a [RecordChecker]'s checklist record by record. A read error ends the file there.
func StreamLines(r *bufio.Reader, p Profile) Verdict {
	return judgeRecords(p, "", func(fn lineFunc) error {
		return EachLine(r, func(start int64, line []byte, terminated bool) error { return fn(start, line, terminated, nil) })
	})
}

// CheckRecords is the checklist of a profile that is a [SequenceChecker] applied to the lines
// of a file held whole: the same pass, record by record, as a streamed one (the profile's
// CheckLines, so that its checklist is written once).
func CheckRecords(p Profile, f File, lines []Line) Verdict {
	return judgeRecords(p, f.Path, func(fn lineFunc) error {
		for _, l := range lines {
			if err := fn(int64(l.Start), l.Raw, l.Terminated, nil); err != nil {
				return err
			}
		}
		return nil
	})
}

// judgeLines is StreamLines of the n bytes newWalker's walkers walk, of the file at path: a
// profile without a record checklist is judged on several CPUs (plainLines), and with
// records, one whose sequence reads batches (recordBlocks) when the walkers may read at once
// (a file's ReadAt; not a reader that hashes what it is read in order). A line longer than
// LineWindow is judged streaming, never held (its record's skeleton read by the checklist).
func judgeLines(p Profile, path string, n int64, concurrent bool, newWalker func(maxHeld int, lj *longJudge) walker) Verdict {
	v, _, _ := judgeLinesFrom(p, path, nil, n, concurrent, newWalker)
	return v
}

// judgeLinesFrom is judgeLines, and what the pass knew at the first damaged line or, healthy,
// at its end (see [Front]; nil when it stopped for another reason, or the profile has no
// record checklist).
// With from set, the pass goes on from there instead of the file's start: ok is false when
// it could not (a walk on several CPUs that meets a line longer than a worker holds is made
// again on one with a fresh sequence, and from's is spent), and the verdict is then unknown.
func judgeLinesFrom(p Profile, path string, from *passState, n int64, concurrent bool, newWalker func(maxHeld int, lj *longJudge) walker) (v Verdict, fr *Front, ok bool) {
	_, rc := p.(RecordChecker)
	_, sc := p.(SequenceChecker)
	lj := &longJudge{r: rulesOf(p), window: lineWindow, skel: rc || sc}
	if !rc && !sc {
		v, err := plainLines(n, rulesOf(p), func(held int) walker { return newWalker(held, lj) })
		var tl *tooLong
		switch {
		case errors.As(err, &tl):
			return tl.verdict(), nil, true
		case err != nil:
			return OK(), nil, true // a read error ends the file: nothing before it was damaged
		}
		return v, nil, true
	}
	start := from
	if start == nil {
		start = newPass(p, path)
	}
	if workers := parallelRecords(n - start.off); workers > 0 && concurrent {
		if _, ok := start.seq.(BatchSequence); ok {
			if v, fr, ok := recordBlocks(p, *start, n, workers, recordBlock, heldPerWorker, func(held int) walker { return newWalker(held, lj) }); ok {
				return v, fr, true
			}
			if from != nil {
				return Verdict{}, nil, false
			}
			start = newPass(p, path)
		}
	}
	walk := newWalker(MaxLine, lj)
	v, fr = judgeRecordsFrom(p, start, func(fn lineFunc) error { return walk(start.off, n, false, fn) })
	return v, fr, true
}

// judgeRecords is StreamLines of the lines each walks, of the file at path.
func judgeRecords(p Profile, path string, each func(lineFunc) error) Verdict {
	v, _ := judgeRecordsFrom(p, newPass(p, path), each)
	return v
}

// judgeRecordsFrom is judgeRecords of the lines each walks from st on, and what it knew at
// the first damaged line, or at the end of a walk that found every line healthy (an end
// Front); nil when it stopped for another reason.
func judgeRecordsFrom(p Profile, st *passState, each func(lineFunc) error) (Verdict, *Front) {
	d := rulesOf(p)
	rc, _ := p.(RecordChecker)
	seq := st.seq
	if _, self := seq.(RecordSequence); self {
		rc = nil // the sequence applies it
	}
	vs, _ := seq.(ValidSequence)
	next := st.off // where the next line starts
	last, n, records, blanks := st.last, st.lines, st.records, st.blank
	var schema *Verdict // the first checklist problem; syntax damage anywhere is reported first
	var stop Verdict    // the damage that ended the walk
	var front *Front
	err := each(func(off int64, line []byte, terminated bool, long *longLine) error {
		n++
		next = off + int64(len(line)) + 1
		if long != nil {
			next = off + long.n + 1
		}
		body, blank, f := judgeAny(d, off, line, terminated, long)
		switch {
		case blank:
			blanks = true
			return nil
		case f != nil:
			stop = f.verdict(n)
			if schema == nil {
				front = &Front{st: passState{off: off, lines: n - 1, records: records, last: last, blank: blanks, seq: seq}}
			}
			return Stop
		}
		if rc != nil && schema == nil {
			if prob := rc.RecordProblem(body, records == 0); prob != "" {
				v := Damage(KindSchema, off, "line %d: %s", n, prob)
				schema = &v
			}
		}
		if seq != nil && schema == nil {
			if rp, ok := seq.(RecordPlacer); ok {
				rp.RecordAt(off)
			}
			var prob string
			if vs != nil && long == nil {
				prob = vs.RecordValid(body) // judgeLine has just run jsonv.Valid over it
			} else {
				prob = seq.Record(body)
			}
			if prob != "" {
				v := Damage(problemKind(seq), off, "line %d: %s", n, prob)
				schema = &v
			}
		}
		records, last = records+1, off
		return nil
	})
	switch {
	case err == Stop:
		return stop, front
	case errors.Is(err, errTooBig):
		// A record its app loads, too large to judge within the memory bounds: not judged
		// (said), never called damaged.
		what := "members and strings"
		if d.fields != nil {
			what = "members its checks read and their strings" // SkeletonFielder
		}
		return Unjudged("line %d: a record of over %d bytes whose %s of under %d bytes alone are over %d bytes is not judged streaming", n+1, maxHeldRecord, what, skeletonShort, maxSkeleton), nil
	case errors.Is(err, ErrNoStream):
		return (&tooLong{line: n + 1, off: next}).verdict(), nil
	}
	v := endRecords(p, seq, schema, records, last)
	if err == nil && v.Status == Healthy {
		// Every line walked, healthy (not a read error's end): where the walk ended.
		front = &Front{st: passState{off: next, lines: n, records: records, last: last, blank: blanks, seq: seq}, end: true}
	}
	return v, front
}

// problemKind is the kind of the problem seq's last Record returned.
func problemKind(seq Sequence) string {
	if k, ok := seq.(SequenceKind); ok && k.ProblemKind() != "" {
		return k.ProblemKind()
	}
	return KindSchema
}

// endRecords is the verdict of a walk of the records of p that found no syntax fault: the
// first checklist problem (schema, nil for none), else what the end of the sequence (nil for
// none) says, given how many records there were and where the last one starts.
func endRecords(p Profile, seq Sequence, schema *Verdict, records int, last int64) Verdict {
	if schema != nil {
		return *schema
	}
	if records == 0 {
		if rc, ok := p.(RecordChecker); ok {
			return rc.NoRecords()
		}
	}
	v := OK()
	if seq != nil {
		if ej, ok := seq.(EndJudge); ok {
			if d, ok := ej.EndVerdict(); ok {
				return d
			}
		}
		if prob := seq.End(); prob != "" {
			return Damage(KindSchema, last, "%s", prob)
		}
		if w, ok := seq.(SequenceWarner); ok {
			v.Warnings = w.Warnings()
		}
	}
	return v
}

// StreamVerdict judges bytes [off, size) of f as [Inspect] judges them (without a last-good
// copy) for a plain profile. firstEnd is, for JSON, the end of the first complete value
// (relative to off) when the damage is trailing garbage, else -1.
func StreamVerdict(f io.ReaderAt, off, size int64, p Profile) (v Verdict, firstEnd int64, err error) {
	n := size - off
	if n == 0 {
		if p.EmptyIsDamage() {
			return Damage(KindEmpty, 0, "file is empty"), -1, nil
		}
		return OK(), -1, nil
	}
	head := make([]byte, min(n, 3))
	if _, err := f.ReadAt(head, off); err != nil {
		return Verdict{}, -1, err
	}
	if head[0] == 0 {
		all, err := AllNULAt(f, off, n)
		if err != nil {
			return Verdict{}, -1, err
		}
		if all {
			return Damage(KindNULFilled, 0, "file is %d NUL bytes", n), -1, nil
		}
	}
	if bytes.HasPrefix(head, BOM) {
		return Damage(KindBOM, 0, "file starts with a UTF-8 byte order mark"), -1, nil
	}
	sr := io.NewSectionReader(f, off, n)
	if p.JSONL() {
		lj := &longJudge{r: rulesOf(p), window: lineWindow}
		v, err := plainLines(n, rulesOf(p), func(maxHeld int) walker { return readWalker(sr, n, min(StreamBuf, lineWindow), maxHeld, lj) })
		if errors.Is(err, ErrNoStream) {
			err = ErrNoStream
		}
		if err != nil {
			return Verdict{}, -1, err
		}
		return v, -1, nil
	}
	end, err := jsonv.ValidReader(sr, p.Dialect(), StreamBuf, MaxLine)
	if errors.Is(err, jsonv.ErrTokenTooLong) {
		return Verdict{}, -1, ErrNoStream
	}
	var je *jsonv.Error
	if err != nil && !errors.As(err, &je) {
		return Verdict{}, -1, err
	}
	if err == nil {
		return OK(), -1, nil
	}
	if je.Kind == jsonv.ErrTrailing {
		firstEnd = end
	} else {
		firstEnd = -1
	}
	return SyntaxVerdict(err, 0), firstEnd, nil
}

// AllNULAt reports whether the n bytes of f at off are all NUL.
func AllNULAt(f io.ReaderAt, off, n int64) (bool, error) {
	buf := make([]byte, min(n, StreamBuf))
	for pos := int64(0); pos < n; {
		k, err := f.ReadAt(buf[:min(int64(len(buf)), n-pos)], off+pos)
		if k > 0 && !AllNUL(buf[:k]) {
			return false, nil
		}
		pos += int64(k)
		if err != nil && !(err == io.EOF && pos == n) {
			return false, err
		}
	}
	return true, nil
}

// EachLine calls fn for each line of r as jsonv.Lines does (start is the line's offset; the
// '\n' is not part of line). A line longer than MaxLine is ErrNoStream. r is read through a
// buffer of StreamBuf bytes, or its own when it is a *bufio.Reader.
func EachLine(r io.Reader, fn func(start int64, line []byte, terminated bool) error) error {
	br, ok := r.(*bufio.Reader)
	if !ok {
		br = bufio.NewReaderSize(r, StreamBuf)
	}
	var off int64
	var long []byte
	for {
		chunk, err := br.ReadSlice('\n')
		if err == bufio.ErrBufferFull {
			if len(long)+len(chunk) > MaxLine {
				return ErrNoStream
			}
			long = append(long, chunk...)
			continue
		}
		line := chunk
		if long != nil {
			line = append(long, chunk...)
			long = nil
		}
		if len(line) > 0 {
			terminated := line[len(line)-1] == '\n'
			body := line
			if terminated {
				body = line[:len(line)-1]
			}
			if ferr := fn(off, body, terminated); ferr != nil {
				return ferr
			}
			off += int64(len(line))
		}
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return err
		}
	}
}

// EachLineAt is EachLine of r's first size bytes, read through SizedReader.
func EachLineAt(r io.ReaderAt, size int64, fn func(start int64, line []byte, terminated bool) error) error {
	return EachLine(SizedReader(r, size), fn)
}

// SizedReader reads r's first size bytes through a buffer no larger than them (up to
// StreamBuf): a small file is read without a block's allocation.
func SizedReader(r io.ReaderAt, size int64) *bufio.Reader {
	return bufio.NewReaderSize(io.NewSectionReader(r, 0, size), int(min(max(size, 16), StreamBuf)))
}

// AppendedValid: every line of tail, appended to a file of an append-only profile after its
// first record, is a complete record the profile's checklist accepts.
func AppendedValid(p Profile, tail []byte) bool {
	n := int64(len(tail))
	return n == 0 || tail[n-1] == '\n' && appendedLines(p, memWalker(tail), n)
}

// AppendedValidAt is [AppendedValid] of the n bytes of r at off, read streaming: a line is
// held up to LineWindow, a longer one judged from r (its record's skeleton read by the
// checklist), so an append of any size is judged in bounded memory.
func AppendedValidAt(p Profile, r io.ReaderAt, off, n int64) bool {
	return appendedValidAt(p, r, off, n, lineWindow)
}

func appendedValidAt(p Profile, r io.ReaderAt, off, n int64, window int) bool {
	if n == 0 {
		return true
	}
	last := make([]byte, 1)
	if _, err := r.ReadAt(last, off+n-1); err != nil || last[0] != '\n' {
		return false
	}
	_, rc := p.(RecordChecker)
	lj := &longJudge{r: rulesOf(p), window: window, skel: rc}
	return appendedLines(p, readWalker(io.NewSectionReader(r, off, n), n, min(StreamBuf, window), MaxLine, lj), n)
}

// appendedLines: every line walk gives of n appended bytes is blank or a record p's
// checklist accepts appended.
func appendedLines(p Profile, walk walker, n int64) bool {
	_, _, refused := appendedRefusal(p, walk, n, 0)
	return !refused
}

// appendedRefusal is the first line walk gives of n appended bytes (at off in the file) that
// the incremental pass refuses: its fault (nil for a record its checklist refuses) and its
// number among the lines (from 1). refused is false when it accepts every line; a read that
// fails refuses them.
func appendedRefusal(p Profile, walk walker, n, off int64) (fault *lineFault, line int, refused bool) {
	rc, _ := p.(RecordChecker)
	d := rulesOf(p)
	err := walk(0, n, false, func(start int64, l []byte, terminated bool, long *longLine) error {
		line++
		body, blank, f := judgeAny(d, off+start, l, terminated, long)
		switch {
		case blank:
			return nil
		case f != nil:
			fault = f
			return Stop
		case rc != nil && !rc.AppendedOK(body):
			return Stop
		}
		return nil
	})
	return fault, line, err != nil
}

// InspectAt judges the size bytes of r as the content of the file at path, as [Inspect]
// judges them without a last-good copy, reading them in blocks: for a JSONL profile whose
// checklist runs record by record ([SequenceChecker]) or that has none (Plain), on several
// CPUs where the file is large enough (r's ReadAt is called from several goroutines). The
// profile's skip reason is asked of the first bytes only.
func InspectAt(p Profile, path string, r io.ReaderAt, size int64) (Verdict, error) {
	v, _, _, err := inspectAt(p, path, r, size, false, nil)
	return v, err
}

// InspectSum is [InspectAt] that also gives the hex sha256 of the bytes ("" when they are not
// healthy), read beside the judge on a goroutine of its own: r's ReadAt may be called from
// several goroutines at once (a file, a splice of one), and the bytes must not change under
// the pass (the caller checks the file is the version it planned from, after).
func InspectSum(p Profile, path string, r io.ReaderAt, size int64) (Verdict, string, error) {
	v, sum, _, err := inspectAt(p, path, r, size, true, nil)
	return v, sum, err
}

func inspectAt(p Profile, path string, r io.ReaderAt, size int64, sum bool, from *passState) (Verdict, string, *Front, error) {
	var a *AsideHash
	if sum {
		a = HashAside(r, size)
		defer a.Stop()
	}
	v, end, ok, err := judgeAtFrom(p, path, r, size, nil, true, from)
	if err == nil && !ok {
		v, end, _, err = judgeAtFrom(p, path, r, size, nil, true, nil) // from's state spent: from the start
	}
	if !end.End() || end.st.off != size {
		end = nil
	}
	if err != nil || v.Status != Healthy || !sum {
		return v, "", end, err
	}
	s, err := a.Wait()
	if err != nil {
		return Verdict{}, "", nil, err
	}
	return v, s, end, nil
}

// judgeAt is InspectAt; each, when set, is shown every line the walk reads (as the walk's
// lineFunc is). With concurrent, the walk may be made on several CPUs: each is then called
// from several goroutines, in no set order, and may see a line twice (a walk on several
// CPUs that meets a line longer than a worker holds is made again on one).
func judgeAt(p Profile, path string, r io.ReaderAt, size int64, each func(line []byte, long *longLine), concurrent bool) (Verdict, error) {
	v, _, _, err := judgeAtFrom(p, path, r, size, each, concurrent, nil)
	return v, err
}

// judgeAtFrom is judgeAt; with from, the walk of the lines goes on from there (see
// judgeLinesFrom: ok is false when it could not).
func judgeAtFrom(p Profile, path string, r io.ReaderAt, size int64, each func(line []byte, long *longLine), concurrent bool, from *passState) (Verdict, *Front, bool, error) {
	if !StreamJudged(p) {
		return Verdict{}, nil, true, ErrNoStream
	}
	head := make([]byte, min(size, 64<<10))
	if _, err := r.ReadAt(head, 0); err != nil && err != io.EOF {
		return Verdict{}, nil, true, err
	}
	if v, done, err := judgeFront(p, File{Path: path}, head, size, func() (bool, error) { return AllNULAt(r, 0, size) }); done || err != nil {
		return v, nil, true, err
	}
	// A read error would end the walk as the end of the file: it is the caller's instead.
	var mu sync.Mutex
	var rerr error
	v, fr, ok := judgeLinesFrom(p, path, from, size, concurrent, func(maxHeld int, lj *longJudge) walker {
		w := readWalker(r, size, StreamBuf, maxHeld, lj)
		return func(from, limit int64, skip bool, fn lineFunc) error {
			if each != nil {
				judge := fn
				fn = func(start int64, line []byte, terminated bool, long *longLine) error {
					each(line, long)
					return judge(start, line, terminated, long)
				}
			}
			err := w(from, limit, skip, fn)
			var tl *tooLong
			if err != nil && err != Stop && !errors.Is(err, ErrNoStream) && !errors.As(err, &tl) {
				mu.Lock()
				rerr = err
				mu.Unlock()
			}
			return err
		}
	})
	if rerr != nil {
		return Verdict{}, nil, true, rerr
	}
	return v, fr, ok, nil
}

// StreamJudged: p's verdict on a file can be reached streaming, the same as on the file held
// whole — a JSONL profile whose checklist has nothing beyond syntax (Plain), or runs record
// by record ([SequenceChecker]).
func StreamJudged(p Profile) bool {
	if !p.JSONL() {
		return false
	}
	_, seq := p.(SequenceChecker)
	return p.Plain() || seq
}
