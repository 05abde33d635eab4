package jsonv

import (
	"bytes"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/go-json-experiment/json/jsontext"
)

const valid = -1 // want.kind for inputs that must be accepted

var (
	plain  = Dialect{}
	nonFin = Dialect{NonFinite: true}
	surr   = Dialect{Surrogates: true}
	lossy  = Dialect{Lossy: true}
)

type validCase struct {
	in   string
	d    Dialect
	kind ErrKind // or valid
	off  int64
}

var validCases = []validCase{
	// Accepted.
	{`{}`, plain, valid, 0},
	{`[]`, plain, valid, 0},
	{`""`, plain, valid, 0},
	{`0`, plain, valid, 0},
	{`-0`, plain, valid, 0},
	{`-0.0e-0`, plain, valid, 0},
	{`1.5e+10`, plain, valid, 0},
	{`-1.0E-2`, plain, valid, 0},
	{`1E400`, plain, valid, 0},
	{`123456789012345678901234567890`, plain, valid, 0},
	{`true`, plain, valid, 0},
	{`false`, plain, valid, 0},
	{`null`, plain, valid, 0},
	{" \t\r\n{\"a\":1} \n", plain, valid, 0},
	{`{"a":1} `, plain, valid, 0},
	{`{"a":1,"a":2}`, plain, valid, 0},
	{`{ "a" : [ 1 , { "b" : null } ] , "c" : "d" }`, plain, valid, 0},
	{`[1,[2,[3,{}]],[],{"":""}]`, plain, valid, 0},
	{`"\"\\\/\b\f\n\r\t\u0000\u00e9\uD83D\uDE00"`, plain, valid, 0},
	{`"\ud800"`, plain, valid, 0},
	{`"\udc00x"`, plain, valid, 0},
	{`"\ud800\u0041"`, plain, valid, 0},
	{"\"é中😀\u007f\"", plain, valid, 0},
	{"\"\xed\x9f\xbf\"", plain, valid, 0}, // U+D7FF, just below the surrogates
	{"\"\xee\x80\x80\"", plain, valid, 0}, // U+E000, just above
	{"\"\xf4\x8f\xbf\xbf\"", plain, valid, 0},
	{"\"\xed\xa0\x80\"", surr, valid, 0},
	{"\"\xed\xbf\xbf\"", surr, valid, 0},
	{`NaN`, nonFin, valid, 0},
	{`Infinity`, nonFin, valid, 0},
	{`-Infinity`, nonFin, valid, 0},
	{`[NaN,-Infinity,Infinity,1]`, nonFin, valid, 0},
	{`{"x":NaN}`, nonFin, valid, 0},

	// Empty, whitespace, trailing data.
	{``, plain, ErrTruncated, 0},
	{"  \n\t", plain, ErrTruncated, 4},
	{`{"a":1}xyz`, plain, ErrTrailing, 7},
	{`{"a":1}{"b":2}`, plain, ErrTrailing, 7},
	{"{\"a\":1}\n\x00\x00", plain, ErrTrailing, 8},
	{"{\"a\":1}\xff", plain, ErrTrailing, 7},
	{`1 2`, plain, ErrTrailing, 2},
	{`12x`, plain, ErrTrailing, 2},
	{`01`, plain, ErrTrailing, 1},
	{`0x10`, plain, ErrTrailing, 1},
	{`truex`, plain, ErrTrailing, 4},
	{`"a""b"`, plain, ErrTrailing, 3},

	// Grammar.
	{`[1,]`, plain, ErrSyntax, 3},
	{`{"a":1,}`, plain, ErrSyntax, 7},
	{`[1 2]`, plain, ErrSyntax, 3},
	{`{'a':1}`, plain, ErrSyntax, 1},
	{`['a']`, plain, ErrSyntax, 1},
	{`{"a" 1}`, plain, ErrSyntax, 5},
	{`{"a":1 "b":2}`, plain, ErrSyntax, 7},
	{`{a:1}`, plain, ErrSyntax, 1},
	{`{1:1}`, plain, ErrSyntax, 1},
	{`{,}`, plain, ErrSyntax, 1},
	{`[,1]`, plain, ErrSyntax, 1},
	{`+1`, plain, ErrSyntax, 0},
	{`[01]`, plain, ErrSyntax, 2},
	{`[-01]`, plain, ErrSyntax, 3},
	{`.5`, plain, ErrSyntax, 0},
	{`[5.]`, plain, ErrSyntax, 3},
	{`1.e5`, plain, ErrSyntax, 2},
	{`1e+x`, plain, ErrSyntax, 3},
	{`-a`, plain, ErrSyntax, 1},
	{`- 1`, plain, ErrSyntax, 1},
	{`trux`, plain, ErrSyntax, 3},
	{`nul1`, plain, ErrSyntax, 3},
	{`True`, plain, ErrSyntax, 0},
	{`[truex]`, plain, ErrSyntax, 5},
	{`]`, plain, ErrSyntax, 0},
	{`}`, plain, ErrSyntax, 0},
	{`[}`, plain, ErrSyntax, 1},
	{`{]`, plain, ErrSyntax, 1},
	{`[1}`, plain, ErrSyntax, 2},
	{`{"a":1]`, plain, ErrSyntax, 6},
	{"// c\n{}", plain, ErrSyntax, 0},
	{`{"a":1 /* c */}`, plain, ErrSyntax, 7},
	{`"\x"`, plain, ErrSyntax, 2},
	{`"\'"`, plain, ErrSyntax, 2},
	{`"\U0041"`, plain, ErrSyntax, 2},
	{`"\u12g4"`, plain, ErrSyntax, 5},
	{"\"a\tb\"", plain, ErrSyntax, 2},
	{"\"a\nb\"", plain, ErrSyntax, 2},
	{"\"\x00\"", plain, ErrSyntax, 1},
	{"\"\x1f\"", plain, ErrSyntax, 1},
	{"\x00\x00\x00\x00", plain, ErrSyntax, 0},
	{"\xef\xbb\xbf{}", plain, ErrSyntax, 0},
	{"\xef\xbb\xbf{}", Dialect{NonFinite: true, Surrogates: true}, ErrSyntax, 0},
	{"[é]", plain, ErrSyntax, 1},
	// Lossy: a byte that is not UTF-8 is read as U+FFFD inside a string, an error outside.
	{"\"a\xffb\"", lossy, valid, 0},
	{"\"a\xffb\"", plain, ErrInvalidUTF8, 2},
	{"\"\xe2\x28\xa1\xed\xa0\x80\xc0\xaf\"", lossy, valid, 0},
	{"{\"k\":\"\xf0\x9f\x98\"}", lossy, valid, 0},
	{"[\xff]", lossy, ErrInvalidUTF8, 1},
	{"\"\xff\x01\"", lossy, ErrSyntax, 2},
	{"\u00a0{}", plain, ErrSyntax, 0},
	{"\f{}", plain, ErrSyntax, 0},
	{`NaN`, plain, ErrSyntax, 0},
	{`Infinity`, plain, ErrSyntax, 0},
	{`-Infinity`, plain, ErrSyntax, 1},
	{`[1,NaN]`, plain, ErrSyntax, 3},
	{`nan`, nonFin, ErrSyntax, 1},
	{`{NaN:1}`, nonFin, ErrSyntax, 1},
	{`+Infinity`, nonFin, ErrSyntax, 0},
	{`-NaN`, nonFin, ErrSyntax, 1},
	{`Infinityx`, nonFin, ErrTrailing, 8},
	{`Infinit`, nonFin, ErrTruncated, 7},
	{`Infinitx`, nonFin, ErrSyntax, 7},

	// Truncation.
	{`{`, plain, ErrTruncated, 1},
	{`[`, plain, ErrTruncated, 1},
	{`"`, plain, ErrTruncated, 1},
	{`"abc`, plain, ErrTruncated, 4},
	{`"a\`, plain, ErrTruncated, 3},
	{`"\u12`, plain, ErrTruncated, 5},
	{`"\ud800\`, plain, ErrTruncated, 8},
	{`[1,2`, plain, ErrTruncated, 4},
	{`[1,2,`, plain, ErrTruncated, 5},
	{`{"a":`, plain, ErrTruncated, 5},
	{`{"a"`, plain, ErrTruncated, 4},
	{`{"a":1,`, plain, ErrTruncated, 7},
	{`{"a":1 `, plain, ErrTruncated, 7},
	{`tru`, plain, ErrTruncated, 3},
	{`[f`, plain, ErrTruncated, 2},
	{`-`, plain, ErrTruncated, 1},
	{`1.`, plain, ErrTruncated, 2},
	{`1e`, plain, ErrTruncated, 2},
	{`1e+`, plain, ErrTruncated, 3},
	{`[-`, plain, ErrTruncated, 2},
	{`-Inf`, nonFin, ErrTruncated, 4},
	{`Na`, nonFin, ErrTruncated, 2},
	{"\"\xe2\x82", plain, ErrTruncated, 3}, // cut inside a multi-byte character
	{"\"\xf0\x9f\x98", plain, ErrTruncated, 4},
	{"\"\xed\xa0", surr, ErrTruncated, 3},

	// Invalid UTF-8.
	{"\"\xff\"", plain, ErrInvalidUTF8, 1},
	{"[\xff]", plain, ErrInvalidUTF8, 1},
	{"\xff", plain, ErrInvalidUTF8, 0},
	{"{\"a\xfe\":1}", plain, ErrInvalidUTF8, 3},
	{"\"ab\x80\"", plain, ErrInvalidUTF8, 3},
	{"\"\xc0\x80\"", plain, ErrInvalidUTF8, 1}, // overlong NUL
	{"\"\xc1\xbf\"", plain, ErrInvalidUTF8, 1},
	{"\"\xe0\x80\xaf\"", plain, ErrInvalidUTF8, 1}, // overlong '/'
	{"\"\xf0\x8f\xbf\xbf\"", plain, ErrInvalidUTF8, 1},
	{"\"\xf4\x90\x80\x80\"", plain, ErrInvalidUTF8, 1}, // above U+10FFFF
	{"\"\xf5\x80\x80\x80\"", plain, ErrInvalidUTF8, 1},
	{"\"\xe2\x82\"", plain, ErrInvalidUTF8, 1},
	{"\"\xe2(\xa1\"", plain, ErrInvalidUTF8, 1},
	{"\"é\xe9\"", plain, ErrInvalidUTF8, 3},
	{"\"\xed\xa0\x80\"", plain, ErrInvalidUTF8, 1}, // surrogate U+D800 encoded in UTF-8
	{"\"\xed\xbf\xbf\"", nonFin, ErrInvalidUTF8, 1},
	{"[\xed\xa0\x80]", plain, ErrInvalidUTF8, 1},
	{"[\xed\xa0\x80]", surr, ErrSyntax, 1},
	{"\"\xed\xa0\x80\xff\"", surr, ErrInvalidUTF8, 4},
	{`"\` + "\xff\"", plain, ErrInvalidUTF8, 2},
	{"\"0123456789abcdef\xff\"", plain, ErrInvalidUTF8, 17}, // found by the word-at-a-time path
	{"\"0123456789abcdef\x01\"", plain, ErrSyntax, 17},
}

func TestValid(t *testing.T) {
	for _, c := range validCases {
		checkValid(t, []byte(c.in), c.d, c.kind, c.off)
	}
}

func checkValid(t *testing.T, in []byte, d Dialect, kind ErrKind, off int64) {
	t.Helper()
	err := Valid(in, d)
	if kind == valid {
		if err != nil {
			t.Errorf("Valid(%.80q, %+v) = %v, want nil", in, d, err)
		}
		return
	}
	var e *Error
	if !errors.As(err, &e) {
		t.Errorf("Valid(%.80q, %+v) = %v, want %s at %d", in, d, err, kind, off)
		return
	}
	if e.Kind != kind || e.Offset != off {
		t.Errorf("Valid(%.80q, %+v) = %v, want %s at %d", in, d, err, kind, off)
	}
}

func TestErrorMessages(t *testing.T) {
	for _, c := range []struct{ in, want string }{
		{`{"a"x}`, `syntax at offset 4: invalid character 'x' after object key`},
		{`{"a":1}xyz`, `trailing-garbage at offset 7: invalid character 'x' after top-level value`},
		{`[1,]`, `syntax at offset 3: invalid character ']' looking for beginning of value`},
		{`{"a":1`, `truncated at offset 6: unexpected end of json input`},
		{"\"\xff\"", `invalid-utf8 at offset 1: invalid utf-8 byte 0xff`},
		{"\xef\xbb\xbf{}", `syntax at offset 0: invalid character U+FEFF (byte order mark) looking for beginning of value`},
		{"\x00", `syntax at offset 0: invalid character '\x00' looking for beginning of value`},
		{`trux`, `syntax at offset 3: invalid character 'x' in literal true (expecting 'e')`},
		{`{'a':1}`, `syntax at offset 1: invalid character '\'' looking for beginning of object key string`},
	} {
		if got := Valid([]byte(c.in), plain); got == nil || got.Error() != c.want {
			t.Errorf("Valid(%q) = %v, want %s", c.in, got, c.want)
		}
	}
	if s := ErrKind(42).String(); s != "ErrKind(42)" {
		t.Errorf("ErrKind(42).String() = %q", s)
	}
}

// sampleDoc starts with '{' and ends with '}', so every proper prefix is truncated.
const sampleDoc = `{"version": 3, "id": "s-1", "messages": [` +
	`{"role": "user", "content": "h\u00e9llo \"w\" \\ \ud83d\ude00 \/ end", "ts": 1712345678.25},` +
	"\r\t {\"role\":\"assistant\",\"content\":\"日本語 😀 é\",\"tokens\":[-12, 0, 3e5, -1.5E-3]," +
	`"ok": true, "err": false, "meta": null, "tags": [], "extra": {}}], "n": -0}`

func TestTruncatedAtEveryByte(t *testing.T) {
	for _, doc := range []struct {
		s string
		d Dialect
	}{
		{sampleDoc, plain},
		{`[NaN, -Infinity, Infinity, "x` + "\xed\xa0\x80" + `y"]`, Dialect{NonFinite: true, Surrogates: true}},
	} {
		b := []byte(doc.s)
		if err := Valid(b, doc.d); err != nil {
			t.Fatalf("sample doc: %v", err)
		}
		for k := 0; k < len(b); k++ {
			checkValid(t, b[:k], doc.d, ErrTruncated, int64(k))
			if end, err := FirstValue(b[:k], doc.d); err == nil || err.(*Error).Kind != ErrTruncated {
				t.Errorf("FirstValue(%q) = %d, %v, want truncated", b[:k], end, err)
			}
		}
	}
}

func TestDepth(t *testing.T) {
	deep := func(n int, open, close string) []byte {
		return []byte(strings.Repeat(open, n) + "1" + strings.Repeat(close, n))
	}
	for _, c := range []struct {
		name string
		in   []byte
		kind ErrKind
		off  int64
	}{
		{"arrays at the limit", deep(MaxDepth, "[", "]"), valid, 0},
		{"objects at the limit", deep(MaxDepth, `{"a":`, "}"), valid, 0},
		{"mixed at the limit", deep(MaxDepth/2, `[{"a":`, "}]"), valid, 0},
		{"one too deep", deep(MaxDepth+1, "[", "]"), ErrTooDeep, MaxDepth},
		{"100000 arrays", deep(100000, "[", "]"), ErrTooDeep, MaxDepth},
		{"100000 open arrays", []byte(strings.Repeat("[", 100000)), ErrTooDeep, MaxDepth},
		{"100000 objects", deep(100000, `{"":`, "}"), ErrTooDeep, MaxDepth * 4},
		{"empty at the limit", []byte(strings.Repeat("[", MaxDepth) + strings.Repeat("]", MaxDepth)), valid, 0},
		{"deep mismatch", []byte(strings.Repeat("[", 100) + strings.Repeat("]", 99) + "}"), ErrSyntax, 199},
		{"deep mixed mismatch", []byte(strings.Repeat(`[{"a":`, 50) + "1" + strings.Repeat("}]", 49) + "]}"), ErrSyntax, 399},
		{"deep mixed closed", []byte(strings.Repeat(`[{"a":`, 50) + "1" + strings.Repeat("}]", 50) + "]"), ErrTrailing, 401},
		{"deep truncated", []byte(strings.Repeat(`[{"a":`, 1000)), ErrTruncated, 6000},
	} {
		t.Run(c.name, func(t *testing.T) {
			checkValid(t, c.in, plain, c.kind, c.off)
			if _, err := Parse(c.in, plain); (err == nil) != (c.kind == valid) {
				t.Errorf("Parse: %v", err)
			}
			if strict := jsontext.Value(c.in).IsValid(strictOpts...); strict != (c.kind == valid) {
				t.Errorf("jsontext disagrees: IsValid = %v", strict)
			}
			if ok := json.Valid(c.in); ok != (c.kind == valid) {
				t.Errorf("encoding/json disagrees: Valid = %v", ok)
			}
		})
	}
}

func TestFirstValue(t *testing.T) {
	for _, c := range []struct {
		in   string
		end  int
		kind ErrKind // valid for a nil error
		off  int64
	}{
		{`{"a":1}{"a":`, 7, valid, 0},
		{"{\"a\":1}\n  }\n}", 7, valid, 0},
		{"  [1, 2]  garbage", 8, valid, 0},
		{`12x`, 2, valid, 0},
		{`"s"`, 3, valid, 0},
		{"\n\ntrue\n", 6, valid, 0},
		{`{"a":[1,2`, 9, ErrTruncated, 9},
		{``, 0, ErrTruncated, 0},
		{`   `, 3, ErrTruncated, 3},
		{`{"a":x}`, 5, ErrSyntax, 5},
		{"\"\xff\"", 1, ErrInvalidUTF8, 1},
		{strings.Repeat("[", MaxDepth+1), MaxDepth, ErrTooDeep, MaxDepth},
	} {
		end, err := FirstValue([]byte(c.in), plain)
		if c.kind == valid {
			if err != nil || end != c.end {
				t.Errorf("FirstValue(%.40q) = %d, %v, want %d, nil", c.in, end, err, c.end)
			}
			continue
		}
		e, ok := err.(*Error)
		if !ok || e.Kind != c.kind || e.Offset != c.off {
			t.Errorf("FirstValue(%.40q) = %d, %v, want %s at %d", c.in, end, err, c.kind, c.off)
		}
	}
}

func TestNoAllocs(t *testing.T) {
	doc := []byte(sampleDoc)
	jsonl := []byte(sampleDoc + "\n" + sampleDoc + "\r\n[1]\n")
	nested := bytes.Repeat([]byte(`{"k":[`), 32) // 64 levels
	nested = append(nested, "1"...)
	nested = append(nested, bytes.Repeat([]byte(`]}`), 32)...)
	if err := Valid(nested, plain); err != nil {
		t.Fatal(err)
	}
	for name, fn := range map[string]func(){
		"Valid":       func() { _ = Valid(doc, plain) },
		"Valid64deep": func() { _ = Valid(nested, plain) },
		"FirstValue":  func() { _, _ = FirstValue(doc, plain) },
		"Lines": func() {
			Lines(jsonl, func(_ int, line []byte, _ bool) bool {
				if Valid(line, plain) != nil {
					panic("invalid line")
				}
				return true
			})
		},
	} {
		if n := testing.AllocsPerRun(100, fn); n != 0 {
			t.Errorf("%s: %v allocations per run, want 0", name, n)
		}
	}
}

// A dialect's own nesting limit (serde_json's 127, V8's millions) holds for every walk —
// in memory, streamed — and a tree of a value deeper than MaxDepth is built no deeper than it.
func TestDialectDepth(t *testing.T) {
	deep := func(n int) []byte { return []byte(strings.Repeat("[", n) + strings.Repeat("]", n)) }
	serde := Dialect{MaxDepth: 127}
	v8 := Dialect{Lossy: true, MaxDepth: 1 << 24}
	for _, c := range []struct {
		name string
		d    Dialect
		n    int
		ok   bool
	}{
		{"serde at its limit", serde, 127, true},
		{"serde one past", serde, 128, false},
		{"v8 past MaxDepth", v8, 3 * MaxDepth, true},
		{"v8 deep", v8, 1 << 20, true},
		{"default past MaxDepth", Dialect{}, MaxDepth + 1, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			in := deep(c.n)
			err := Valid(in, c.d)
			if (err == nil) != c.ok || (!c.ok && err.(*Error).Kind != ErrTooDeep) {
				t.Fatalf("Valid: %v", err)
			}
			if _, err := ValidReader(bytes.NewReader(in), c.d, 4096, 1<<20); (err == nil) != c.ok {
				t.Errorf("ValidReader: %v", err)
			}
			v, err := Parse(in, c.d)
			if (err == nil) != c.ok {
				t.Fatalf("Parse: %v", err)
			}
			if !c.ok {
				return
			}
			// The arrays of the tree: every level up to MaxDepth, then one without children
			// that spans the rest.
			levels := 0
			for v != nil && v.Type == Array {
				levels++
				if len(v.Items) == 0 {
					break
				}
				v = v.Items[0]
			}
			if want := min(c.n, MaxDepth+1); levels != want || v.End-v.Start != 2*(c.n-levels+1) {
				t.Errorf("tree of %d levels, the last %d bytes; want %d", levels, v.End-v.Start, want)
			}
		})
	}
}
