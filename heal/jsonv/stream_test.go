package jsonv

import (
	"bytes"
	"errors"
	"io"
	"reflect"
	"runtime"
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
		// Through the smallest window: strings are scanned in pieces; only a long number or
		// literal may be too long.
		var r2 io.Reader = iotest.HalfReader(bytes.NewReader(b))
		if end2, err2 := ValidReader(r2, d, 1, 1); !errors.Is(err2, ErrTokenTooLong) {
			if !reflect.DeepEqual(err2, want) && !(err2 == nil && want == nil) {
				t.Fatalf("%q (window 1): ValidReader error %v, Valid %v", b, err2, want)
			}
			if err2 == nil && end2 != end {
				t.Fatalf("%q (window 1): end %d, %d", b, end2, end)
			}
		}
		var ve *Error
		trailing := errors.As(want, &ve) && ve.Kind == ErrTrailing
		if (want == nil || trailing) && ferr == nil && end != int64(wantEnd) {
			t.Fatalf("%q (chunk %d): end %d, FirstValue %d", b, chunk, end, wantEnd)
		}
	}
}

func TestValidReaderMatchesValid(t *testing.T) {
	dialects := []Dialect{{}, {NonFinite: true}, {NonFinite: true, Surrogates: true}, {Lossy: true}}
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
	in := []byte(`[` + strings.Repeat("1", 4096) + `]`)
	if _, err := ValidReader(bytes.NewReader(in), Dialect{}, 64, 1024); !errors.Is(err, ErrTokenTooLong) {
		t.Fatalf("err = %v, want ErrTokenTooLong", err)
	}
	if _, err := ValidReader(bytes.NewReader(in), Dialect{}, 64, 8192); err != nil {
		t.Fatalf("err = %v", err)
	}
	// A string is never too long: it is scanned in pieces.
	in = []byte(`["` + strings.Repeat("a", 4096) + `"]`)
	if _, err := ValidReader(bytes.NewReader(in), Dialect{}, 64, 64); err != nil {
		t.Fatalf("a long string: err = %v", err)
	}
}

// A string of 4 MiB is judged through a window of 64 KiB: what ValidReader allocates stays
// near the window, whatever the string's length (allocated bytes are counted, not time).
func TestValidReaderLongStringNotHeld(t *testing.T) {
	const n = 4 << 20
	for _, unit := range []string{"a", "é", `\u00e9`, `\n`, "😀"} {
		body := strings.Repeat(unit, n/len(unit))
		for _, tail := range []string{`"}`, `"}` + "\n", `\x"}`, "\x01\"}", `"`} {
			in := io.MultiReader(strings.NewReader(`{"k":"`), strings.NewReader(body), strings.NewReader(tail))
			var before, after runtime.MemStats
			runtime.ReadMemStats(&before)
			_, err := ValidReader(in, Dialect{}, 64<<10, 64<<10)
			runtime.ReadMemStats(&after)
			want := Valid([]byte(`{"k":"`+body+tail), Dialect{})
			if !reflect.DeepEqual(err, want) && !(err == nil && want == nil) {
				t.Errorf("%q…%q: ValidReader %v, Valid %v", unit, tail, err, want)
			}
			if a := after.TotalAlloc - before.TotalAlloc; a > 1<<20 {
				t.Errorf("%q…%q: %d bytes allocated for a %d-byte string", unit, tail, a, n)
			}
		}
	}
}

func FuzzValidReader(f *testing.F) {
	addSeeds(f)
	f.Fuzz(func(t *testing.T, b []byte) {
		checkReader(t, b, Dialect{})
		checkReader(t, b, Dialect{NonFinite: true, Surrogates: true})
		checkReader(t, b, Dialect{Lossy: true})
	})
}
