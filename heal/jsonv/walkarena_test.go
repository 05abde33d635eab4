package jsonv

import (
	"bytes"
	"fmt"
	"math/rand"
	"reflect"
	"sync"
	"testing"
	"unsafe"
)

// cloneValue is a copy of v's tree in nodes and lists of its own.
func cloneValue(v *Value) *Value {
	if v == nil {
		return nil
	}
	c := *v
	if v.Items != nil {
		c.Items = make([]*Value, len(v.Items))
		for i, it := range v.Items {
			c.Items[i] = cloneValue(it)
		}
	}
	if v.Keys != nil {
		c.Keys = make([]Member, len(v.Keys))
		for i, m := range v.Keys {
			c.Keys[i] = Member{Key: m.Key, KeyStart: m.KeyStart, Val: cloneValue(m.Val)}
		}
	}
	return &c
}

// nodes calls f with every node of v's tree.
func nodes(v *Value, f func(*Value)) {
	if v == nil {
		return
	}
	f(v)
	for _, it := range v.Items {
		nodes(it, f)
	}
	for _, m := range v.Keys {
		nodes(m.Val, f)
	}
}

// walkedCopies is walkWith of a walk whose elements are valid while elem has them only
// (Arena.Walk): each is copied as it is handed over. ins are the containers handed over.
func walkedCopies(walk func(func(Elem)) (*Value, WalkInfo, error)) (w walked, ins []*Value) {
	w = walkWith(func(elem func(Elem)) (*Value, WalkInfo, error) {
		return walk(func(e Elem) {
			ins = append(ins, e.In)
			e.Val = cloneValue(e.Val)
			elem(e)
		})
	})
	return w, ins
}

// inArena: p points into a node, or a member or element list, a holds.
func inArena(a *Arena, p unsafe.Pointer) bool {
	in := func(base unsafe.Pointer, n int, size uintptr) bool {
		return n > 0 && uintptr(p) >= uintptr(base) && uintptr(p) < uintptr(base)+uintptr(n)*size
	}
	for _, c := range a.vals {
		if in(unsafe.Pointer(unsafe.SliceData(c)), len(c), unsafe.Sizeof(Value{})) {
			return true
		}
	}
	return in(unsafe.Pointer(unsafe.SliceData(a.keys)), cap(a.keys), unsafe.Sizeof(Member{})) ||
		in(unsafe.Pointer(unsafe.SliceData(a.items)), cap(a.items), unsafe.Sizeof((*Value)(nil)))
}

// checkRootApart: the root a walk in a returned holds no node or list of a, nor (want, the
// same walk without an arena) any node it handed over as an element, and holds every
// container it streamed; after a's next build it is still what the walk without an arena
// returned.
func checkRootApart(t *testing.T, a *Arena, got walked, gotIns []*Value, want walked, fresh func(func(Elem)) (*Value, WalkInfo, error)) {
	t.Helper()
	if got.root == nil {
		return
	}
	inRoot := map[*Value]bool{}
	nodes(got.root, func(v *Value) {
		inRoot[v] = true
		if inArena(a, unsafe.Pointer(v)) || (len(v.Items) > 0 && inArena(a, unsafe.Pointer(&v.Items[0]))) || (len(v.Keys) > 0 && inArena(a, unsafe.Pointer(&v.Keys[0]))) {
			t.Fatalf("the root holds a node or list of the arena, at %d", v.Start)
		}
	})
	for _, in := range gotIns {
		if !inRoot[in] {
			t.Fatalf("a container streamed (at %d) is not the root's", in.Start)
		}
	}
	handed := map[*Value]bool{}
	root, _, _ := fresh(func(e Elem) { nodes(e.Val, func(v *Value) { handed[v] = true }) })
	nodes(root, func(v *Value) {
		if handed[v] {
			t.Fatalf("the root holds the element node at %d", v.Start)
		}
	})
	a.build([]byte(`[{"a": "overwritten", "b": [1, 2, {"c": null}]}, "x", -1]`), Dialect{}, 0, nil)
	normNaN(got.root)
	if !reflect.DeepEqual(got.root, want.root) {
		t.Fatalf("the root changed with the arena's next build")
	}
}

// checkWalkArena: a walk whose elements are built in a gives exactly what the same walk gives
// with elements of their own (Walk, and WalkValid of valid b), element by element.
func checkWalkArena(t *testing.T, a *Arena, b []byte, d Dialect, s Shape) {
	t.Helper()
	fresh := func(elem func(Elem)) (*Value, WalkInfo, error) { return WalkBytes(b, d, s, elem) }
	want := walkWith(fresh)
	got, ins := walkedCopies(func(elem func(Elem)) (*Value, WalkInfo, error) {
		return a.Walk(bytes.NewReader(b), int64(len(b)), d, s, elem)
	})
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("%+v: Arena.Walk differs from Walk on %.200q", s, b)
	}
	checkRootApart(t, a, got, ins, want, fresh)
	if Valid(b, d) != nil {
		return
	}
	fresh = func(elem func(Elem)) (*Value, WalkInfo, error) { return WalkValid(b, d, s, elem) }
	want = walkWith(fresh)
	got, ins = walkedCopies(func(elem func(Elem)) (*Value, WalkInfo, error) { return a.WalkValid(b, d, s, elem) })
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("%+v: Arena.WalkValid differs from WalkValid on %.200q", s, b)
	}
	checkRootApart(t, a, got, ins, want, fresh)
}

// The walks in an arena, one arena reused over every document and shape: documents of
// streamed elements over the window, the inline size and the cut, duplicated names on the
// path, each shape a checklist asks for.
func TestWalkArena(t *testing.T) {
	r := rand.New(rand.NewSource(12))
	docs := [][]byte{
		[]byte(`{"agent": {"memory": {"content": [[{"name": "a", "content": "x\u00e9\n", "role": "user"}, ["hint"]], {"name": 1}, [1, 2, 3], "s"]}}, "z": [1]}`),
		[]byte(`[{"name": "a"}, 1, "x", [[]], {"a": [1, {"b": 2}]}, NaN]`),
		[]byte(" \"only a string\"\n"),
		[]byte(`{"m": {"k": [1]}, "m": [2], "m": {"k": {"a": "b"}}}`),
		randDoc(r, 3*walkChunk),
		randDoc(r, 3*WalkInline),
	}
	for _, in := range validCases {
		docs = append(docs, []byte(in.in))
	}
	var a Arena
	d := Dialect{NonFinite: true, Surrogates: true}
	n := 0
	for i, b := range docs {
		if Valid(b, d) != nil {
			continue
		}
		v, _ := Parse(b, d)
		for _, s := range walkValidShapes(v) {
			t.Run(fmt.Sprintf("%d/%+v", i, s), func(t *testing.T) { checkWalkArena(t, &a, b, d, s) })
			n++
		}
	}
	if n < 50 {
		t.Fatalf("only %d walks", n)
	}
}

// A walk that fails fails the same in an arena, and leaves the arena fit for the next.
func TestWalkArenaRefused(t *testing.T) {
	var a Arena
	for _, b := range [][]byte{
		[]byte(`{"messages": [1, {"a": 2}, `), // not a document: Walk is given a valid one, and says so
		[]byte(`{"messages": [[1, 2], [3]] `),
		[]byte(`{"messages": [[1, 2], [3]]} x`),
	} {
		for _, s := range []Shape{{Items: []string{"messages"}}, {Items: []string{"messages"}, ElemDepth: 1}, {Root: true, ElemShallow: true}} {
			checkWalkArena(t, &a, b, Dialect{}, s)
		}
	}
	checkWalkArena(t, &a, []byte(`{"messages": [[1, 2], [3]]}`), Dialect{}, Shape{Items: []string{"messages"}})
}

// FuzzWalkArena: on any input a walk in an arena (one, reused from input to input) gives what
// the walk without one gives, for each shape, and returns a root apart from the arena.
func FuzzWalkArena(f *testing.F) {
	addSeeds(f)
	var mu sync.Mutex
	var a Arena
	f.Fuzz(func(t *testing.T, b []byte) {
		if len(b) > 64<<10 {
			return // the samples' big documents: TestWalkArena walks documents of megabytes
		}
		mu.Lock()
		defer mu.Unlock()
		for _, d := range []Dialect{{}, {NonFinite: true, Surrogates: true}, {Lossy: true}} {
			v, _ := Parse(b, d)
			for _, s := range walkValidShapes(v) {
				checkWalkArena(t, &a, b, d, s)
			}
		}
	})
}

// Once a walk ends its arena holds no node of it (no string of the document is kept alive
// by an arena kept for the next walk), and Held counts what it holds for reuse: more after
// a history of a hundred thousand marks than after one of a few messages.
func TestWalkArenaKeepsNothing(t *testing.T) {
	fields := &Fields{Items: &Fields{Members: map[string]*Fields{"name": nil}, Items: &Fields{}}}
	s := Shape{Items: []string{"content"}, ElemFields: fields}
	var a Arena
	small := []byte(`{"content": [[{"name": "a long enough name"}, ["x"]], [{"name": "b"}, []]]}`)
	if _, _, err := a.WalkValid(small, Dialect{}, s, func(Elem) {}); err != nil {
		t.Fatal(err)
	}
	held := a.Held()
	var b bytes.Buffer
	b.WriteString(`{"content": [[{"name": "a"}, [`)
	for i := range 100_000 {
		if i > 0 {
			b.WriteString(", ")
		}
		b.WriteString(`"m"`)
	}
	b.WriteString(`]]]}`)
	if _, _, err := a.Walk(bytes.NewReader(b.Bytes()), int64(b.Len()), Dialect{}, s, func(Elem) {}); err != nil {
		t.Fatal(err)
	}
	if held == 0 || a.Held() < 100_000*int(unsafe.Sizeof(Value{})) {
		t.Fatalf("Held %d after a small history, %d after 100000 marks", held, a.Held())
	}
	for _, c := range a.vals {
		for i := range c {
			if !reflect.DeepEqual(c[i], Value{}) {
				t.Fatalf("the arena holds %+v after the walk", c[i])
			}
		}
	}
	for _, l := range [][]Member{a.keys[:cap(a.keys)], a.mstack[:cap(a.mstack)]} {
		for _, m := range l {
			if m != (Member{}) {
				t.Fatalf("the arena holds member %+v after the walk", m)
			}
		}
	}
	for _, l := range [][]*Value{a.items[:cap(a.items)], a.istack[:cap(a.istack)]} {
		for _, v := range l {
			if v != nil {
				t.Fatal("the arena holds an element after the walk")
			}
		}
	}
}
