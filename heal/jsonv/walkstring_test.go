package jsonv

import (
	"errors"
	"io"
	"math/rand"
	"strings"
	"testing"
)

// shortReads is a ReaderAt that gives at most a few bytes a read (1 to 9, at random): a
// walk's window then ends anywhere, in the middle of a run of backslashes among them.
type shortReads struct {
	b   []byte
	rng *rand.Rand
}

var errShort = errors.New("a short read")

func (s shortReads) ReadAt(p []byte, off int64) (int, error) {
	if off >= int64(len(s.b)) {
		return 0, io.EOF
	}
	n := copy(p[:min(len(p), 1+s.rng.Intn(9))], s.b[off:])
	if n < len(p) {
		return n, errShort
	}
	return n, nil
}

// escapedString is a JSON string of runs of backslashes (even and odd: escaped backslashes,
// escaped quotes), "\n" escapes, \u escapes and plain text.
func escapedString(r *rand.Rand) string {
	var b strings.Builder
	b.WriteByte('"')
	for range r.Intn(12) {
		switch r.Intn(6) {
		case 0:
			b.WriteString(strings.Repeat(`\\`, 1+r.Intn(4))) // backslashes escaped: an even run
		case 1:
			b.WriteString(strings.Repeat(`\\`, r.Intn(3)) + `\"`) // an odd run: a quote escaped
		case 2:
			b.WriteString(`\n`)
		case 3:
			b.WriteString(`\u00e9\"`)
		default:
			b.WriteString("text"[:1+r.Intn(4)])
		}
	}
	b.WriteByte('"')
	return b.String()
}

// TestWalkSkipsEscapedStringsAcrossReads: a walk whose reads end anywhere builds what Parse
// builds of documents whose strings hold runs of backslashes and escaped quotes — each
// string passed over (skipString) ends at its closing quote, whatever window it ends in.
func TestWalkSkipsEscapedStringsAcrossReads(t *testing.T) {
	rng := rand.New(rand.NewSource(11))
	for i := range 3000 {
		var b strings.Builder
		b.WriteString(`{"a": ` + escapedString(rng) + `, "m": [`)
		for k := range rng.Intn(4) {
			if k > 0 {
				b.WriteString(", ")
			}
			b.WriteString(`{"t": ` + escapedString(rng) + `, "n": [` + escapedString(rng) + `]}`)
		}
		b.WriteString(`], ` + escapedString(rng) + `: ` + escapedString(rng) + `}`)
		doc := []byte(b.String())
		want, err := Parse(doc, Dialect{})
		if err != nil {
			t.Fatalf("generated document %d is not valid: %v\n%s", i, err, doc)
		}
		for _, s := range []Shape{{}, {Root: true}, {Items: []string{"m"}}} {
			got, _, err := Walk(shortReads{doc, rng}, int64(len(doc)), Dialect{}, s, func(Elem) {})
			if err != nil {
				t.Fatalf("document %d, shape %+v: %v\n%s", i, s, err, doc)
			}
			if s.Items == nil {
				if diff := sameValue(got, want, false); diff != "" {
					t.Fatalf("document %d, shape %+v: %s\n%s", i, s, diff, doc)
				}
			} else if got.End != want.End || len(got.Keys) != len(want.Keys) {
				t.Fatalf("document %d, shape %+v: [%d,%d) with %d members, want [%d,%d) with %d\n%s", i, s, got.Start, got.End, len(got.Keys), want.Start, want.End, len(want.Keys), doc)
			}
		}
	}
}
