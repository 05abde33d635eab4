package jsonv

import (
	"bytes"
	"fmt"
	"hash/fnv"
	"math"
	"strings"
	"sync"
	"testing"
)

// checkFields compares the tree ParseFields built with f against Parse's tree of the same
// input: the same types, bounds and scalars wherever f builds, the named members alone, no
// string decoded where f says Opaque.
func checkFields(t testing.TB, b []byte, full, got *Value, f *Fields) {
	t.Helper()
	if got == nil || got.Type != full.Type || got.Start != full.Start || got.End != full.End {
		t.Fatalf("ParseFields(%q): %+v, Parse %+v", b, got, full)
	}
	switch full.Type {
	case String:
		want := full.Str
		if f != nil && f.Opaque {
			want = ""
		}
		if got.Str != want {
			t.Fatalf("ParseFields(%q): string at %d = %q, want %q", b, full.Start, got.Str, want)
		}
	case Number:
		if got.IsInt != full.IsInt || got.Int != full.Int || (got.Num != full.Num && !(math.IsNaN(got.Num) && math.IsNaN(full.Num))) {
			t.Fatalf("ParseFields(%q): number at %d = %+v, Parse %+v", b, full.Start, got, full)
		}
	case Bool:
		if got.Bool != full.Bool {
			t.Fatalf("ParseFields(%q): bool at %d", b, full.Start)
		}
	case Object:
		var want []Member
		if f != nil && f.Members != nil {
			for _, m := range full.Keys {
				if _, ok := f.Members[m.Key]; ok {
					want = append(want, m)
				}
			}
		}
		if len(got.Keys) != len(want) {
			t.Fatalf("ParseFields(%q): object at %d has %d members, want %d", b, full.Start, len(got.Keys), len(want))
		}
		for k, m := range want {
			if g := got.Keys[k]; g.Key != m.Key || g.KeyStart != m.KeyStart {
				t.Fatalf("ParseFields(%q): member %d = %q at %d, want %q at %d", b, k, g.Key, g.KeyStart, m.Key, m.KeyStart)
			}
			checkFields(t, b, m.Val, got.Keys[k].Val, f.Members[m.Key])
		}
	case Array:
		n := 0
		if f != nil && f.Items != nil {
			n = len(full.Items)
		}
		if len(got.Items) != n {
			t.Fatalf("ParseFields(%q): array at %d has %d items, want %d", b, full.Start, len(got.Items), n)
		}
		for k := 0; k < n; k++ {
			checkFields(t, b, full.Items[k], got.Items[k], f.Items)
		}
	}
}

// fieldsOf is a Fields naming about half of the keys of v's first levels (which, the hash of
// each key and seed decides), opaque strings where the hash says so.
func fieldsOf(v *Value, depth int, seed byte) *Fields {
	if v == nil || depth == 0 {
		return nil
	}
	f := &Fields{Opaque: seed&4 != 0}
	switch v.Type {
	case Object:
		f.Members = map[string]*Fields{}
		for _, m := range v.Keys {
			h := fnv.New32a()
			h.Write([]byte{seed})
			h.Write([]byte(m.Key))
			if s := h.Sum32(); s%3 != 0 {
				f.Members[m.Key] = fieldsOf(m.Val, depth-1, byte(s>>8))
			}
		}
	case Array:
		if len(v.Items) > 0 && seed&1 == 0 {
			f.Items = fieldsOf(v.Items[0], depth-1, seed+1)
		}
	case String:
	default:
		return nil
	}
	return f
}

func FuzzParseFields(f *testing.F) {
	addSeeds(f)
	f.Add([]byte(`{"type":"assistant","message":{"role":"assistant","content":[{"type":"text","text":"a\nb"},{"type":"tool_use","id":"t1"}]},"uuid":"u","type":"user"}`))
	var arenaMu sync.Mutex
	var arena, keyed Arena // reused from one input to the next, as a checklist reuses it
	var keys []int32
	f.Fuzz(func(t *testing.T, b []byte) {
		seed := byte(len(b))
		arenaMu.Lock()
		defer arenaMu.Unlock()
		for _, d := range []Dialect{plain, {NonFinite: true, Surrogates: true, Lossy: true}} {
			full, err := Parse(b, d)
			// ValidTop says what Valid says, and gives the keys of a top-level object.
			if terr, verr := ValidTop(b, d, &keys), Valid(b, d); fmt.Sprint(terr) != fmt.Sprint(verr) {
				t.Fatalf("ValidTop(%q) = %v, Valid %v", b, terr, verr)
			} else if verr == nil {
				var want []int32
				if full.Type == Object {
					for _, m := range full.Keys {
						want = append(want, int32(m.KeyStart))
					}
				}
				if fmt.Sprint(keys) != fmt.Sprint(want) {
					t.Fatalf("ValidTop(%q) keys %v, want %v", b, keys, want)
				}
			}
			if err != nil {
				if _, ferr := ParseFields(b, d, &Fields{}); ferr == nil || ferr.Error() != err.Error() {
					t.Fatalf("ParseFields(%q) = %v, Parse %v", b, ferr, err)
				}
				continue
			}
			checkSkip(t, b, full)
			for _, fl := range []*Fields{nil, {Opaque: true}, fieldsOf(full, 4, seed), fieldsOf(full, 2, seed+7)} {
				got, err := ParseFields(b, d, fl)
				if err != nil {
					t.Fatal(err)
				}
				checkFields(t, b, full, got, fl)
				want := ParseFieldsValid(b, d, fl)
				checkFields(t, b, full, want, fl)
				inArena := arena.ParseFieldsValid(b, d, fl)
				checkFields(t, b, full, inArena, fl)
				if treeText(inArena) != treeText(want) {
					t.Fatalf("Arena.ParseFieldsValid(%q) = %+v, ParseFieldsValid %+v", b, inArena, want)
				}
				if err := ValidTop(b, d, &keys); err != nil {
					t.Fatal(err)
				}
				if k := keyed.ParseFieldsKeys(b, d, fl, keys); treeText(k) != treeText(want) {
					t.Fatalf("Arena.ParseFieldsKeys(%q) = %s, ParseFieldsValid %s", b, treeText(k), treeText(want))
				}
				if k := keyed.ParseFieldsKeys(b, d, fl, nil); treeText(k) != treeText(want) {
					t.Fatalf("Arena.ParseFieldsKeys(%q, no keys) = %s, ParseFieldsValid %s", b, treeText(k), treeText(want))
				}
			}
		}
	})
}

func TestParseFields(t *testing.T) {
	doc := []byte(`{"type":"assistant","big":"` + strings.Repeat(`x\n`, 1000) + `","message":{"role":"assistant",` +
		`"content":[{"type":"text","text":"hello \"you\""},{"type":"tool_use","id":"t\u0031","input":{"a":[1,2]}}]},"n":-1.5e3,"k\\ey":true,"type":"user"}`)
	blocks := &Fields{Members: map[string]*Fields{"type": nil, "id": nil}}
	f := &Fields{Members: map[string]*Fields{
		"type":    nil,
		"message": {Members: map[string]*Fields{"role": {Opaque: true}, "content": {Items: blocks, Opaque: true}}},
		"n":       nil,
		"k\\ey":   nil,
	}}
	v, err := ParseFields(doc, Dialect{}, f)
	if err != nil {
		t.Fatal(err)
	}
	if got := v.Get("type").Str; got != "user" || len(v.Keys) != 5 {
		t.Fatalf("type %q, %d members (the last type wins, big left out)", got, len(v.Keys))
	}
	m := v.Get("message")
	if r := m.Get("role"); r.Type != String || r.Str != "" {
		t.Fatalf("role %+v: opaque", r)
	}
	c := m.Get("content")
	if len(c.Items) != 2 || c.Items[1].Get("id").Str != "t1" || c.Items[0].Get("text") != nil || c.Items[1].Get("input") != nil {
		t.Fatalf("content %+v", c.Items)
	}
	if n := v.Get("n"); n.Num != -1500 {
		t.Fatalf("n %+v", n)
	}
	if k := v.Get(`k\ey`); k == nil || !k.Bool {
		t.Fatalf(`k\ey %+v`, k)
	}
	// The tree does not share the input.
	s := c.Items[1].Get("type").Str
	clear(doc)
	if s != "tool_use" || !bytes.Equal([]byte(v.Get("type").Str), []byte("user")) {
		t.Fatalf("strings changed with the input: %q", s)
	}
}

// treeText is v's tree, every field of every node, as text (NaN equal to NaN).
func treeText(v *Value) string {
	if v == nil {
		return "nil"
	}
	var b strings.Builder
	fmt.Fprintf(&b, "{%v %d %d %v %q %v %v %d [", v.Type, v.Start, v.End, v.Bool, v.Str, v.Num, v.IsInt, v.Int)
	fmt.Fprintf(&b, "items %v:", v.Items == nil)
	for _, it := range v.Items {
		b.WriteString(treeText(it))
	}
	fmt.Fprintf(&b, "] [keys %v:", v.Keys == nil)
	for _, m := range v.Keys {
		fmt.Fprintf(&b, "%q@%d=%s", m.Key, m.KeyStart, treeText(m.Val))
	}
	b.WriteString("]}")
	return b.String()
}

// checkSkip: skipContainer, which the builds pass over a container with, ends every array and
// object of the whole tree v of b where the validating scan ends it.
func checkSkip(t *testing.T, b []byte, v *Value) {
	if v.Type != Array && v.Type != Object {
		return
	}
	if end := skipContainer(b, v.Start); end != v.End {
		t.Fatalf("skipContainer(%q, %d) = %d, want %d", b, v.Start, end, v.End)
	}
	for _, it := range v.Items {
		checkSkip(t, b, it)
	}
	for _, m := range v.Keys {
		checkSkip(t, b, m.Val)
	}
}
