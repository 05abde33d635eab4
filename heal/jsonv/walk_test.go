package jsonv

import (
	"fmt"
	"math/rand"
	"strings"
	"testing"
)

// sameValue reports how got (a walk's) differs from want (Parse's): type, bounds, scalars;
// containers got holds shallow (no members nor items) are compared by type and bounds only;
// strings longer than cut may be cut to a prefix.
func sameValue(got, want *Value, cut bool) string {
	if got.Type != want.Type || got.Start != want.Start || got.End != want.End {
		return fmt.Sprintf("%v [%d,%d) want %v [%d,%d)", got.Type, got.Start, got.End, want.Type, want.Start, want.End)
	}
	switch got.Type {
	case String:
		if got.Str != want.Str && !(cut && want.End-want.Start > WalkCut && len(got.Str) >= WalkCut/8 && strings.HasPrefix(want.Str, got.Str)) {
			i := 0
			for i < len(got.Str) && i < len(want.Str) && got.Str[i] == want.Str[i] {
				i++
			}
			return fmt.Sprintf("string of %d bytes, want %d, differs at %d: %.40q want %.40q", len(got.Str), len(want.Str), i, got.Str[i:], want.Str[i:])
		}
	case Number:
		if got.IsInt != want.IsInt || got.Int != want.Int || (got.Num != want.Num && got.Num == got.Num) {
			return fmt.Sprintf("number %v want %v", got.Num, want.Num)
		}
	case Bool:
		if got.Bool != want.Bool {
			return "bool"
		}
	case Array:
		if got.Items == nil {
			return ""
		}
		if len(got.Items) != len(want.Items) {
			return fmt.Sprintf("%d items want %d", len(got.Items), len(want.Items))
		}
		for i := range got.Items {
			if d := sameValue(got.Items[i], want.Items[i], cut); d != "" {
				return fmt.Sprintf("[%d]: %s", i, d)
			}
		}
	case Object:
		if got.Keys == nil {
			return ""
		}
		if len(got.Keys) != len(want.Keys) {
			return fmt.Sprintf("%d members want %d", len(got.Keys), len(want.Keys))
		}
		for i := range got.Keys {
			g, w := got.Keys[i], want.Keys[i]
			if g.Key != w.Key || g.KeyStart != w.KeyStart {
				return fmt.Sprintf("member %d %q@%d want %q@%d", i, g.Key, g.KeyStart, w.Key, w.KeyStart)
			}
			if d := sameValue(g.Val, w.Val, cut); d != "" {
				return fmt.Sprintf(".%s: %s", g.Key, d)
			}
		}
	}
	return ""
}

// checkWalk walks b (valid) as s says and compares everything built with Parse's tree.
func checkWalk(t *testing.T, b []byte, d Dialect, s Shape) {
	t.Helper()
	want, err := Parse(b, d)
	if err != nil {
		t.Fatalf("Parse: %v", err)
	}
	var elems []Elem
	root, info, err := WalkBytes(b, d, s, func(e Elem) { elems = append(elems, e) })
	if err != nil {
		t.Fatalf("Walk: %v", err)
	}
	if info.Newline != strings.Contains(string(b), "\n") {
		t.Errorf("Newline = %v", info.Newline)
	}
	if diff := sameValue(root, want, true); diff != "" {
		t.Fatalf("root: %s", diff)
	}
	// The streamed container: the last value on the path (every occurrence is streamed, so
	// the elements are matched against all of them in order).
	var conts []*Value
	var find func(v *Value, rest []string)
	find = func(v *Value, rest []string) {
		if len(rest) == 0 {
			if v.Type == Array || v.Type == Object {
				conts = append(conts, v)
			}
			return
		}
		if v.Type != Object {
			return
		}
		for _, m := range v.Keys {
			if m.Key == rest[0] {
				if len(rest) == 1 || m.Val.Type == Object {
					find(m.Val, rest[1:])
				}
			}
		}
	}
	switch {
	case s.Root:
		find(want, nil)
	case len(s.Items) > 0:
		find(want, s.Items)
	}
	i := 0
	for _, c := range conts {
		n := len(c.Items)
		if c.Type == Object {
			n = len(c.Keys)
		}
		for k := 0; k < n; k++ {
			if i >= len(elems) {
				t.Fatalf("%d elements streamed, want more", len(elems))
			}
			e := elems[i]
			i++
			if e.In.Start != c.Start || e.In.End != c.End || e.Index != k {
				t.Fatalf("element %d: in [%d,%d) #%d, want [%d,%d) #%d", i, e.In.Start, e.In.End, e.Index, c.Start, c.End, k)
			}
			w := c.Items
			if c.Type == Object {
				if e.Key != c.Keys[k].Key || e.KeyStart != c.Keys[k].KeyStart {
					t.Fatalf("element %d: key %q@%d want %q@%d", i, e.Key, e.KeyStart, c.Keys[k].Key, c.Keys[k].KeyStart)
				}
				if diff := sameValue(e.Val, c.Keys[k].Val, true); diff != "" {
					t.Fatalf("element %d: %s", i, diff)
				}
				continue
			}
			if diff := sameValue(e.Val, w[k], true); diff != "" {
				t.Fatalf("element %d: %s", i, diff)
			}
		}
	}
	if i != len(elems) {
		t.Fatalf("%d elements streamed, want %d", len(elems), i)
	}
}

func TestWalkShapes(t *testing.T) {
	doc := `{"agent": {"name": "x", "memory": {"_s": "", "content": [[{"id": "a", "content": "h\"i\\"}, []], 3, {"k": [1, {"z": null}]}]}, "toolkit": {"g": []}}, "agent": {"memory": {"content": []}}, "n": -1.5e3, "t": true, "l": [1, 2]}`
	shapes := []Shape{
		{}, {Root: true}, {Items: []string{"agent", "memory", "content"}},
		{Items: []string{"agent", "memory", "content"}, Keep: [][]string{{"l"}, {"agent", "toolkit"}}},
		{Items: []string{"agent"}}, {Items: []string{"l"}}, {Items: []string{"n"}}, {Items: []string{"missing", "x"}},
	}
	for _, in := range []string{doc, `[1, "a", {"b": 2}]`, `"s"`, ` 12 `, `{}`, `[]`, "{\n\"a\" :\t[ ]\r\n}\n"} {
		for _, s := range shapes {
			t.Run(fmt.Sprintf("%.20s/%v", in, s), func(t *testing.T) { checkWalk(t, []byte(in), Dialect{}, s) })
		}
	}
}

// randDoc is a document of about size bytes whose "messages" hold strings with escapes,
// multi-byte UTF-8 and (long) strings over the window and the cut sizes.
func randDoc(r *rand.Rand, size int) []byte {
	var b strings.Builder
	b.WriteString(`{"session_id": "s\u00e9", "messages": [`)
	alphabet := []string{"a", "b", " ", `\"`, `\\`, `\n`, `\u00e9`, "é", "中", "😀", `"`, "{", "}", "[", "]"}
	for i := 0; b.Len() < size; i++ {
		if i > 0 {
			b.WriteString(", ")
		}
		n := r.Intn(200)
		switch r.Intn(50) {
		case 0:
			n = WalkCut + r.Intn(3*WalkCut)
		case 1:
			n = WalkInline + r.Intn(WalkInline)
		}
		b.WriteString(`{"role": "user", "content": "`)
		for k := 0; k < n; {
			a := alphabet[r.Intn(len(alphabet))]
			switch a {
			case `"`, "{", "}", "[", "]":
				if a == `"` {
					a = `\"`
				}
			}
			b.WriteString(a)
			k += len(a)
		}
		fmt.Fprintf(&b, `", "n": %d, "x": [{"deep": [%d, "]}"]}]}`, i, i)
	}
	b.WriteString(`], "children_ids": ["a", "b"], "title": "t"}`)
	return []byte(b.String())
}

func TestWalkAcrossWindows(t *testing.T) {
	r := rand.New(rand.NewSource(7))
	for _, size := range []int{10, 3 * walkChunk, 6 * WalkInline} {
		b := randDoc(r, size)
		if err := Valid(b, Dialect{}); err != nil {
			t.Fatalf("generated document is not valid: %v", err)
		}
		for _, s := range []Shape{{Items: []string{"messages"}, Keep: [][]string{{"children_ids"}}}, {Root: true}, {}} {
			checkWalk(t, b, Dialect{}, s)
		}
	}
}

// A value whose skeleton is over WalkLimit fails the walk with ErrTooLarge.
func TestWalkTooLarge(t *testing.T) {
	var b strings.Builder
	b.WriteString(`{"messages": [[`)
	for i := 0; b.Len() < WalkLimit+WalkInline; i++ {
		fmt.Fprintf(&b, `{"k": %d},`, i)
	}
	b.WriteString(`1]]}`)
	if _, _, err := WalkBytes([]byte(b.String()), Dialect{}, Shape{Items: []string{"messages"}}, func(Elem) {}); err != ErrTooLarge {
		t.Fatalf("err = %v, want ErrTooLarge", err)
	}
}

// A document whose objects on the path hold more members than WalkMembers fails the walk
// with ErrTooLarge, however small each member: memory stays bounded.
func TestWalkTooManyMembers(t *testing.T) {
	var b strings.Builder
	b.WriteString(`{"messages": [],`)
	for i := 0; i <= WalkMembers; i++ {
		fmt.Fprintf(&b, `"k%d": 1,`, i)
	}
	b.WriteString(`"z": 0}`)
	if _, _, err := WalkBytes([]byte(b.String()), Dialect{}, Shape{Items: []string{"messages"}}, func(Elem) {}); err != ErrTooLarge {
		t.Fatalf("err = %v, want ErrTooLarge", err)
	}
}

// FuzzWalk: on any valid input the walk builds what Parse builds; on any input it returns.
func FuzzWalk(f *testing.F) {
	addSeeds(f)
	f.Fuzz(func(t *testing.T, b []byte) {
		for _, d := range []Dialect{{}, {NonFinite: true, Surrogates: true}, {Lossy: true}} {
			if Valid(b, d) != nil {
				_, _, _ = WalkBytes(b, d, Shape{Root: true}, nil)
				continue
			}
			checkWalk(t, b, d, Shape{Root: true})
			checkWalk(t, b, d, Shape{})
			// Read a few bytes at a time: every window ends anywhere (in an escape, a run
			// of backslashes, a character's bytes).
			if got, _, err := Walk(shortReads{b, rand.New(rand.NewSource(int64(len(b))))}, int64(len(b)), d, Shape{}, nil); err != nil {
				t.Fatalf("walk through short reads: %v", err)
			} else if want, _ := Parse(b, d); sameValue(got, want, true) != "" {
				t.Fatalf("walk through short reads: %s", sameValue(got, want, true))
			}
			if root, err := Parse(b, d); err == nil && root.Type == Object && len(root.Keys) > 0 {
				checkWalk(t, b, d, Shape{Items: []string{root.Keys[0].Key}, Keep: [][]string{{root.Keys[len(root.Keys)-1].Key}}})
			}
		}
	})
}

// BenchmarkWalk: a pass over a 16 MB history of short messages, element by element.
func BenchmarkWalk(b *testing.B) {
	doc := randDoc(rand.New(rand.NewSource(3)), 16<<20)
	s := Shape{Items: []string{"messages"}, Keep: [][]string{{"children_ids"}}}
	b.SetBytes(int64(len(doc)))
	for b.Loop() {
		if _, _, err := WalkBytes(doc, Dialect{}, s, func(Elem) {}); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkWalkValid is the validation a walk comes after, for comparison.
func BenchmarkWalkValid(b *testing.B) {
	doc := randDoc(rand.New(rand.NewSource(3)), 16<<20)
	b.SetBytes(int64(len(doc)))
	for b.Loop() {
		if err := Valid(doc, Dialect{}); err != nil {
			b.Fatal(err)
		}
	}
}

// An element built to a depth, or shallow, is Parse's element cut there: the same type,
// bounds and members down to that depth.
func TestWalkElemDepth(t *testing.T) {
	doc := []byte(`{"m": [{"a": {"b": {"c": 1}}, "s": "x"}, [1, [2, [3]]], "s", 7, {"k": [{"z": true}]}]}`)
	for _, s := range []Shape{{Items: []string{"m"}, ElemDepth: 1}, {Items: []string{"m"}, ElemDepth: 2}, {Items: []string{"m"}, ElemShallow: true}} {
		root, err := Parse(doc, Dialect{})
		if err != nil {
			t.Fatal(err)
		}
		want := root.Get("m").Items
		i := 0
		_, _, err = WalkBytes(doc, Dialect{}, s, func(e Elem) {
			depth := s.ElemDepth
			if s.ElemShallow {
				depth = -1
			}
			if d := sameToDepth(e.Val, want[i], depth); d != "" {
				t.Errorf("%+v element %d: %s", s, i, d)
			}
			i++
		})
		if err != nil || i != len(want) {
			t.Fatalf("%+v: %d elements, %v", s, i, err)
		}
	}
}

// sameToDepth compares got with want down to depth levels of containers (-1: type and
// bounds only), and checks that got holds nothing deeper.
func sameToDepth(got, want *Value, depth int) string {
	if got.Type != want.Type || got.Start != want.Start || got.End != want.End {
		return fmt.Sprintf("%v [%d,%d) want %v [%d,%d)", got.Type, got.Start, got.End, want.Type, want.Start, want.End)
	}
	if got.Type != Array && got.Type != Object {
		if depth < 0 || got.Str == want.Str {
			return ""
		}
		return "scalar differs"
	}
	if depth <= 0 {
		if len(got.Items)+len(got.Keys) > 0 {
			return "built deeper than asked"
		}
		return ""
	}
	if len(got.Items) != len(want.Items) || len(got.Keys) != len(want.Keys) {
		return "members differ"
	}
	for i := range got.Items {
		if d := sameToDepth(got.Items[i], want.Items[i], depth-1); d != "" {
			return d
		}
	}
	for i := range got.Keys {
		if d := sameToDepth(got.Keys[i].Val, want.Keys[i].Val, depth-1); d != "" {
			return d
		}
	}
	return ""
}
