package jsonv

import (
	"bytes"
	"fmt"
	"math/rand"
	"strings"
	"testing"
)

// render is v as text, every field a walk fills: what a value was while elem had it.
func render(v *Value) string {
	if v == nil {
		return "nil"
	}
	var b strings.Builder
	fmt.Fprintf(&b, "%d[%d,%d)%v%q%v%v%d", v.Type, v.Start, v.End, v.Bool, v.Str, v.Num, v.IsInt, v.Int)
	for _, it := range v.Items {
		b.WriteString("(" + render(it) + ")")
	}
	for _, m := range v.Keys {
		fmt.Fprintf(&b, "{%q@%d:%s}", m.Key, m.KeyStart, render(m.Val))
	}
	return b.String()
}

// walkText is a walk of r (size bytes) as text: its root, each element and what it learned.
func walkText(first bool, r *bytes.Reader, size int64, s Shape) (string, WalkInfo, error) {
	var out strings.Builder
	elem := func(e Elem) {
		fmt.Fprintf(&out, "in %d@%d #%d %q@%d: %s\n", e.In.Type, e.In.Start, e.Index, e.Key, e.KeyStart, render(e.Val))
	}
	var a Arena
	walk := a.Walk
	if first {
		walk = a.WalkFirst
	}
	root, info, err := walk(r, size, Dialect{}, s, elem)
	out.WriteString("root " + render(root))
	return out.String(), info, err
}

// TestWalkFirstIsTheValuesWalk: WalkFirst of a value followed by other bytes builds and hands
// over what the walk of the value alone does, and learns the same (a '\n' in the value only,
// where it ends); of a value alone, what Walk does.
func TestWalkFirstIsTheValuesWalk(t *testing.T) {
	r := rand.New(rand.NewSource(11))
	docs := []string{`{"agent": {"name": "x", "memory": {"content": [[{"id": "a", "content": "h\"i\\"}, []], 3]}}, "n": -1.5e3, "l": [1, 2]}`,
		`[1, "a", {"b": 2}]`, `"s"`, ` 12`, `{}`, "{\n\"a\" :\t[ ]\r\n}"}
	for _, size := range []int{10, 3 * walkChunk, 3 * WalkInline} {
		docs = append(docs, string(randDoc(r, size)))
	}
	shapes := []Shape{{}, {Root: true}, {Items: []string{"messages"}, Keep: [][]string{{"children_ids"}}}, {Items: []string{"agent", "memory", "content"}}}
	for i, doc := range docs {
		for _, tail := range []string{"", "  \n", "x", "\n}garbage\n", " \t,{\"a\":1}", `"ion-2"}]}}` + "\n"} {
			in := []byte(doc + tail)
			trailing := strings.TrimSpace(tail) != ""
			for _, s := range shapes {
				want, wantInfo, werr := walkText(false, bytes.NewReader([]byte(doc)), int64(len(doc)), s)
				if !trailing {
					want, wantInfo, werr = walkText(false, bytes.NewReader(in), int64(len(in)), s)
				}
				got, info, err := walkText(true, bytes.NewReader(in), int64(len(in)), s)
				if err != nil && !strings.ContainsAny(strings.TrimSpace(doc)[:1], "{[") {
					continue // a scalar glued to what follows it is no value it can end: an error, never another walk
				}
				if werr != nil {
					t.Fatalf("doc %d: the walk of the value: %v", i, werr)
				}
				if err != nil || got != want || info.Newline != wantInfo.Newline || info.Trailing != trailing || info.End != wantInfo.End {
					t.Fatalf("doc %d, tail %q, shape %v: WalkFirst %+v (%v), the value's walk %+v\ngot  %.400s\nwant %.400s", i, tail, s, info, err, wantInfo, got, want)
				}
			}
		}
	}
	// Any other input: the same errors as Walk, where there is no value to end.
	for _, in := range []string{"", "  ", "{", `{"a": }`, "x"} {
		if _, _, err := walkText(true, bytes.NewReader([]byte(in)), int64(len(in)), Shape{}); err == nil {
			t.Fatalf("WalkFirst of %q: no error", in)
		}
	}
}
