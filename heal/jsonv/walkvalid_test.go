package jsonv

import (
	"errors"
	"fmt"
	"math"
	"math/rand"
	"reflect"
	"strings"
	"testing"
)

// walked is everything a pass gives: the root, what it learnt, each element as handed over
// (its container's type and start, since End is set after), the error.
type walked struct {
	root  *Value
	info  WalkInfo
	elems []walkedElem
	err   error
}

type walkedElem struct {
	inType          Type
	inStart, index  int
	key             string
	keyStart        int
	val             *Value
	inEndAfterwards int
}

func walkWith(walk func(func(Elem)) (*Value, WalkInfo, error)) walked {
	var w walked
	var ins []*Value
	w.root, w.info, w.err = walk(func(e Elem) {
		w.elems = append(w.elems, walkedElem{inType: e.In.Type, inStart: e.In.Start, index: e.Index, key: e.Key, keyStart: e.KeyStart, val: e.Val})
		ins = append(ins, e.In)
	})
	for i, in := range ins {
		w.elems[i].inEndAfterwards = in.End
		normNaN(w.elems[i].val)
	}
	normNaN(w.root)
	return w
}

// normNaN sets every NaN number of v to a value reflect.DeepEqual finds equal to itself.
func normNaN(v *Value) {
	if v == nil {
		return
	}
	if math.IsNaN(v.Num) {
		v.Num = -0.5
	}
	for _, it := range v.Items {
		normNaN(it)
	}
	for _, m := range v.Keys {
		normNaN(m.Val)
	}
}

// checkWalkValid: WalkValid of valid b gives exactly what WalkBytes gives, and an element
// built as ElemFields says is ParseFields' tree of its bytes.
func checkWalkValid(t *testing.T, b []byte, d Dialect, s Shape) {
	t.Helper()
	want := walkWith(func(elem func(Elem)) (*Value, WalkInfo, error) { return WalkBytes(b, d, s, elem) })
	got := walkWith(func(elem func(Elem)) (*Value, WalkInfo, error) { return WalkValid(b, d, s, elem) })
	if !errors.Is(got.err, want.err) || (got.err == nil) != (want.err == nil) {
		t.Fatalf("%+v: WalkValid err %v, WalkBytes err %v", s, got.err, want.err)
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("%+v: WalkValid differs from WalkBytes on %q", s, b)
	}
	if s.ElemFields == nil || want.err != nil {
		return
	}
	for i, e := range want.elems {
		if e.val.End-e.val.Start > WalkInline {
			continue // built from its skeleton
		}
		v, err := ParseFields(b[e.val.Start:e.val.End], d, s.ElemFields)
		if err != nil {
			t.Fatalf("element %d: ParseFields: %v", i, err)
		}
		remap(v, e.val.Start, Cuts{})
		normNaN(v)
		if !reflect.DeepEqual(v, e.val) {
			t.Fatalf("element %d: built as ElemFields says differs from ParseFields of its bytes", i)
		}
	}
}

// walkValidShapes are the shapes checked on a valid document v: the root streamed, nothing
// streamed, and its first member streamed (whole, to a depth, shallow, as fields say) with
// its last kept.
func walkValidShapes(v *Value) []Shape {
	fields := &Fields{
		Members: map[string]*Fields{"name": {Opaque: true}, "role": nil, "a": {Items: &Fields{}}, "": {Members: map[string]*Fields{"x": nil}}},
		Items:   &Fields{Members: map[string]*Fields{"content": {Opaque: true}, "name": nil}, Items: &Fields{Opaque: true}},
	}
	out := []Shape{{Root: true}, {}, {Root: true, ElemFields: fields}, {Root: true, ElemDepth: 2}, {Root: true, ElemShallow: true}}
	if v != nil && v.Type == Object && len(v.Keys) > 0 {
		items := []string{v.Keys[0].Key}
		keep := [][]string{{v.Keys[len(v.Keys)-1].Key}}
		if m := v.Keys[0].Val; m.Type == Object && len(m.Keys) > 0 {
			items = append(items, m.Keys[len(m.Keys)-1].Key)
		}
		out = append(out,
			Shape{Items: items, Keep: keep},
			Shape{Items: items[:1], Keep: keep, ElemDepth: 1},
			Shape{Items: items, ElemShallow: true},
			Shape{Items: items, Keep: keep, ElemFields: fields},
			Shape{Items: items[:1], ElemFields: &Fields{}})
	}
	return out
}

func TestWalkValid(t *testing.T) {
	r := rand.New(rand.NewSource(11))
	docs := [][]byte{
		[]byte(`{"agent": {"memory": {"content": [[{"name": "a", "content": "x\u00e9\n", "role": "user"}, ["hint"]], {"name": 1}, [1, 2, 3], "s"]}}, "z": [1]}`),
		[]byte(`[{"name": "a"}, 1, "x", [[]], {"a": [1, {"b": 2}]}]`),
		[]byte(" \"only a string\"\n"),
		[]byte(`{"m": {"k": [1]}, "m": [2], "m": {"k": {"a": "b"}}}`),
		randDoc(r, 200<<10),
		randDoc(r, 3*WalkInline),
	}
	for _, in := range validCases {
		docs = append(docs, []byte(in.in))
	}
	for i, b := range docs {
		d := Dialect{NonFinite: true, Surrogates: true}
		if Valid(b, d) != nil {
			continue
		}
		v, _ := Parse(b, d)
		for _, s := range walkValidShapes(v) {
			t.Run(fmt.Sprintf("%d/%+v", i, s), func(t *testing.T) { checkWalkValid(t, b, d, s) })
		}
	}
	// A document the walk refuses is refused the same way.
	var big strings.Builder
	big.WriteString(`{"messages": [],`)
	for i := 0; i <= WalkMembers; i++ {
		fmt.Fprintf(&big, `"k%d": 1,`, i)
	}
	big.WriteString(`"z": 0}`)
	if _, _, err := WalkValid([]byte(big.String()), Dialect{}, Shape{Items: []string{"messages"}}, nil); err != ErrTooLarge {
		t.Fatalf("err = %v, want ErrTooLarge", err)
	}
}

// FuzzWalkValid: on any valid input WalkValid gives what WalkBytes gives, for each shape.
func FuzzWalkValid(f *testing.F) {
	addSeeds(f)
	f.Fuzz(func(t *testing.T, b []byte) {
		if len(b) > 64<<10 {
			return // the samples' big documents: TestWalkValid walks documents of 200 KiB
		}
		for _, d := range []Dialect{{}, {NonFinite: true, Surrogates: true}, {Lossy: true}} {
			if Valid(b, d) != nil {
				continue
			}
			v, _ := Parse(b, d)
			for _, s := range walkValidShapes(v) {
				checkWalkValid(t, b, d, s)
			}
		}
	})
}

// smallDoc is an indented session document of about size bytes: messages of a few hundred
// bytes of text (an escape now and then), as a chat app writes them.
func smallDoc(size int) []byte {
	var b strings.Builder
	b.WriteString("{\n  \"session_id\": \"c86cb912\",\n  \"messages\": [")
	for i := 0; b.Len() < size-100; i++ {
		if i > 0 {
			b.WriteString(",")
		}
		text := strings.Repeat("the test run said the file was fine, ", 1+i%7) + `and then \"it\" was not.\n`
		fmt.Fprintf(&b, "\n    {\n      \"role\": %q,\n      \"content\": \"%s\",\n      \"timestamp\": 1795246942.69,\n      \"metadata\": {}\n    }", []string{"user", "assistant"}[i%2], text)
	}
	b.WriteString("\n  ],\n  \"agent_id\": null,\n  \"metadata\": {}\n}")
	return []byte(b.String())
}

// BenchmarkWalkSmallDocs: the pass over a 7.5 KB document held whole (a first scan's),
// after its validation, streamed element by element, each built to depth 1 or as fields say.
func BenchmarkWalkSmallDocs(b *testing.B) {
	doc := smallDoc(7500)
	if err := Valid(doc, Dialect{}); err != nil {
		b.Fatal(err)
	}
	depth := Shape{Items: []string{"messages"}, ElemDepth: 1}
	fields := Shape{Items: []string{"messages"}, ElemFields: &Fields{Members: map[string]*Fields{"role": {Opaque: true}}}}
	for _, c := range []struct {
		name  string
		walk  func([]byte, Dialect, Shape, func(Elem)) (*Value, WalkInfo, error)
		shape Shape
	}{{"WalkBytes/depth", WalkBytes, depth}, {"WalkValid/depth", WalkValid, depth}, {"WalkValid/fields", WalkValid, fields}} {
		b.Run(c.name, func(b *testing.B) {
			b.SetBytes(int64(len(doc)))
			b.ReportAllocs()
			for b.Loop() {
				if _, _, err := c.walk(doc, Dialect{}, c.shape, func(Elem) {}); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
