package jsonv

import (
	"bufio"
	"bytes"
	"errors"
	"io"
	"slices"
)

// Shape says which parts of a JSON document a streamed pass ([Walk]) builds. An app's
// checklist reads a few members of its document and then each element of one container, the
// history (CoPaw's agent.memory.content, PraisonAI's messages, the entries of OpenClaw's
// store): that container's elements are handed over one at a time and never held together,
// the members a checklist names are built whole, and every other container is built shallow
// (its Type and bounds only), so that memory stays bounded whatever the document's size.
type Shape struct {
	// Items is the path of object member names from the top-level value to the container whose
	// elements are streamed (an array's items, an object's member values). Each object on
	// the path is walked member by member; every occurrence of a duplicated name is walked
	// (the checklist decides which counts: [Value.Get] is last-wins).
	Items []string
	// Root streams the elements of the top-level value itself (Items is then unused).
	Root bool
	// Keep are paths of members built whole, from the top-level value, each of whose objects
	// up to the member must lie on the Items path.
	Keep [][]string
	// ElemDepth, when over 0, builds each streamed element to that depth only ([ParseDepth]:
	// deeper objects and arrays have their type and bounds); ElemShallow builds none of it
	// (an element's type and bounds only). Both are for a checklist that reads no deeper.
	ElemDepth   int
	ElemShallow bool
	// ElemFields, when set, builds each streamed element as [ParseFields] does, only the
	// members and items it names (ElemDepth is then unused): for a checklist that reads a few
	// members of each element, no other string is decoded and nothing else allocated.
	ElemFields *Fields
}

// Elem is one element of a streamed container.
type Elem struct {
	In       *Value // the container: its Type and Start (End is set once it is walked)
	Index    int    // the element's index in In
	Key      string // the member's name when In is an object
	KeyStart int    // offset of that name's opening quote
	Val      *Value // the element, its offsets the document's
}

// WalkInfo is what a pass learns about the document's bytes besides its values.
type WalkInfo struct {
	Newline bool // a '\n' occurs anywhere in the document
	// Trailing, of a walk of a first value ([Arena.WalkFirst]): bytes that are not whitespace
	// follow the value, which ends at End. The walk is then the walk of the bytes before
	// End (Newline says whether a '\n' occurs in them).
	Trailing bool
	End      int64
}

const (
	// WalkInline: a value up to this size is built from the pass's window as it is.
	WalkInline = 1 << 20
	// WalkCut: a larger value is built from a skeleton ([Skeleton]) whose strings are cut
	// after this many bytes, so that its Str holds their beginning only.
	WalkCut = 64 << 10
	// WalkLimit: a skeleton larger than this is not built ([ErrTooLarge]).
	WalkLimit = 8 << 20
	// WalkMembers: the most members the objects on the path hold together (the streamed
	// container's elements apart); a document with more fails the walk with [ErrTooLarge].
	WalkMembers = 1 << 16
	walkChunk   = 256 << 10
)

// errWalk: bytes a valid document cannot hold (Walk is given a document Valid accepted).
var errWalk = errors.New("jsonv: walk: not a valid document")

// Walk makes one pass over the size bytes of the valid document r holds (check it with
// [Valid] or [ValidReader] first), building the top-level value as s says and calling elem
// with each element of the container s streams, in document order. It holds a window of the
// input and one element at a time: an element or member up to [WalkInline] bytes is built
// as it is, a larger one from its skeleton ([WalkCut]), and one whose skeleton is over
// [WalkLimit], or objects on the path with more than [WalkMembers] members, fail the pass with
// [ErrTooLarge]. Offsets in every Value built are the
// document's (a skeleton's cut strings included).
func Walk(r io.ReaderAt, size int64, d Dialect, s Shape, elem func(Elem)) (*Value, WalkInfo, error) {
	return newWalker(r, size, d, s, elem, nil).run()
}

// newWalker is the walker of Walk, which builds each streamed element in a when a is not
// nil.
func newWalker(r io.ReaderAt, size int64, d Dialect, s Shape, elem func(Elem), a *Arena) *walker {
	return &walker{r: r, size: size, d: d, elem: elem, mark: -1, nl: -1, buf: make([]byte, 0, min(walkChunk, max(size, 0))), shape: s, arena: a}
}

// newValidWalker is the walker of WalkValid, which builds each streamed element in a when a
// is not nil.
func newValidWalker(b []byte, d Dialect, s Shape, elem func(Elem), a *Arena) *walker {
	w := &walker{r: bytes.NewReader(b), size: int64(len(b)), d: d, elem: elem, mark: -1, nl: -1, buf: b, shape: s, valid: true, arena: a}
	w.info.Newline = bytes.IndexByte(b, '\n') >= 0 // fill, which finds it in each read, never runs
	return w
}

// run makes the walk's pass; its arena, if it has one, keeps nothing of the document after.
func (w *walker) run() (*Value, WalkInfo, error) {
	root, err := w.document(w.shape)
	if w.arena != nil {
		w.arena.reset()
	}
	return root, w.info, err
}

// WalkBytes is [Walk] of a document held in memory.
func WalkBytes(b []byte, d Dialect, s Shape, elem func(Elem)) (*Value, WalkInfo, error) {
	return Walk(bytes.NewReader(b), int64(len(b)), d, s, elem)
}

// Walk is [Walk] building each streamed element in a instead of in nodes of its own, for a
// checklist that reads each element while elem has it and keeps none of its nodes: the
// element and every node under it are valid until elem returns only (the next element is
// built in the same nodes), its strings for good (they are copied out). The value returned
// holds no node of a, so that a's next build leaves it whole; a keeps nothing of the
// document once the walk ends.
func (a *Arena) Walk(r io.ReaderAt, size int64, d Dialect, s Shape, elem func(Elem)) (*Value, WalkInfo, error) {
	return newWalker(r, size, d, s, elem, a).run()
}

// WalkFirst is [Arena.Walk] of the input's first value, whatever follows it: bytes that are
// not whitespace after it end the walk there (WalkInfo.Trailing), which is then the walk of
// the bytes before them. On an input of one value it is Arena.Walk.
func (a *Arena) WalkFirst(r io.ReaderAt, size int64, d Dialect, s Shape, elem func(Elem)) (*Value, WalkInfo, error) {
	w := newWalker(r, size, d, s, elem, a)
	w.first = true
	return w.run()
}

// WalkValid is [WalkValid] building each streamed element in a, as [Arena.Walk] does.
func (a *Arena) WalkValid(b []byte, d Dialect, s Shape, elem func(Elem)) (*Value, WalkInfo, error) {
	return newValidWalker(b, d, s, elem, a).run()
}

// WalkValid is [WalkBytes] of b that has passed Valid(b, d), which it does not run again: the
// pass's window is b itself (nothing is copied, no window allocated) and the values up to
// [WalkInline] bytes are built without being validated again. It builds and hands over what
// WalkBytes does, with the same offsets and errors. It must be given nothing else: the build
// of such values checks nothing.
func WalkValid(b []byte, d Dialect, s Shape, elem func(Elem)) (*Value, WalkInfo, error) {
	return newValidWalker(b, d, s, elem, nil).run()
}

type walker struct {
	r    io.ReaderAt
	size int64
	d    Dialect
	elem func(Elem)
	info WalkInfo

	buf  []byte // the window: the input's bytes from base
	base int64
	pos  int // the next byte, in buf
	mark int // -1, or the start in buf of a value being skipped, which fill keeps
	gen  int // fill count: offsets found in an older window are searched again

	shape   Shape
	members int // members built into the objects on the path

	valid bool  // the window is the whole input, which Valid accepted (WalkValid)
	first bool  // the input's first value is walked, whatever follows it (WalkFirst)
	nl    int64 // where the first '\n' read is, or -1

	arena *Arena // nil, or where each streamed element is built (Arena.Walk): never a node of the root
}

// fill reads the input's next bytes into the window, keeping the bytes from mark (or from
// pos); false at the end of the input.
func (w *walker) fill() bool {
	if w.base+int64(len(w.buf)) >= w.size {
		return false
	}
	from := w.pos
	if w.mark >= 0 {
		if len(w.buf)-w.mark > WalkInline {
			w.mark = -1 // too long to build from the window: rebuilt from its skeleton
		} else {
			from = w.mark
		}
	}
	n := copy(w.buf, w.buf[from:])
	w.buf = w.buf[:n]
	w.base += int64(from)
	w.pos -= from
	if w.mark >= 0 {
		w.mark -= from
	}
	// Room for a chunk, or for the rest of a shorter input: a small document's window is
	// its size.
	if need := int(min(walkChunk, w.size-w.base-int64(len(w.buf)))); cap(w.buf)-len(w.buf) < need {
		w.buf = slices.Grow(w.buf, need)
	}
	want := min(int64(cap(w.buf)-len(w.buf)), w.size-w.base-int64(len(w.buf)))
	got, err := w.r.ReadAt(w.buf[len(w.buf):len(w.buf)+int(want)], w.base+int64(len(w.buf)))
	if got <= 0 && err != nil {
		w.size = w.base + int64(len(w.buf)) // the input ended early
		return false
	}
	fresh := w.buf[len(w.buf) : len(w.buf)+got]
	if w.nl < 0 {
		if i := bytes.IndexByte(fresh, '\n'); i >= 0 {
			w.nl, w.info.Newline = w.base+int64(len(w.buf)+i), true
		}
	}
	w.buf = w.buf[:len(w.buf)+got]
	w.gen++
	return true
}

func (w *walker) off() int64 { return w.base + int64(w.pos) }

func (w *walker) peek() (byte, bool) {
	if w.pos >= len(w.buf) && !w.fill() {
		return 0, false
	}
	return w.buf[w.pos], true
}

func (w *walker) ws() {
	for {
		c, ok := w.peek()
		if !ok || (c != ' ' && c != '\t' && c != '\n' && c != '\r') {
			return
		}
		w.pos++
	}
}

// expect consumes c, after whitespace.
func (w *walker) expect(c byte) error {
	w.ws()
	if b, ok := w.peek(); !ok || b != c {
		return errWalk
	}
	w.pos++
	return nil
}

// structural marks the bytes a skip of a container stops at.
var structural = [256]bool{'"': true, '{': true, '}': true, '[': true, ']': true}

// delimiter marks the bytes a number or literal ends before.
var delimiter = [256]bool{',': true, '}': true, ']': true, ' ': true, '\t': true, '\n': true, '\r': true}

// skip passes over the value at pos.
func (w *walker) skip() error {
	c, ok := w.peek()
	if !ok {
		return errWalk
	}
	if w.valid {
		// The window is the whole valid input: a string ends at its closing quote, a
		// container where the scanner's pass over it ends.
		switch c {
		case '"':
			w.pos = closingQuote(w.buf, w.pos+1) + 1
			return nil
		case '{', '[':
			end, _ := scan(w.buf[w.pos:], w.d, bestKernel)
			w.pos += end
			return nil
		}
	}
	switch c {
	case '"':
		return w.skipString()
	case '{', '[':
		depth := 0
		for {
			if w.pos >= len(w.buf) && !w.fill() {
				return errWalk
			}
			b := w.buf[w.pos:]
			i := 0
			for i < len(b) && !structural[b[i]] {
				i++
			}
			w.pos += i
			if i == len(b) {
				continue
			}
			switch b[i] {
			case '"':
				if err := w.skipString(); err != nil {
					return err
				}
				continue
			case '{', '[':
				depth++
			default:
				depth--
			}
			w.pos++
			if depth == 0 {
				return nil
			}
		}
	case ',', ':', '}', ']':
		return errWalk
	default:
		for {
			c, ok := w.peek()
			if !ok || delimiter[c] {
				return nil
			}
			w.pos++
		}
	}
}

// skipString passes over the string whose opening quote is at pos: to the first quote after
// an even run of backslashes (what reading it escape by escape finds, for any bytes), each
// quote found with one search of the window and the run before it counted back, never a
// search per escape (a chat's text has a "\n" every line). esc carries, across a window's
// refill, whether the window's next byte is escaped (the run it ended with was odd).
func (w *walker) skipString() error {
	w.pos++
	esc := false
	for {
		if w.pos >= len(w.buf) && !w.fill() {
			return errWalk
		}
		b := w.buf[w.pos:]
		j := bytes.IndexByte(b, '"')
		if j < 0 {
			w.pos += len(b)
			esc = escapesNext(b, esc)
			continue
		}
		if !escapesNext(b[:j], esc) {
			w.pos += j + 1
			return nil
		}
		w.pos += j + 1 // an escaped quote: the string goes on
		esc = false
	}
}

// escapesNext reports whether the byte after b is escaped: b ends with an odd run of
// backslashes, counted on from before b when b is all backslashes (esc: b's first byte is
// escaped).
func escapesNext(b []byte, esc bool) bool {
	n := 0
	for n < len(b) && b[len(b)-1-n] == '\\' {
		n++
	}
	if n == len(b) {
		return esc != (n%2 == 1)
	}
	return n%2 == 1
}

// capture builds the value at pos.
func (w *walker) capture() (*Value, error) { return w.captureDepth(0, nil, nil) }

// captureDepth builds the value at pos to depth levels (0: whole), or as f says when f is
// set, in a when it is not nil (a streamed element), else in nodes of its own.
func (w *walker) captureDepth(depth int, f *Fields, a *Arena) (*Value, error) {
	if w.valid && a != nil && (f != nil || depth > 0) && len(w.buf)-w.pos <= WalkInline {
		// The rest of the valid document is within the inline size, so the value is: it is
		// built where it lies, its offsets the document's, and the build finds its end (no
		// pass over it beforehand). Not a whole build, whose strings share one copy of the
		// value's bytes alone.
		v, end := a.buildAt(w.buf, w.pos, w.d, depth, f, false)
		w.pos = end
		return v, nil
	}
	start := w.off()
	w.mark = w.pos
	err := w.skip()
	mark := w.mark
	w.mark = -1
	if err != nil {
		return nil, err
	}
	end := w.off()
	if mark >= 0 && end-start <= WalkInline {
		b := w.buf[mark:w.pos]
		if w.valid {
			// A value of a valid document is valid on its own.
			v := buildValid(b, w.d, depth, f, a)
			remap(v, int(start), Cuts{})
			return v, nil
		}
		v, err := w.parse(b, depth, f, a)
		if err != nil {
			return nil, err
		}
		remap(v, int(start), Cuts{})
		return v, nil
	}
	sk, cuts, err := SkeletonCuts(bufio.NewReaderSize(io.NewSectionReader(w.r, start, end-start), 64<<10), WalkCut, WalkLimit)
	if err != nil {
		return nil, err
	}
	v, err := w.parse(sk, depth, f, a)
	if err != nil {
		return nil, err
	}
	remap(v, int(start), cuts)
	return v, nil
}

// parse builds the value b holds to depth levels (0: whole), or as f says when f is set, in
// a when it is not nil.
func (w *walker) parse(b []byte, depth int, f *Fields, a *Arena) (*Value, error) {
	if a != nil {
		if err := Valid(b, w.d); err != nil {
			return nil, err
		}
		return a.build(b, w.d, depth, f), nil
	}
	switch {
	case f != nil:
		return ParseFields(b, w.d, f)
	case depth > 0:
		return ParseDepth(b, w.d, depth)
	}
	return Parse(b, w.d)
}

// buildValid is parse of b that has passed Valid(b, d): the same tree, not validated again.
func buildValid(b []byte, d Dialect, depth int, f *Fields, a *Arena) *Value {
	if a != nil {
		return a.build(b, d, depth, f)
	}
	switch {
	case f != nil:
		return ParseFieldsValid(b, d, f)
	case depth > 0:
		return ParseDepthValid(b, d, depth)
	}
	return parseValid(b, d)
}

// key reads the member name at pos.
func (w *walker) key() (string, error) {
	if !w.valid {
		k, err := w.capture()
		if err != nil || k.Type != String {
			return "", errWalk
		}
		return k.Str, nil
	}
	if w.pos >= len(w.buf) || w.buf[w.pos] != '"' {
		return "", errWalk
	}
	q := closingQuote(w.buf, w.pos+1)
	raw := w.buf[w.pos+1 : q]
	var key string
	if bytes.IndexByte(raw, '\\') < 0 && (!w.d.Surrogates || asciiOnly(raw)) {
		key = string(raw) // as the build decodes it: nothing to decode
	} else {
		p := builder{b: w.buf, surr: w.d.Surrogates, d: w.d, max: MaxDepth, own: true}
		key, _ = p.str(w.pos)
	}
	w.pos = q + 1
	return key, nil
}

// shallow passes over the value at pos, giving its type and bounds only.
func (w *walker) shallow(t Type) (*Value, error) {
	v := &Value{Type: t, Start: int(w.off())}
	if err := w.skip(); err != nil {
		return nil, err
	}
	v.End = int(w.off())
	return v, nil
}

// shallowIn is shallow, its node a's when a is not nil.
func (w *walker) shallowIn(t Type, a *Arena) (*Value, error) {
	if a == nil {
		return w.shallow(t)
	}
	start := w.off()
	if err := w.skip(); err != nil {
		return nil, err
	}
	return a.shallow(t, int(start), int(w.off())), nil
}

func containerType(c byte) (Type, bool) {
	switch c {
	case '{':
		return Object, true
	case '[':
		return Array, true
	}
	return 0, false
}

func (w *walker) document(s Shape) (*Value, error) {
	w.ws()
	c, ok := w.peek()
	if !ok {
		return nil, errWalk
	}
	var root *Value
	var err error
	t, container := containerType(c)
	switch {
	case container && s.Root:
		root = &Value{Type: t, Start: int(w.off())}
		err = w.stream(root)
	case t == Object && container:
		root = &Value{Type: Object, Start: int(w.off())}
		err = w.object(root, s.Items, true, s.Keep)
	case container:
		root, err = w.shallow(t)
	default:
		root, err = w.capture()
	}
	if err != nil {
		return nil, err
	}
	end := w.off()
	w.ws()
	if _, more := w.peek(); more {
		if !w.first {
			return nil, errWalk
		}
		w.info.Trailing = true
		w.info.Newline = w.nl >= 0 && w.nl < end
	}
	w.info.End = end
	return root, nil
}

// object walks the members of the object at pos into v: the member named rest[0] (onPath)
// is walked on, or streamed when it is the last of rest; members keep names are built whole.
func (w *walker) object(v *Value, rest []string, onPath bool, keep [][]string) error {
	w.pos++
	for first := true; ; first = false {
		w.ws()
		c, ok := w.peek()
		if !ok {
			return errWalk
		}
		if c == '}' {
			w.pos++
			v.End = int(w.off())
			return nil
		}
		if !first {
			if c != ',' {
				return errWalk
			}
			w.pos++
			w.ws()
		}
		keyStart := w.off()
		key, err := w.key()
		if err != nil {
			return err
		}
		if err := w.expect(':'); err != nil {
			return err
		}
		w.ws()
		c, ok = w.peek()
		if !ok {
			return errWalk
		}
		t, container := containerType(c)
		var child *Value
		switch {
		case onPath && len(rest) > 0 && key == rest[0] && container:
			child = &Value{Type: t, Start: int(w.off())}
			switch {
			case len(rest) == 1:
				err = w.stream(child)
			case t == Object:
				err = w.object(child, rest[1:], true, under(keep, key))
			default:
				child, err = w.shallow(t)
			}
		case kept(keep, key) || !container:
			child, err = w.capture()
		default:
			child, err = w.shallow(t)
		}
		if err != nil {
			return err
		}
		if w.members++; w.members > WalkMembers {
			return ErrTooLarge
		}
		v.Keys = append(v.Keys, Member{Key: key, KeyStart: int(keyStart), Val: child})
	}
}

// stream hands over the elements of the container at pos, one at a time.
func (w *walker) stream(v *Value) error {
	w.pos++
	closing := byte(']')
	if v.Type == Object {
		closing = '}'
	}
	for i := 0; ; i++ {
		w.ws()
		c, ok := w.peek()
		if !ok {
			return errWalk
		}
		if c == closing {
			w.pos++
			v.End = int(w.off())
			return nil
		}
		if i > 0 {
			if c != ',' {
				return errWalk
			}
			w.pos++
			w.ws()
		}
		e := Elem{In: v, Index: i}
		if v.Type == Object {
			e.KeyStart = int(w.off())
			key, err := w.key()
			if err != nil {
				return err
			}
			e.Key = key
			if err := w.expect(':'); err != nil {
				return err
			}
			w.ws()
		}
		var val *Value
		var err error
		if c, ok = w.peek(); !ok {
			return errWalk
		}
		// The element is built in the walk's arena, if it has one: handed to elem alone,
		// never linked into v (nor anywhere in the root).
		if t, container := containerType(c); w.shape.ElemShallow && container {
			val, err = w.shallowIn(t, w.arena)
		} else if w.shape.ElemShallow {
			val, err = w.captureDepth(0, nil, w.arena) // a scalar
		} else {
			val, err = w.captureDepth(w.shape.ElemDepth, w.shape.ElemFields, w.arena)
		}
		if err != nil {
			return err
		}
		e.Val = val
		if w.elem != nil {
			w.elem(e)
		}
	}
}

func kept(keep [][]string, name string) bool {
	for _, p := range keep {
		if len(p) == 1 && p[0] == name {
			return true
		}
	}
	return false
}

func under(keep [][]string, name string) [][]string {
	var out [][]string
	for _, p := range keep {
		if len(p) > 1 && p[0] == name {
			out = append(out, p[1:])
		}
	}
	return out
}

// cut is a string a skeleton cut: pos is its closing quote's offset in the skeleton, n the
// bytes left out before it.
type cut struct{ pos, n int }

// remap turns the offsets of a value built from a slice (or a skeleton with cuts) starting at
// base in the document into the document's.
func remap(v *Value, base int, cuts Cuts) {
	if len(cuts.cuts) == 0 {
		shift(v, base)
		return
	}
	var walk func(v *Value)
	walk = func(v *Value) {
		v.Start, v.End = base+cuts.Orig(v.Start), base+cuts.Orig(v.End)
		for _, it := range v.Items {
			walk(it)
		}
		for i := range v.Keys {
			v.Keys[i].KeyStart = base + cuts.Orig(v.Keys[i].KeyStart)
			walk(v.Keys[i].Val)
		}
	}
	walk(v)
}

// shift adds base to the offsets in v.
func shift(v *Value, base int) {
	v.Start += base
	v.End += base
	for _, it := range v.Items {
		shift(it, base)
	}
	for i := range v.Keys {
		v.Keys[i].KeyStart += base
		shift(v.Keys[i].Val, base)
	}
}
