package jsonv

import (
	"encoding/binary"
	"fmt"
	"math/bits"
	"math/rand/v2"
	"testing"
	"unicode/utf8"
)

func isSpecial(c byte) bool { return c < 0x20 || c == '"' || c == '\\' || c >= 0x80 }

// TestSpecialMask checks that the lowest flagged byte is the first special byte, for every
// byte value at every position, and for random words.
func TestSpecialMask(t *testing.T) {
	first := func(w []byte) int {
		for k, c := range w {
			if isSpecial(c) {
				return k
			}
		}
		return 8
	}
	check := func(w []byte) {
		m := specialMask(binary.LittleEndian.Uint64(w))
		got := 8
		if m != 0 {
			got = bits.TrailingZeros64(m) >> 3
		}
		if want := first(w); got != want {
			t.Fatalf("specialMask(%q): first special at %d, want %d", w, got, want)
		}
	}
	w := make([]byte, 8)
	for pos := 0; pos < 8; pos++ {
		for c := 0; c < 256; c++ {
			for k := range w {
				w[k] = 'a'
			}
			w[pos] = byte(c)
			check(w)
			for k := pos + 1; k < 8; k++ { // a special byte followed by borrow-prone bytes
				w[k] = byte(0x20 + k)
			}
			check(w)
		}
	}
	r := rand.New(rand.NewPCG(3, 4))
	alphabet := []byte{0, 0x1f, 0x20, 0x21, '"', 0x23, 0x5b, '\\', 0x5d, 0x7f, 0x80, 0xff, 'a', 'b'}
	for n := 0; n < 200000; n++ {
		for k := range w {
			w[k] = alphabet[r.IntN(len(alphabet))]
		}
		check(w)
	}
}

// wantString reports whether seq, placed inside quotes, makes a valid JSON string.
func wantString(seq []byte, surr bool) bool {
	for len(seq) > 0 {
		r, size := utf8.DecodeRune(seq)
		if r == utf8.RuneError && size <= 1 {
			if !surr || len(seq) < 3 || seq[0] != 0xED || seq[1] < 0xA0 || seq[1] > 0xBF || seq[2]&0xC0 != 0x80 {
				return false
			}
			size = 3
		} else if r < 0x20 || r == '"' || r == '\\' {
			return false
		}
		seq = seq[size:]
	}
	return true
}

// lossyRead is b as a lossy decoder reads it: every byte that does not begin valid UTF-8 an
// 'x' (a valid character, as U+FFFD is).
func lossyRead(b []byte) []byte {
	out := make([]byte, 0, len(b))
	for len(b) > 0 {
		r, size := utf8.DecodeRune(b)
		if r == utf8.RuneError && size <= 1 {
			out = append(out, 'x')
			b = b[1:]
			continue
		}
		out = append(out, b[:size]...)
		b = b[size:]
	}
	return out
}

// TestStringBytes checks every two-byte sequence that starts with a byte >= 0x80, those
// sequences followed by each boundary byte, and four-byte sequences built from boundary bytes, inside a string, at the end of the input
// (the byte-by-byte path) and followed by padding (the word-at-a-time paths).
func TestStringBytes(t *testing.T) {
	edges := []byte{0x00, 0x22, 0x41, 0x5c, 0x7f, 0x80, 0x81, 0x8f, 0x90, 0x9f, 0xa0, 0xbe, 0xbf, 0xc0, 0xc2, 0xdf, 0xe0, 0xed, 0xef, 0xf0, 0xf4, 0xf5, 0xff}
	var seqs [][]byte
	for c0 := 0x80; c0 < 0x100; c0++ {
		for c1 := 0; c1 < 0x100; c1++ {
			seqs = append(seqs, []byte{byte(c0), byte(c1)})
			for _, c2 := range edges {
				seqs = append(seqs, []byte{byte(c0), byte(c1), c2})
			}
		}
	}
	for c0 := 0xf0; c0 < 0x100; c0++ {
		for _, c1 := range edges {
			for _, c2 := range edges {
				for _, c3 := range edges {
					seqs = append(seqs, []byte{byte(c0), c1, c2, c3})
				}
			}
		}
	}
	// A dialect at a time, in parallel: about 18 million strings in all.
	for _, d := range []Dialect{plain, surr, lossy} {
		t.Run(fmt.Sprintf("%+v", d), func(t *testing.T) {
			t.Parallel()
			stringBytes(t, seqs, d)
		})
	}
}

func stringBytes(t *testing.T, seqs [][]byte, d Dialect) {
	buf := make([]byte, 0, 32)
	for _, seq := range seqs {
		want := wantString(seq, d.Surrogates)
		if d.Lossy {
			want = Valid(lossyRead(append(append([]byte{'"'}, seq...), '"')), plain) == nil
		}
		for _, pad := range []string{"", "abc", "abcdefghijklm"} {
			buf = append(append(append(append(buf[:0], '"'), pad...), seq...), '"')
			buf = append(buf, "        "...)
			if got := Valid(buf, d) == nil; got != want {
				t.Fatalf("Valid(%q, %+v) = %v, want %v", buf, d, Valid(buf, d), want)
			}
			buf = append(append(append(buf[:0], '"'), pad...), seq...)
			buf = append(buf, '"')
			if got := Valid(buf, d) == nil; got != want {
				t.Fatalf("Valid(%q, %+v) = %v, want %v", buf, d, Valid(buf, d), want)
			}
		}
	}
}
