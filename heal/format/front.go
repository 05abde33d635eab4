package format

import "io"

// A salvage keeps the lines before a log's first damaged line as they are (they are records,
// and a record the app would load is never dropped), so the pass that found that line has
// already judged them: its checklist's state there is the state a judge of the salvage's
// result reaches at the same bytes. The pass leaves it as a Front, and the planner walks the
// damaged line and what follows only: the salvage's walk (PlanKeepAfter) and the judge of
// its result (InspectAfter) go on from it.

// passState is where a pass over a log's records stands at the start of a line: at off, the
// lines before it (a blank one among them when blank), the records among them and where the
// last of them starts, and its checklist's sequence, which has been given those records (nil:
// the profile has none).
type passState struct {
	off            int64
	lines, records int
	last           int64
	blank          bool
	seq            Sequence
}

// newPass is a pass from the start of the file at path.
func newPass(p Profile, path string) *passState {
	st := &passState{}
	if sc, ok := p.(SequenceChecker); ok {
		st.seq = sc.NewSequence(path)
	}
	return st
}

// Front is what a pass over a log with a record checklist knew when its first damaged line
// (a syntax fault: a line that is not a record) stopped it, every record before that line
// accepted by the checklist: where the line starts, and the checklist's state over the lines
// before it. Its sequence is given one judge's records only: a Front goes on once, and only
// for the version of the file its pass read.
//
// A pass that judged every record healthy to its end leaves an end Front there (End): the
// state a judge of bytes appended to the same ones goes on from.
type Front struct {
	st    passState
	spent bool
	end   bool // the pass's end, every line before it healthy; not a damaged line
}

// End: fr is where a healthy pass ended, not a damaged line.
func (fr *Front) End() bool { return fr != nil && fr.end }

// Off is where the first damaged line starts (of an end Front, where the pass ended).
func (fr *Front) Off() int64 { return fr.st.off }

// resume is the state a judge of keep's result goes on from: nil when there is none (no
// front, one spent, a result that does not start with the bytes before the damaged line).
func (fr *Front) resume(keep *Splice) *passState {
	if fr == nil || fr.spent || fr.st.off <= 0 || !keep.KeepsFirst(fr.st.off) {
		return nil
	}
	fr.spent = true
	st := fr.st
	return &st
}

// InspectAfter is [InspectAt] of the result of keep, a salvage of f planned from the version
// of the file fr's pass judged: where the result starts with the bytes before fr's damaged
// line, its records are judged from that line on, the checklist going on from fr's state. It
// is InspectAt otherwise, and where the walk from there could not be made.
func InspectAfter(fr *Front, p Profile, path string, f io.ReaderAt, keep *Splice) (Verdict, error) {
	v, _, _, err := inspectAt(p, path, keep.At(f), keep.Size(), false, fr.resume(keep))
	return v, err
}

// InspectEndAfter is InspectAfter, with the end Front its judge left at the result's end when
// it was healthy (nil when not, or not known).
func InspectEndAfter(fr *Front, p Profile, path string, f io.ReaderAt, keep *Splice) (Verdict, *Front, error) {
	v, _, end, err := inspectAt(p, path, keep.At(f), keep.Size(), false, fr.resume(keep))
	return v, end, err
}

// InspectSumAfter is [InspectSum] of the result of keep as InspectAfter judges it.
func InspectSumAfter(fr *Front, p Profile, path string, f io.ReaderAt, keep *Splice) (Verdict, string, error) {
	v, sum, _, err := inspectAt(p, path, keep.At(f), keep.Size(), true, fr.resume(keep))
	return v, sum, err
}

// PlanKeepAfter is [PlanKeep] of the version of the file fr's pass judged, walking it from
// fr's damaged line on where the lines before it are all records (none blank) and the
// profile's salvage keeps every record as it is (it drops none as superseded or repeated):
// those lines are kept as they are, as a walk of them would keep them. PlanKeep otherwise.
func PlanKeepAfter(fr *Front, p Profile, path string, f io.ReaderAt, size int64) (*Splice, KeepFigures, error) {
	if fr == nil || fr.end || fr.st.blank || fr.st.off <= 0 || fr.st.off > size || !keepsAsIs(p) {
		return PlanKeep(p, path, f, size)
	}
	return keepFrom(keeperAfter(p, path, fr.st.off, fr.st.records), f, keepWalker(p, f, size), size)
}
