// Package jsonv validates JSON and JSONL exactly as strictly as the apps' own readers, and parses
// small documents into a byte-span tree for the per-app checklists.
//
// The grammar is RFC 8259 with no extensions: no comments, trailing commas, single quotes,
// leading '+', leading zeros, hexadecimal numbers, or unescaped control characters. Every byte
// of the input must be valid UTF-8. A [Dialect] switches on the two extensions some readers
// have: Python's NaN and Infinity literals and a Python reader's surrogatepass decoding.
//
// Escaped lone surrogates such as "\ud800" are accepted, because the Python and JavaScript
// readers accept them. This is the single intended difference from the strict RFC 7493
// validation of github.com/go-json-experiment/json/jsontext (with duplicate names allowed),
// which rejects them.
//
// Errors report the first problem found scanning from the start. Input that ends inside a
// value (an unclosed string, array or object, a partial literal such as `tru`, a number ending
// in '-', '.', 'e' or an exponent sign, a string cut inside a multi-byte character) is
// ErrTruncated at the length of the input. A byte that no continuation could make valid is
// ErrSyntax at that byte, even when it is the last one; this includes a leading byte order mark
// and NUL bytes outside strings. Bytes that are not valid UTF-8 are ErrInvalidUTF8, inside or
// outside strings, except that anything after a complete top-level value is ErrTrailing.
//
// [Valid] and [FirstValue] do not allocate unless they fail or the input nests deeper than 64
// levels.
//
// The content of strings, most of a transcript, is scanned by one of two implementations,
// chosen once at start: on amd64 CPUs with AVX2 (golang.org/x/sys/cpu), assembly that checks
// 32 bytes at a time (escapes, control characters, the closing quote and UTF-8, the latter by
// the lookup method of Keiser and Lemire); elsewhere, or built with the purego tag, portable
// Go that checks eight bytes at a time. The assembly only accepts: when a string has any
// problem, the portable code scans it again and reports the error, so the results (accept or
// reject, kind, offset and message) are the same whichever runs, and tests run both.
package jsonv

import (
	"fmt"
	"unicode/utf8"
)

// Dialect selects what an app's reader accepts beyond RFC 8259.
type Dialect struct {
	// NonFinite accepts the literals NaN, Infinity and -Infinity as numbers (Python json).
	NonFinite bool
	// Surrogates accepts UTF-8-encoded surrogate code points (ED A0 80 .. ED BF BF) in the raw
	// bytes of strings (a Python app that reads with errors="surrogatepass").
	Surrogates bool
	// Lossy accepts any byte that is not valid UTF-8 inside a string: the app decodes its
	// file lossily before it parses (Node's utf8 decoding, then JSON.parse), so such a byte
	// is a U+FFFD in a string it loads. Outside a string it is still an error.
	Lossy bool
	// MaxDepth, when over 0, is the deepest nesting the app's parser accepts in place of
	// [MaxDepth] (serde_json's 127, V8's millions).
	MaxDepth int
}

// maxDepth is the nesting d accepts.
func (d Dialect) maxDepth() int {
	if d.MaxDepth > 0 {
		return d.MaxDepth
	}
	return MaxDepth
}

// ErrKind is the kind of a syntax problem.
type ErrKind int

const (
	ErrSyntax      ErrKind = iota // malformed value (bad token, bad escape, raw control char in string, ...)
	ErrTruncated                  // input ended inside a value (or is empty / only whitespace)
	ErrTrailing                   // a complete value is followed by non-whitespace
	ErrInvalidUTF8                // invalid UTF-8 anywhere (inside or outside strings)
	ErrTooDeep                    // nesting deeper than MaxDepth
)

// String returns the kind's short name.
func (k ErrKind) String() string {
	switch k {
	case ErrSyntax:
		return "syntax"
	case ErrTruncated:
		return "truncated"
	case ErrTrailing:
		return "trailing-garbage"
	case ErrInvalidUTF8:
		return "invalid-utf8"
	case ErrTooDeep:
		return "too-deep"
	}
	return fmt.Sprintf("ErrKind(%d)", int(k))
}

// Error says where the input stops being valid.
type Error struct {
	Kind ErrKind
	// Offset is the byte offset of the first offending byte. For ErrTruncated it is the length
	// of the input; for ErrTrailing it is the offset of the first non-whitespace byte after the
	// value; for ErrInvalidUTF8 it is the first byte of the invalid sequence.
	Offset int64
	Msg    string // short and lowercase, e.g. `invalid character 'x' after object key`
}

// Error formats the error as "<kind> at offset N: msg".
func (e *Error) Error() string {
	return fmt.Sprintf("%s at offset %d: %s", e.Kind, e.Offset, e.Msg)
}

// MaxDepth is the deepest nesting of arrays and objects that is accepted unless a dialect
// says otherwise; the (MaxDepth+1)th open bracket is an ErrTooDeep error. It matches
// encoding/json and jsontext. A tree ([Parse]) is built no deeper: a container nested deeper
// is a Value of its type and bounds without children.
const MaxDepth = 10000

func newError(k ErrKind, off int, msg string) *Error {
	return &Error{Kind: k, Offset: int64(off), Msg: msg}
}

func errTruncated(n int) *Error {
	return newError(ErrTruncated, n, "unexpected end of json input")
}

// errUnexpected reports the byte at b[i] as out of place; where says what the scanner was
// looking for. A byte that does not begin valid UTF-8 is reported as ErrInvalidUTF8.
func errUnexpected(b []byte, i int, d Dialect, where string) *Error {
	c := b[i]
	if c >= utf8.RuneSelf {
		if utf8Len(b, i, d.Surrogates) == 0 {
			return errInvalidUTF8(b, i)
		}
		if c == 0xEF && i+2 < len(b) && b[i+1] == 0xBB && b[i+2] == 0xBF {
			return newError(ErrSyntax, i, "invalid character U+FEFF (byte order mark) "+where)
		}
	}
	return newError(ErrSyntax, i, "invalid character "+quoteChar(b, i)+" "+where)
}

func errInvalidUTF8(b []byte, i int) *Error {
	return newError(ErrInvalidUTF8, i, fmt.Sprintf("invalid utf-8 byte 0x%02x", b[i]))
}

// quoteChar formats the character at b[i] for an error message.
func quoteChar(b []byte, i int) string {
	c := b[i]
	if c < utf8.RuneSelf {
		return fmt.Sprintf("%q", rune(c))
	}
	r, size := utf8.DecodeRune(b[i:])
	if r == utf8.RuneError && size <= 1 {
		return fmt.Sprintf("byte 0x%02x", c)
	}
	return fmt.Sprintf("%q", r)
}
