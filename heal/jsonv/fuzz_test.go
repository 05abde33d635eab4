package jsonv

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"reflect"
	"regexp"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/go-json-experiment/json/jsontext"
)

var fuzzSeeds = []string{
	`{}`, `[]`, `""`, `0`, `-1.5e-3`, `true`, `null`, ` {"a" : [1, 2.0, -3e4, "x"] } `,
	`{"a":1,"a":2}`, `{"a":{"b":{"c":[[[]]]}}}`, `"\u0041\u00e9\u4e2d\ud83d\ude00"`,
	`"\ud800"`, `"\udc00\ud800"`, `"\\ud800"`, `"\ud800\\"`, `["\ud83d\ude00","\ude00"]`,
	"\"é中😀\"", "\xef\xbb\xbf{}", "\x00", "{\"a\":1}\x00", `{"a":1}{"a":`, "{\"a\":1}\n  }\n}",
	`[1,]`, `{"a":1,}`, `01`, `[01]`, `.5`, `1.`, `1e`, `-`, `+1`, `0x1F`, `NaN`, `-Infinity`,
	`'a'`, `{a:1}`, `// c`, `/* c */ 1`, "\"\t\"", "\"\xed\xa0\x80\"", "\"\xc0\x80\"", "\"\xf4\x90\x80\x80\"",
	"\"\xe2\x82", "[\xff]", `tru`, `truex`, `[truex]`, `{"a"}`, `{"a":}`, `[1 2]`, `"\x"`, `"\u12"`,
	"{\"role\":\"user\",\"content\":\"line1\\nline2 \\\"q\\\" \\u003cb\\u003e\"}\n",
	strings.Repeat("[", 65) + strings.Repeat("]", 65), strings.Repeat(`{"a":`, 70) + "1" + strings.Repeat("}", 70),
}

func addSeeds(f *testing.F) {
	for _, s := range fuzzSeeds {
		f.Add([]byte(s))
	}
	for _, c := range validCases {
		f.Add([]byte(c.in))
	}
	f.Add([]byte(sampleDoc))
	for rel, b := range sampleFiles(f) {
		f.Add(b)
		if strings.HasSuffix(rel, ".jsonl") {
			Lines(b, func(_ int, line []byte, _ bool) bool {
				f.Add(bytes.Clone(line))
				return true
			})
		}
	}
}

// escapedSurrogate over-approximates "contains an escaped surrogate" (it also matches an
// escaped backslash followed by "ud800").
var escapedSurrogate = regexp.MustCompile(`\\u[dD][89a-fA-F][0-9a-fA-F]{2}`)

var (
	strictOpts  = []jsontext.Options{jsontext.AllowDuplicateNames(true)}
	lenientOpts = []jsontext.Options{jsontext.AllowDuplicateNames(true), jsontext.AllowInvalidUTF8(true)}
)

// FuzzValid checks Valid and FirstValue against jsontext and encoding/json.
//
// jsontext with AllowInvalidUTF8 accepts raw invalid UTF-8 in strings and does not check that
// \u escapes pair up; it is otherwise as strict as without. So on input that is valid UTF-8 it
// differs from strict jsontext only on escaped lone surrogates, which is exactly where Valid
// is meant to differ: Valid must accept b iff lenient jsontext does and b is valid UTF-8.
func FuzzValid(f *testing.F) {
	addSeeds(f)
	f.Fuzz(func(t *testing.T, b []byte) {
		err := Valid(b, plain)
		ok := err == nil
		strict := jsontext.Value(b).IsValid(strictOpts...)
		lenient := jsontext.Value(b).IsValid(lenientOpts...)
		if want := lenient && utf8.Valid(b); ok != want {
			t.Fatalf("Valid(%q) = %v; jsontext strict=%v lenient=%v, utf8.Valid=%v", b, err, strict, lenient, utf8.Valid(b))
		}
		if strict && !ok {
			t.Fatalf("jsontext accepts %q, Valid = %v", b, err)
		}
		if ok && !strict && !escapedSurrogate.Match(b) {
			t.Fatalf("Valid accepts %q, jsontext rejects it, and it has no escaped surrogate", b)
		}
		if ok && !json.Valid(b) {
			t.Fatalf("Valid accepts %q, encoding/json rejects it", b)
		}
		if ok && Valid(b, Dialect{NonFinite: true, Surrogates: true}) != nil {
			t.Fatalf("a dialect rejects %q", b)
		}

		end, ferr := FirstValue(b, plain)
		if ok {
			if want := len(bytes.TrimRight(b, " \t\r\n")); ferr != nil || end != want {
				t.Fatalf("FirstValue(%q) = %d, %v; want %d, nil", b, end, ferr, want)
			}
			checkPrefixesTruncated(t, b)
			return
		}

		var e *Error
		if !errors.As(err, &e) || e.Offset < 0 || e.Offset > int64(len(b)) {
			t.Fatalf("Valid(%q) = %#v", b, err)
		}
		if e.Kind == ErrTruncated && e.Offset != int64(len(b)) {
			t.Fatalf("Valid(%q) = %v: truncation must be reported at len(b)", b, err)
		}
		if e.Kind == ErrTrailing {
			if ferr != nil || skipWS(b, end) != int(e.Offset) || end == 0 {
				t.Fatalf("Valid(%q) = %v but FirstValue = %d, %v", b, err, end, ferr)
			}
		} else if fe, _ := ferr.(*Error); fe == nil || *fe != *e {
			t.Fatalf("Valid(%q) = %v but FirstValue = %d, %v", b, err, end, ferr)
		}

		// Truncation as jsontext sees it: io.ErrUnexpectedEOF from reading the first value.
		if utf8.Valid(b) && len(bytes.TrimLeft(b, " \t\r\n")) > 0 && e.Kind != ErrTooDeep {
			_, rerr := jsontext.NewDecoder(bytes.NewReader(b), lenientOpts...).ReadValue()
			if jt := errors.Is(rerr, io.ErrUnexpectedEOF); jt != (e.Kind == ErrTruncated) {
				t.Fatalf("Valid(%q) = %v, jsontext ReadValue = %v", b, err, rerr)
			}
		}
	})
}

// checkPrefixesTruncated checks, for a small valid b, that every proper prefix of the value
// (after leading whitespace) is reported as truncated, except where the prefix is itself a
// complete top-level number.
func checkPrefixesTruncated(t *testing.T, b []byte) {
	v := bytes.TrimRight(b, " \t\r\n")
	start := skipWS(v, 0)
	if len(v) > 512 {
		return
	}
	for k := start; k < len(v); k++ {
		err := Valid(v[:k], plain)
		if e, _ := err.(*Error); e == nil || e.Kind != ErrTruncated || e.Offset != int64(k) {
			if err == nil && k > start && (v[start] == '-' || isDigit(v[start])) {
				continue
			}
			t.Fatalf("Valid(%q), a prefix of valid %q, = %v; want truncated at %d", v[:k], v, err, k)
		}
	}
}

// FuzzParse checks that Parse accepts exactly what Valid accepts, that the root spans the
// trimmed input, that every node's span is itself a value, and that the tree matches
// encoding/json's decoding.
func FuzzParse(f *testing.F) {
	addSeeds(f)
	f.Fuzz(func(t *testing.T, b []byte) {
		for _, d := range []Dialect{plain, {NonFinite: true, Surrogates: true}} {
			v, err := Parse(b, d)
			verr := Valid(b, d)
			if (err == nil) != (verr == nil) || (v == nil) != (err != nil) {
				t.Fatalf("Parse(%q, %+v) = %v, Valid = %v", b, d, err, verr)
			}
			if err != nil {
				if *err.(*Error) != *verr.(*Error) {
					t.Fatalf("Parse(%q, %+v) = %v, Valid = %v", b, d, err, verr)
				}
				continue
			}
			if trimmed := bytes.Trim(b, " \t\r\n"); !bytes.Equal(v.Raw(b), trimmed) {
				t.Fatalf("Parse(%q).Raw = %q", b, v.Raw(b))
			}
			if len(b) <= 4096 {
				checkSpans(t, v, b, d)
				checkStrings(t, v, b, d.Surrogates)
			}
			// ParseDepth builds the same first level: the same members, types and bounds.
			if s, err := ParseDepth(b, d, 1); err != nil || s.Type != v.Type || s.Start != v.Start || s.End != v.End || len(s.Keys) != len(v.Keys) || len(s.Items) != len(v.Items) {
				t.Fatalf("ParseDepth(%q, 1) = %+v, %v; Parse = %+v", b, s, err, v)
			} else {
				for i, m := range s.Keys {
					if w := v.Keys[i]; m.Key != w.Key || m.Val.Type != w.Val.Type || m.Val.End != w.Val.End || m.Val.Str != w.Val.Str {
						t.Fatalf("ParseDepth(%q, 1): member %d = %+v, Parse %+v", b, i, m.Val, w.Val)
					}
				}
			}
			if d == plain {
				var want any
				if json.Unmarshal(b, &want) == nil { // fails only on numbers out of float64 range
					if got := toAny(v); !reflect.DeepEqual(got, want) {
						t.Fatalf("Parse(%q) = %#v, encoding/json = %#v", b, got, want)
					}
				}
			}
		}
	})
}
