package jsonv

import (
	"bytes"
	"encoding/json"
	"errors"
	"math"
	"reflect"
	"strconv"
	"strings"
	"testing"
	"unicode/utf16"
	"unicode/utf8"
)

func mustParse(t *testing.T, s string, d Dialect) (*Value, []byte) {
	t.Helper()
	b := []byte(s)
	v, err := Parse(b, d)
	if err != nil {
		t.Fatalf("Parse(%q): %v", s, err)
	}
	return v, b
}

func TestParseObject(t *testing.T) {
	v, b := mustParse(t, ` {"b": 1, "a": [true, false, null], "b": "two", "": {}} `, plain)
	if v.Type != Object || v.Start != 1 || v.End != len(b)-1 {
		t.Fatalf("root = %v [%d:%d]", v.Type, v.Start, v.End)
	}
	var keys []string
	for _, m := range v.Keys {
		keys = append(keys, m.Key)
		if b[m.KeyStart] != '"' {
			t.Errorf("KeyStart of %q points at %q", m.Key, b[m.KeyStart])
		}
	}
	if want := []string{"b", "a", "b", ""}; !reflect.DeepEqual(keys, want) {
		t.Errorf("keys = %q, want %q", keys, want)
	}
	if g := v.Get("b"); g == nil || g.Type != String || g.Str != "two" || string(g.Raw(b)) != `"two"` {
		t.Errorf(`Get("b") = %+v, want the last "b"`, g)
	}
	a := v.Get("a")
	if a == nil || a.Type != Array || len(a.Items) != 3 || string(a.Raw(b)) != `[true, false, null]` {
		t.Fatalf(`Get("a") = %+v`, a)
	}
	if it := a.Items; it[0].Type != Bool || !it[0].Bool || it[1].Type != Bool || it[1].Bool || it[2].Type != Null {
		t.Errorf("items = %+v %+v %+v", *it[0], *it[1], *it[2])
	}
	if string(a.Items[1].Raw(b)) != "false" || string(a.Items[2].Raw(b)) != "null" {
		t.Errorf("item spans: %q %q", a.Items[1].Raw(b), a.Items[2].Raw(b))
	}
	if e := v.Get(""); e == nil || e.Type != Object || len(e.Keys) != 0 || string(e.Raw(b)) != "{}" {
		t.Errorf(`Get("") = %+v`, e)
	}
	if v.Get("missing") != nil || a.Get("b") != nil || v.Get("a").Get("x").Get("y") != nil {
		t.Error("Get of a missing key, on an array, or on nil is not nil")
	}
	if v.Keys[0].KeyStart != 2 || v.Keys[1].KeyStart != 10 {
		t.Errorf("KeyStart = %d, %d", v.Keys[0].KeyStart, v.Keys[1].KeyStart)
	}
}

func TestParseNumbers(t *testing.T) {
	for _, c := range []struct {
		in    string
		num   float64
		isInt bool
		i     int64
	}{
		{`0`, 0, true, 0},
		{`-0`, 0, true, 0},
		{`42`, 42, true, 42},
		{`-17`, -17, true, -17},
		{`9223372036854775807`, 9223372036854775807, true, math.MaxInt64},
		{`-9223372036854775808`, -9223372036854775808, true, math.MinInt64},
		{`9223372036854775808`, 9223372036854775808, false, 0},
		{`1.0`, 1, false, 0},
		{`1e2`, 100, false, 0},
		{`-2.5E-3`, -0.0025, false, 0},
		{`1E400`, math.Inf(1), false, 0},
		{`-1e400`, math.Inf(-1), false, 0},
		{`1e-400`, 0, false, 0},
	} {
		v, b := mustParse(t, c.in, plain)
		if v.Type != Number || v.Num != c.num || v.IsInt != c.isInt || v.Int != c.i || string(v.Raw(b)) != c.in {
			t.Errorf("Parse(%s) = %v %v %v %v %q", c.in, v.Type, v.Num, v.IsInt, v.Int, v.Raw(b))
		}
	}
	v, b := mustParse(t, `[NaN, Infinity, -Infinity, 1]`, nonFin)
	if !math.IsNaN(v.Items[0].Num) || !math.IsInf(v.Items[1].Num, 1) || !math.IsInf(v.Items[2].Num, -1) {
		t.Errorf("non-finite = %v %v %v", v.Items[0].Num, v.Items[1].Num, v.Items[2].Num)
	}
	for k, want := range []string{"NaN", "Infinity", "-Infinity", "1"} {
		if it := v.Items[k]; it.Type != Number || string(it.Raw(b)) != want || it.IsInt != (want == "1") {
			t.Errorf("item %d = %+v %q", k, *it, it.Raw(b))
		}
	}
}

func TestParseStrings(t *testing.T) {
	for _, c := range []struct {
		in   string
		d    Dialect
		want string
	}{
		{`""`, plain, ""},
		{`"plain ascii"`, plain, "plain ascii"},
		{`"a\"b\\c\/d\b\f\n\r\te"`, plain, "a\"b\\c/d\b\f\n\r\te"},
		{`"\u00e9\u00E9 \u4e2d \u0000"`, plain, "éé 中 \x00"},
		{`"\ud83d\ude00 \uD83D\uDE00"`, plain, "😀 😀"},
		{"\"raw é 中 😀\"", plain, "raw é 中 😀"},
		{`"\ud800"`, plain, "\uFFFD"},
		{`"\udc00x"`, plain, "\uFFFDx"},
		{`"\ud800\u0041"`, plain, "\uFFFDA"},
		{`"\udc00\ud800"`, plain, "\uFFFD\uFFFD"},
		{`"\ud800\ud800\udc00"`, plain, "\uFFFD\U00010000"},
		{`"\ud800\n"`, plain, "\uFFFD\n"},
		{`"x\ud800"`, plain, "x\uFFFD"},
		{"\"a\xed\xa0\x80b\\n\"", surr, "a\uFFFDb\n"},
		{"\"a\xed\xa0\x80b\"", surr, "a\uFFFDb"},
		{"\"\xed\x9f\xbf\"", surr, "\ud7ff"},
	} {
		v, b := mustParse(t, c.in, c.d)
		if v.Type != String || v.Str != c.want || string(v.Raw(b)) != c.in {
			t.Errorf("Parse(%s).Str = %q, want %q", c.in, v.Str, c.want)
		}
	}
	v, _ := mustParse(t, `{"k\u00e9\n": 1}`, plain)
	if v.Keys[0].Key != "ké\n" || v.Get("ké\n") == nil {
		t.Errorf("escaped key = %q", v.Keys[0].Key)
	}
}

func TestParseErrors(t *testing.T) {
	for _, c := range validCases {
		if c.kind == valid {
			continue
		}
		v, err := Parse([]byte(c.in), c.d)
		var e *Error
		if v != nil || !errors.As(err, &e) || e.Kind != c.kind || e.Offset != c.off {
			t.Errorf("Parse(%q) = %v, %v; want %s at %d", c.in, v, err, c.kind, c.off)
		}
	}
	deep := bytes.Repeat([]byte("["), 100000)
	if _, err := Parse(deep, plain); err == nil || err.(*Error).Kind != ErrTooDeep {
		t.Errorf("Parse(100000 brackets) = %v", err)
	}
}

// checkSpans walks the tree and checks every node's span against the input.
func checkSpans(t testing.TB, v *Value, b []byte, d Dialect) {
	raw := v.Raw(b)
	if len(raw) == 0 || isWS[raw[0]] || isWS[raw[len(raw)-1]] {
		t.Fatalf("span [%d:%d] = %q", v.Start, v.End, raw)
	}
	if err := Valid(raw, d); err != nil {
		t.Fatalf("span [%d:%d] = %q is not a value: %v", v.Start, v.End, raw, err)
	}
	for _, it := range v.Items {
		checkSpans(t, it, b, d)
	}
	for _, m := range v.Keys {
		end, err := FirstValue(b[m.KeyStart:], d)
		if err != nil || b[m.KeyStart] != '"' {
			t.Fatalf("KeyStart %d: %d, %v", m.KeyStart, end, err)
		}
		if k, err := Parse(b[m.KeyStart:m.KeyStart+end], d); err != nil || k.Str != m.Key {
			t.Fatalf("key at %d = %q, want %q (%v)", m.KeyStart, k.Str, m.Key, err)
		}
		checkSpans(t, m.Val, b, d)
	}
}

// toAny converts v the way encoding/json decodes into an any (last duplicate key wins).
func toAny(v *Value) any {
	switch v.Type {
	case Bool:
		return v.Bool
	case Number:
		return v.Num
	case String:
		return v.Str
	case Array:
		a := make([]any, len(v.Items))
		for k, it := range v.Items {
			a[k] = toAny(it)
		}
		return a
	case Object:
		m := make(map[string]any, len(v.Keys))
		for _, kv := range v.Keys {
			m[kv.Key] = toAny(kv.Val)
		}
		return m
	}
	return nil
}

func TestParseMatchesEncodingJSON(t *testing.T) {
	docs := []string{sampleDoc, `[1,"\ud800",{"a":1,"a":[2]}]`}
	for _, b := range sampleFiles(t) {
		if Valid(b, plain) == nil {
			docs = append(docs, string(b))
		}
	}
	for _, s := range docs {
		b := []byte(s)
		v, err := Parse(b, plain)
		if err != nil {
			t.Fatalf("Parse(%.60q): %v", s, err)
		}
		checkSpans(t, v, b, plain)
		var want any
		if err := json.Unmarshal(b, &want); err != nil {
			t.Fatalf("json.Unmarshal(%.60q): %v", s, err)
		}
		if got := toAny(v); !reflect.DeepEqual(got, want) {
			t.Errorf("Parse(%.60q) differs from encoding/json:\n got %v\nwant %v", s, got, want)
		}
	}
}

func TestTypeString(t *testing.T) {
	for ty, want := range map[Type]string{Null: "null", Bool: "bool", Number: "number", String: "string", Array: "array", Object: "object", 9: "Type(9)"} {
		if got := ty.String(); got != want {
			t.Errorf("%d.String() = %q, want %q", ty, got, want)
		}
	}
}

// refUnquote decodes the valid string literal s a byte at a time, as the specification
// reads: an escape, a raw UTF-8 surrogate (with surr) or a lone escaped one is U+FFFD.
func refUnquote(s []byte, surr bool) string {
	var out []byte
	for j := 1; j < len(s)-1; {
		c := s[j]
		switch {
		case surr && c == 0xED && s[j+1] >= 0xA0:
			out = utf8.AppendRune(out, utf8.RuneError)
			j += 3
		case c != '\\':
			out = append(out, c)
			j++
		case s[j+1] != 'u':
			out = append(out, unescape[s[j+1]])
			j += 2
		default:
			r, _ := strconv.ParseUint(string(s[j+2:j+6]), 16, 32)
			j += 6
			ru := rune(r)
			if utf16.IsSurrogate(ru) {
				r2 := rune(-1)
				if ru < 0xDC00 && j+6 <= len(s) && s[j] == '\\' && s[j+1] == 'u' {
					x, _ := strconv.ParseUint(string(s[j+2:j+6]), 16, 32)
					r2 = rune(x)
				}
				if 0xDC00 <= r2 && r2 < 0xE000 {
					ru = utf16.DecodeRune(ru, r2)
					j += 6
				} else {
					ru = utf8.RuneError
				}
			}
			out = utf8.AppendRune(out, ru)
		}
	}
	return string(out)
}

// checkStrings compares every string and key of the tree with refUnquote of its bytes.
func checkStrings(t testing.TB, v *Value, b []byte, surr bool) {
	if v.Type == String {
		if want := refUnquote(v.Raw(b), surr); v.Str != want {
			t.Fatalf("string %q decoded %q, want %q", v.Raw(b), v.Str, want)
		}
	}
	for _, it := range v.Items {
		checkStrings(t, it, b, surr)
	}
	for _, m := range v.Keys {
		end, _ := FirstValue(b[m.KeyStart:], Dialect{Surrogates: surr})
		if want := refUnquote(b[m.KeyStart:m.KeyStart+end], surr); m.Key != want {
			t.Fatalf("key %q decoded %q, want %q", b[m.KeyStart:m.KeyStart+end], m.Key, want)
		}
		checkStrings(t, m.Val, b, surr)
	}
}

func TestParseStringsEscapesAndSurrogates(t *testing.T) {
	long := strings.Repeat(`ab\n\"\\`, 5000)
	for _, doc := range []string{
		`"` + long + `"`,
		`{"k\"ey":"\ud83d\ude00 \ud800 x \u00e9\/"}`,
		"[\"\xed\xa0\x80 \\n \xed\x9f\xbf\", \"\\\\\\\"\"]",
		`["\\", "a\\\\\\"b", "` + strings.Repeat(`\\`, 1000) + `"]`,
	} {
		for _, surr := range []bool{false, true} {
			d := Dialect{Surrogates: surr}
			if Valid([]byte(doc), d) != nil {
				continue
			}
			v, err := Parse([]byte(doc), d)
			if err != nil {
				t.Fatal(err)
			}
			checkStrings(t, v, []byte(doc), surr)
		}
	}
}
