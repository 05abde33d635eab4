package format

import (
	"bytes"
	"errors"
	"io"
	"sync"
	"sync/atomic"

	"github.com/sessionmedic/sessionmedic/heal/fsio"
	"github.com/sessionmedic/sessionmedic/heal/jsonv"
	"github.com/sessionmedic/sessionmedic/internal/panics"
)

// DocChecker is a JSON-document Profile with a checklist. The checklist is written for one
// streamed pass over the document ([jsonv.Walk]): it reads a few members the pass builds and
// each element of one container (the history) as the pass hands it over, so that a document
// is judged the same, with the same code, whether it is held whole or read from a file of any
// size. The document's rewriting abilities ([Reconciler], [EntryDropper], [FieldRestorer])
// are asked of bytes that parse only: given bytes that do not, they return nil.
type DocChecker interface {
	// DocShape says what the checklist reads: the container it takes element by element and
	// the members it needs whole.
	DocShape() jsonv.Shape
	// NewDocCheck starts a pass over the document of f.
	NewDocCheck(f File) DocCheck
}

// DocCheck is one pass of a document's checklist.
type DocCheck interface {
	// Elem is the next element of the shape's container (of every occurrence of it, when a
	// member name on its path is duplicated: the checklist answers for the one the app reads).
	// e.Val and every node under it are the pass's until Elem returns: the next element is
	// built in the same nodes ([jsonv.Arena.Walk]), so a checklist keeps what it learns of
	// them (offsets, counts, its own values, strings, which are copied out) and never a
	// *jsonv.Value of e.Val's tree. e.In is the root's, and may be kept.
	Elem(e jsonv.Elem)
	// End is the verdict once the whole document was walked; root is built as the shape says.
	End(root *jsonv.Value, info jsonv.WalkInfo) Verdict
	// Records, asked after End, counts the history the document holds (messages, sessions),
	// for choosing between repair plans and measuring loss.
	Records() int
}

// checkDoc applies p's checklist to the valid document of size bytes r holds; records is 0
// when it is not an object.
func checkDoc(p Profile, f File, r io.ReaderAt, size int64) (v Verdict, records int, err error) {
	v, records, _, err = checkDocWith(p, f, func(a *jsonv.Arena, s jsonv.Shape, elem func(jsonv.Elem)) (*jsonv.Value, jsonv.WalkInfo, error) {
		return a.Walk(r, size, p.Dialect(), s, elem)
	})
	return v, records, err
}

// checkDocFirst is checkDoc of the document's first value, whatever follows it
// (jsonv.Arena.WalkFirst): its verdict and records are those of the value's bytes alone,
// which end at trailing when bytes that are not whitespace follow them (else -1).
func checkDocFirst(p Profile, f File, r io.ReaderAt, size int64) (v Verdict, records int, trailing int64, err error) {
	return checkDocWith(p, f, func(a *jsonv.Arena, s jsonv.Shape, elem func(jsonv.Elem)) (*jsonv.Value, jsonv.WalkInfo, error) {
		return a.WalkFirst(r, size, p.Dialect(), s, elem)
	})
}

// checkDocValid is checkDoc of data held whole that has passed jsonv.Valid with p's dialect:
// it is walked in place and not validated again (jsonv.Arena.WalkValid).
func checkDocValid(p Profile, f File, data []byte) (v Verdict, records int, err error) {
	v, records, _, err = checkDocWith(p, f, func(a *jsonv.Arena, s jsonv.Shape, elem func(jsonv.Elem)) (*jsonv.Value, jsonv.WalkInfo, error) {
		return a.WalkValid(data, p.Dialect(), s, elem)
	})
	return v, records, err
}

// docArenas hold the nodes the passes build the history's elements in, from one element to
// the next and one document to the next: a check of many small documents allocates for
// none of their elements.
var docArenas = sync.Pool{New: func() any { return new(jsonv.Arena) }}

// docArenaKeep: an arena that grew over this many bytes (a document with a huge element) is
// left to the collector rather than kept for the next pass.
const docArenaKeep = 1 << 20

// checkDocWith is checkDoc with the pass walk makes, which builds each element in the arena
// it is given.
func checkDocWith(p Profile, f File, walk func(*jsonv.Arena, jsonv.Shape, func(jsonv.Elem)) (*jsonv.Value, jsonv.WalkInfo, error)) (v Verdict, records int, trailing int64, err error) {
	trailing = -1
	dc, ok := p.(DocChecker)
	if !ok || p.Plain() {
		return OK(), 1, trailing, nil
	}
	c := dc.NewDocCheck(f)
	a := docArenas.Get().(*jsonv.Arena)
	root, info, err := walk(a, dc.DocShape(), c.Elem)
	if a.Held() <= docArenaKeep {
		docArenas.Put(a)
	}
	if errors.Is(err, jsonv.ErrTooLarge) {
		return Unjudged("not judged: one value's members and short strings alone are over %d bytes, or the objects around its history hold over %d members", jsonv.WalkLimit, jsonv.WalkMembers), 0, trailing, nil
	}
	if err != nil {
		return Verdict{}, 0, trailing, err
	}
	if info.Trailing {
		trailing = info.End
	}
	v = c.End(root, info)
	if root.Type == jsonv.Object {
		records = c.Records()
	}
	return v, records, trailing, nil
}

// InspectDocAt judges the size bytes of r as the JSON document at path, as [Inspect] judges
// them held whole, streaming: memory stays bounded whatever the size. ErrNoStream: a token
// is too long to be validated streaming.
func InspectDocAt(p Profile, path string, r io.ReaderAt, size int64) (Verdict, error) {
	v, _, err := JudgeDocAt(p, path, r, size)
	return v, err
}

// DocJudgement is what a streamed pass over a document found besides its verdict.
type DocJudgement struct {
	// FirstEnd is the end of the document's first value when trailing bytes follow it
	// (the verdict is then trailing garbage), else -1.
	FirstEnd int64
	// Records counts the history of a document that parses (0 for one that does not).
	Records int
	// First, of a document whose first value trailing bytes follow, judged by a pass that
	// was asked for it ([JudgeDocFirstAt]): that value's verdict and records, as
	// [JudgeValidDocAt] of its bytes gives them; nil when not known.
	First *DocFirst
}

// DocFirst is the verdict and the records of a document's first value, judged alone.
type DocFirst struct {
	Verdict Verdict
	Records int
}

// JudgeDocAt is [InspectDocAt], with what the pass found besides the verdict.
func JudgeDocAt(p Profile, path string, r io.ReaderAt, size int64) (Verdict, DocJudgement, error) {
	return judgeDocAt(p, path, r, size, false, false, nil)
}

// JudgeDocFirstAt is [JudgeDocAt] that, of a document whose first value trailing bytes
// follow, also judges that value alone (DocJudgement.First): the checklist's walk beside
// the syntax pass goes on to the value's end instead of being stopped once the syntax pass
// finds the trailing bytes. onTrailing, when set, is called then, with the value's end,
// while the walk goes on (a heal starts the sums its plan needs).
func JudgeDocFirstAt(p Profile, path string, r io.ReaderAt, size int64, onTrailing func(end int64)) (Verdict, DocJudgement, error) {
	return judgeDocAt(p, path, r, size, false, true, onTrailing)
}

// JudgeValidDocAt is JudgeDocAt of bytes a syntax pass has found one valid value (a
// document's first value, before trailing bytes): its checklist's walk alone judges them,
// with no syntax pass beside it.
func JudgeValidDocAt(p Profile, path string, r io.ReaderAt, size int64) (Verdict, DocJudgement, error) {
	return judgeDocAt(p, path, r, size, true, false, nil)
}

func judgeDocAt(p Profile, path string, r io.ReaderAt, size int64, valid, first bool, onTrailing func(int64)) (Verdict, DocJudgement, error) {
	j := DocJudgement{FirstEnd: -1}
	head := make([]byte, min(size, 64<<10))
	if _, err := r.ReadAt(head, 0); err != nil && err != io.EOF {
		return Verdict{}, j, err
	}
	f := File{Path: path}
	if v, done, err := judgeFront(p, f, head, size, func() (bool, error) { return AllNULAt(r, 0, size) }); done || err != nil {
		return v, j, err
	}
	if _, ok := p.(DocChecker); ok && !p.Plain() && valid {
		v, n, err := checkDoc(p, f, r, size)
		j.Records = n
		return v, j, err
	}
	// The checklist's walk reads the document beside the syntax pass, each on a core of its
	// own; its verdict counts once the syntax pass has accepted the document (a walk is for
	// a valid document: on any other it returns, and is stopped as soon as that is known).
	type walked struct {
		v   Verdict
		n   int
		end int64 // the first value's end, when trailing bytes follow it (else -1)
		err error
	}
	var stop atomic.Bool
	var walk chan walked
	var caught panics.Slot // the walk's panic, raised again where it is waited for
	if _, ok := p.(DocChecker); ok && !p.Plain() {
		walk = make(chan walked, 1)
		go func() {
			var w walked
			defer func() { walk <- w }()
			defer caught.Capture()
			w.v, w.n, w.end, w.err = checkDocFirst(p, f, stoppable{r, &stop}, size)
		}()
	}
	// A document shorter than a block is read in one block of its size (and one more read,
	// which finds its end).
	end, err := jsonv.ValidReader(io.NewSectionReader(r, 0, size), p.Dialect(), int(min(StreamBuf, size+1)), MaxLine)
	var je *jsonv.Error
	switch {
	case err != nil && walk != nil && first && errors.As(err, &je) && je.Kind == jsonv.ErrTrailing:
		// The walk goes on to the first value's end: the value's own verdict.
		if onTrailing != nil {
			onTrailing(end)
		}
		w := <-walk
		caught.Rethrow()
		if w.err == nil && w.end == end {
			fv, fn, err := firstValue(p, f, r, end, w.v, w.n)
			if err != nil {
				return Verdict{}, j, err
			}
			j.First = &DocFirst{Verdict: fv, Records: fn}
		}
	case err != nil && walk != nil:
		stop.Store(true)
		<-walk
		caught.Rethrow()
	}
	if errors.Is(err, jsonv.ErrTokenTooLong) {
		return Verdict{}, j, ErrNoStream
	}
	if errors.As(err, &je) {
		if je.Kind == jsonv.ErrTrailing {
			j.FirstEnd = end
		}
		return SyntaxVerdict(err, 0), j, nil
	}
	if err != nil {
		return Verdict{}, j, err
	}
	if walk == nil {
		v, n, err := checkDoc(p, f, r, size) // no checklist: its answer at once
		j.Records = n
		return v, j, err
	}
	w := <-walk
	caught.Rethrow()
	j.Records = w.n
	return w.v, j, w.err
}

// firstValue is JudgeValidDocAt of the first end bytes of r, a value whose checklist's walk
// gave v and n: what is judged of a file before its records is judged again of the value's
// own first bytes (they are the file's; a profile's skip reason is asked of them).
func firstValue(p Profile, f File, r io.ReaderAt, end int64, v Verdict, n int) (Verdict, int, error) {
	head := make([]byte, min(end, 64<<10))
	if _, err := r.ReadAt(head, 0); err != nil && err != io.EOF {
		return Verdict{}, 0, err
	}
	if fv, done, err := judgeFront(p, f, head, end, func() (bool, error) { return AllNULAt(r, 0, end) }); done || err != nil {
		return fv, 0, err
	}
	return v, n, nil
}

// stoppable reads r until stop is set, and then fails every read: a pass that reads
// through it ends at its next read.
type stoppable struct {
	r    io.ReaderAt
	stop *atomic.Bool
}

var errStopped = errors.New("stopped")

func (s stoppable) ReadAt(p []byte, off int64) (int, error) {
	if s.stop.Load() {
		return 0, errStopped
	}
	return s.r.ReadAt(p, off)
}

// IsDocument: p is an app's JSON document with a checklist ([DocChecker]), judged and
// planned streaming at any size.
func IsDocument(p Profile) bool {
	_, ok := p.(DocChecker)
	return ok && !p.JSONL() && !p.Plain()
}

// A document's rewriting repairs (reconcile, drop-invalid-entries, restore-fields) keep most
// of its bytes: each is said as a [Splice] of the original, read from r, so that one code
// serves a document held whole (its bytes through a bytes.Reader) and one of any size read
// from its file. A nil splice: nothing to do. Each is asked of a document that parses only.

// SpliceReconciler is a [Reconciler] of a document whose repair is a splice of it.
type SpliceReconciler interface {
	ReconcileSplice(path string, r io.ReaderAt, size int64, kind string) (*Splice, error)
}

// SpliceDropper is an [EntryDropper] of a document whose repair is a splice of it.
type SpliceDropper interface {
	DropInvalidSplice(r io.ReaderAt, size int64) (*Splice, error)
}

// SpliceRestorer is a [FieldRestorer] of a document whose repair is a splice of it.
type SpliceRestorer interface {
	RestoreFieldsSplice(path string, r io.ReaderAt, size int64, lastGood []byte) (*Splice, error)
}

// SpliceBytes is the result of a splice of data made by make (nil when it is nil or fails):
// a splice-made repair asked of bytes held whole.
func SpliceBytes(data []byte, make func(r io.ReaderAt, size int64) (*Splice, error)) []byte {
	r := bytes.NewReader(data)
	s, err := make(r, int64(len(data)))
	if err != nil || s == nil {
		return nil
	}
	out, err := s.Bytes(r)
	if err != nil {
		return nil
	}
	return out
}

// DocLostBytes is what a repair (new, of nsize bytes) drops of a document (old, of osize
// bytes), read streaming: the bytes of old between the prefix and the suffix the two share
// (docLostBytes of the two held whole).
func DocLostBytes(old io.ReaderAt, osize int64, new io.ReaderAt, nsize int64) (int64, error) {
	pre, suf, err := CommonEnds(old, osize, new, nsize)
	return max(osize-pre-suf, 0), err
}

// CommonEnds measures, reading both streaming, the prefix a and b (of asize and bsize bytes)
// share, and the suffix they share within what that prefix leaves of each.
func CommonEnds(a io.ReaderAt, asize int64, b io.ReaderAt, bsize int64) (pre, suf int64, err error) {
	const chunk = 64 << 10
	x, y := make([]byte, chunk), make([]byte, chunk)
	for pre < asize && pre < bsize {
		n := min(chunk, asize-pre, bsize-pre)
		if _, err := a.ReadAt(x[:n], pre); err != nil && err != io.EOF {
			return 0, 0, err
		}
		if _, err := b.ReadAt(y[:n], pre); err != nil && err != io.EOF {
			return 0, 0, err
		}
		k := int64(fsio.CommonPrefix(x[:n], y[:n]))
		pre += k
		if k < n {
			break
		}
	}
	for suf < asize-pre && suf < bsize-pre {
		n := min(chunk, asize-pre-suf, bsize-pre-suf)
		if _, err := a.ReadAt(x[:n], asize-suf-n); err != nil && err != io.EOF {
			return 0, 0, err
		}
		if _, err := b.ReadAt(y[:n], bsize-suf-n); err != nil && err != io.EOF {
			return 0, 0, err
		}
		k := int64(0)
		for k < n && x[n-1-k] == y[n-1-k] {
			k++
		}
		suf += k
		if k < n {
			break
		}
	}
	return pre, suf, nil
}
