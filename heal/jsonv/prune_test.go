package jsonv

import (
	"bufio"
	"bytes"
	"errors"
	"math"
	"strings"
	"testing"
)

func TestFieldsSkeleton(t *testing.T) {
	claude := &Fields{Members: map[string]*Fields{
		"type": nil, "uuid": nil,
		"message": {Members: map[string]*Fields{
			"role": {Opaque: true},
			"content": {Opaque: true, Items: &Fields{Members: map[string]*Fields{
				"type": nil, "id": nil,
			}}},
		}},
	}}
	for _, c := range []struct {
		in   string
		f    *Fields
		want string
	}{
		{`{"a":1,"b":[1,2,{"x":"y"}],"c":"abcdef","d":{"e":[]}}`, &Fields{Members: map[string]*Fields{"a": nil}},
			`{"a":1,"b":[],"c":"","d":{}}`},
		{`{"a":1,"b":[1,2]}`, nil, `{"a":1,"b":[1,2]}`},
		{` { "a" : "abcdef" , "b" : true } `, &Fields{Members: map[string]*Fields{"a": nil}}, ` { "a" : "abcd" , "b" : true } `},
		{`{"a":"abcdef"}`, &Fields{Members: map[string]*Fields{"a": {Opaque: true}}}, `{"a":""}`},
		{`{"a":[{"k":1,"z":[9]},"s",[1]]}`, &Fields{Members: map[string]*Fields{"a": {Items: &Fields{Members: map[string]*Fields{"k": nil}}}}},
			`{"a":[{"k":1,"z":[]},"s",[]]}`},
		// A named key spelled with escapes is looked up as decoded, and kept whole; a key
		// that could spell a name (no longer than 6 bytes a name's byte) is not cut.
		{`{"\u0061bcdefgh":"xyzxyz","abcdefghi":"x"}`, &Fields{Members: map[string]*Fields{"abcdefgh": nil}}, `{"\u0061bcdefgh":"xyzx","abcdefghi":""}`},
		{`{"type":"user","toolUseResult":{"stdout":"` + strings.Repeat(`line\n`, 100) + `","lines":["a","b"]},"message":{"role":"user","content":[{"type":"tool_result","tool_use_id":"t","content":"ok"}]},"uuid":"u1"}`, claude,
			`{"type":"user","toolUseResult":{},"message":{"role":"","content":[{"type":"tool","tool_use_id":"","content":""}]},"uuid":"u1"}`},
	} {
		got, err := FieldsSkeleton(strings.NewReader(c.in), Dialect{}, c.f, 4, 1<<20)
		if err != nil || string(got) != c.want {
			t.Errorf("FieldsSkeleton(%s) = %s, %v; want %s", c.in, got, err, c.want)
		}
	}
	big := `{"a":1,"b":[` + strings.Repeat(`"abc",`, 1000) + `1]}`
	f := &Fields{Members: map[string]*Fields{"a": nil}}
	if got, err := FieldsSkeleton(strings.NewReader(big), Dialect{}, f, 3, 100); err != nil || string(got) != `{"a":1,"b":[]}` {
		t.Errorf("the skeleton of a value over the bound: %s, %v", got, err)
	}
	if _, err := FieldsSkeleton(strings.NewReader(big), Dialect{}, &Fields{Members: map[string]*Fields{"b": nil}}, 3, 100); !errors.Is(err, ErrTooLarge) {
		t.Errorf("a large skeleton: %v", err)
	}
}

// FuzzFieldsSkeleton: the skeleton under any Fields of any valid value is valid, no larger,
// Skeleton's under nil Fields, of the size FieldsSkeletonSize measures, the same through any
// buffer; and ParseFields of it with those Fields builds what it builds of the value, each
// value at the offset its cuts map back to, each string uncut the same.
func FuzzFieldsSkeleton(f *testing.F) {
	addSeeds(f)
	f.Add([]byte(`{"type":"assistant","message":{"role":"assistant","content":[{"type":"text","text":"a\nb"},{"type":"tool_use","id":"t1"}]},"uuid":"u","type":"user"}`))
	f.Add([]byte(`{"t\u0079pe":"x","\ud83d\ude00":[1,{"a":"\"]"}],"n":-1.5e3,"o":{"p":null}}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		seed := byte(len(b))
		for _, d := range []Dialect{plain, {NonFinite: true, Surrogates: true, Lossy: true}} {
			full, err := Parse(b, d)
			if err != nil {
				continue
			}
			for _, fl := range []*Fields{nil, {Opaque: true}, {}, fieldsOf(full, 4, seed), fieldsOf(full, 2, seed+7)} {
				for _, keep := range []int{int(seed % 6), 1 << 20} { // a cut that varies with the input, and none
					got, cuts, err := FieldsSkeletonCuts(bufio.NewReaderSize(bytes.NewReader(b), 16), d, fl, keep, 1<<20)
					if err != nil {
						t.Fatal(err)
					}
					if err := Valid(got, d); err != nil {
						t.Fatalf("FieldsSkeleton(%q, %d) = %q: %v", b, keep, got, err)
					}
					if len(got) > len(b) || cuts.Orig(len(got)) != len(b) {
						t.Fatalf("FieldsSkeleton(%q, %d) = %q, ends at %d", b, keep, got, cuts.Orig(len(got)))
					}
					if fl == nil {
						if want, _ := Skeleton(bytes.NewReader(b), keep, 1<<20); !bytes.Equal(got, want) {
							t.Fatalf("FieldsSkeleton(%q, %d, nil) = %q, Skeleton %q", b, keep, got, want)
						}
					}
					if again, err := FieldsSkeleton(bytes.NewReader(b), d, fl, keep, 1<<20); err != nil || !bytes.Equal(again, got) {
						t.Fatalf("FieldsSkeleton(%q, %d) = %q, %v; through 16 bytes %q", b, keep, again, err, got)
					}
					if n, err := FieldsSkeletonSize(bytes.NewReader(b), d, fl, keep, 1<<20); n != len(got) || err != nil {
						t.Fatalf("FieldsSkeletonSize(%q, %d) = %d, %v; want %d", b, keep, n, err, len(got))
					}
					if len(got) > 0 {
						_, err1 := FieldsSkeleton(bytes.NewReader(b), d, fl, keep, len(got)-1)
						_, err2 := FieldsSkeletonSize(bytes.NewReader(b), d, fl, keep, len(got)-1)
						if !errors.Is(err1, ErrTooLarge) || !errors.Is(err2, ErrTooLarge) {
							t.Fatalf("%q, keep %d, limit %d: %v and %v, want ErrTooLarge", b, keep, len(got)-1, err1, err2)
						}
					}
					want := ParseFieldsValid(b, d, fl)
					pruned, err := ParseFields(got, d, fl)
					if err != nil {
						t.Fatalf("ParseFields(%q): %v", got, err)
					}
					if msg := samePruned(want, pruned, cuts, fl, keep); msg != "" {
						t.Fatalf("FieldsSkeleton(%q, %d) = %q: %s", b, keep, got, msg)
					}
				}
			}
		}
	})
}

// samePruned compares what ParseFields built with f of a value (want) and of its skeleton
// (got, whose offsets cuts maps back): "" when they are the same but for strings cut at
// keep bytes (never to nothing, when keep is over 0).
func samePruned(want, got *Value, cuts Cuts, f *Fields, keep int) string {
	if got.Type != want.Type || cuts.Orig(got.Start) != want.Start || cuts.Orig(got.End) != want.End {
		return "a value at " + itoa(want.Start) + " is at " + itoa(cuts.Orig(got.Start)) + "–" + itoa(cuts.Orig(got.End)) + " in the skeleton, not " + itoa(want.Start) + "–" + itoa(want.End)
	}
	switch want.Type {
	case String:
		opaque := f != nil && f.Opaque
		if got.Str != want.Str && !opaque && (cuts.Whole(got.Start, got.End) || keep > 0 && got.Str == "") {
			return "the string at " + itoa(want.Start) + " is " + got.Str + ", not " + want.Str
		}
	case Number:
		if got.IsInt != want.IsInt || got.Int != want.Int || (got.Num != want.Num && !(math.IsNaN(got.Num) && math.IsNaN(want.Num))) {
			return "the number at " + itoa(want.Start) + " differs"
		}
	case Bool:
		if got.Bool != want.Bool {
			return "the literal at " + itoa(want.Start) + " differs"
		}
	case Object:
		if len(got.Keys) != len(want.Keys) {
			return "the object at " + itoa(want.Start) + " has " + itoa(len(got.Keys)) + " members built, not " + itoa(len(want.Keys))
		}
		for k, m := range want.Keys {
			g := got.Keys[k]
			if g.Key != m.Key || cuts.Orig(g.KeyStart) != m.KeyStart {
				return "member " + m.Key + " of the object at " + itoa(want.Start) + " is " + g.Key
			}
			var sub *Fields
			if f != nil {
				sub = f.Members[m.Key]
			}
			if msg := samePruned(m.Val, g.Val, cuts, sub, keep); msg != "" {
				return msg
			}
		}
	case Array:
		if len(got.Items) != len(want.Items) {
			return "the array at " + itoa(want.Start) + " has " + itoa(len(got.Items)) + " items built, not " + itoa(len(want.Items))
		}
		for k := range want.Items {
			var items *Fields
			if f != nil {
				items = f.Items
			}
			if msg := samePruned(want.Items[k], got.Items[k], cuts, items, keep); msg != "" {
				return msg
			}
		}
	}
	return ""
}

func itoa(n int) string {
	if n < 0 {
		return "-" + itoa(-n)
	}
	if n < 10 {
		return string(rune('0' + n))
	}
	return itoa(n/10) + string(rune('0'+n%10))
}
