package format

import (
	"errors"
	"io"

	"github.com/sessionmedic/sessionmedic/heal/jsonv"
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
	dc, ok := p.(DocChecker)
	if !ok || p.Plain() {
		return OK(), 1, nil
	}
	c := dc.NewDocCheck(f)
	root, info, err := jsonv.Walk(r, size, p.Dialect(), dc.DocShape(), c.Elem)
	if errors.Is(err, jsonv.ErrTooLarge) {
		return Skip("holds one value whose members and short strings alone are over %d bytes: not judged", jsonv.WalkLimit), 0, nil
	}
	if err != nil {
		return Verdict{}, 0, err
	}
	v = c.End(root, info)
	if root.Type == jsonv.Object {
		records = c.Records()
	}
	return v, records, nil
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
	// Records counts the history of a healthy document.
	Records int
}

// JudgeDocAt is [InspectDocAt], with what the pass found besides the verdict.
func JudgeDocAt(p Profile, path string, r io.ReaderAt, size int64) (Verdict, DocJudgement, error) {
	j := DocJudgement{FirstEnd: -1}
	head := make([]byte, min(size, 64<<10))
	if _, err := r.ReadAt(head, 0); err != nil && err != io.EOF {
		return Verdict{}, j, err
	}
	f := File{Path: path}
	if v, done, err := judgeFront(p, f, head, size, func() (bool, error) { return AllNULAt(r, 0, size) }); done || err != nil {
		return v, j, err
	}
	end, err := jsonv.ValidReader(io.NewSectionReader(r, 0, size), p.Dialect(), StreamBuf, MaxLine)
	if errors.Is(err, jsonv.ErrTokenTooLong) {
		return Verdict{}, j, ErrNoStream
	}
	var je *jsonv.Error
	if errors.As(err, &je) {
		if je.Kind == jsonv.ErrTrailing {
			j.FirstEnd = end
		}
		return SyntaxVerdict(err, 0), j, nil
	}
	if err != nil {
		return Verdict{}, j, err
	}
	v, n, err := checkDoc(p, f, r, size)
	if v.Status == Healthy {
		j.Records = n
	}
	return v, j, err
}

// IsDocument: p is an app's JSON document with a checklist ([DocChecker]), judged and
// planned streaming at any size.
func IsDocument(p Profile) bool {
	_, ok := p.(DocChecker)
	return ok && !p.JSONL() && !p.Plain()
}
