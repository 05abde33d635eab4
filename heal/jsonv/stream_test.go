package jsonv

import (
	"bytes"
	"errors"
	"io"
	"reflect"
	"strings"
	"testing"
	"testing/iotest"
)

// checkReader asserts that ValidReader over b, read in pieces of every given size, agrees
// exactly with Valid and FirstValue.
func checkReader(t testing.TB, b []byte, d Dialect) {
	want := Valid(b, d)
	wantEnd, ferr := FirstValue(b, d)
	for _, chunk := range []int{1, 3, 64, 1 << 16} {
		var r io.Reader = bytes.NewReader(b)
		if chunk == 1 {
			r = iotest.OneByteReader(r)
		} else if chunk == 3 {
			r = iotest.HalfReader(r)
		}
		end, err := ValidReader(r, d, chunk, 1<<20)
		if !reflect.DeepEqual(err, want) && !(err == nil && want == nil) {
			t.Fatalf("%q (chunk %d): ValidReader error %v, Valid %v", b, chunk, err, want)
		}
		var ve *Error
		trailing := errors.As(want, &ve) && ve.Kind == ErrTrailing
		if (want == nil || trailing) && ferr == nil && end != int64(wantEnd) {
			t.Fatalf("%q (chunk %d): end %d, FirstValue %d", b, chunk, end, wantEnd)
		}
	}
}

func TestValidReaderMatchesValid(t *testing.T) {
	dialects := []Dialect{{}, {NonFinite: true}, {NonFinite: true, Surrogates: true}}
	var inputs [][]byte
	for _, s := range fuzzSeeds {
		inputs = append(inputs, []byte(s))
	}
	for _, c := range validCases {
		inputs = append(inputs, []byte(c.in))
	}
	inputs = append(inputs, []byte(sampleDoc), []byte(sampleDoc+"\n}garbage"), []byte(`{"a":"`+strings.Repeat("é", 3000)+`"} x`),
		[]byte(strings.Repeat("1", 5000)+"x"), []byte(`[`+strings.Repeat(`1.5e7,`, 2000)+`2]`), []byte(strings.Repeat(" ", 300)+"nul"))
	for _, in := range inputs {
		for _, d := range dialects {
			checkReader(t, in, d)
			// Every prefix of the shorter inputs: truncation at each byte.
			if len(in) < 200 {
				for k := range in {
					checkReader(t, in[:k], d)
				}
			}
		}
	}
}

func TestValidReaderTokenTooLong(t *testing.T) {
	in := []byte(`["` + strings.Repeat("a", 4096) + `"]`)
	if _, err := ValidReader(bytes.NewReader(in), Dialect{}, 64, 1024); !errors.Is(err, ErrTokenTooLong) {
		t.Fatalf("err = %v, want ErrTokenTooLong", err)
	}
	if _, err := ValidReader(bytes.NewReader(in), Dialect{}, 64, 8192); err != nil {
		t.Fatalf("err = %v", err)
	}
}

func FuzzValidReader(f *testing.F) {
	addSeeds(f)
	f.Fuzz(func(t *testing.T, b []byte) {
		checkReader(t, b, Dialect{})
		checkReader(t, b, Dialect{NonFinite: true, Surrogates: true})
	})
}
