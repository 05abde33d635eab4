package jsonv

import (
	"bytes"
	"math/rand/v2"
	"reflect"
	"strings"
	"testing"
)

var kernelDialects = []Dialect{plain, nonFin, surr, {NonFinite: true, Surrogates: true}, lossy}

// checkKernels asserts that every kernel gives Valid's and FirstValue's results for b exactly
// (the same error kind, offset and message), under every dialect.
func checkKernels(t testing.TB, b []byte) {
	t.Helper()
	for _, d := range kernelDialects {
		want := validK(b, d, kernelSWAR)
		wantEnd, wantFirst := firstValueK(b, d, kernelSWAR)
		for _, k := range kernels()[1:] {
			if got := validK(b, d, k); !reflect.DeepEqual(got, want) {
				t.Fatalf("Valid(%q, %+v): %s kernel %v, swar %v", b, d, k, got, want)
			}
			if end, first := firstValueK(b, d, k); end != wantEnd || !reflect.DeepEqual(first, wantFirst) {
				t.Fatalf("FirstValue(%q, %+v): %s kernel %d, %v; swar %d, %v", b, d, k, end, first, wantEnd, wantFirst)
			}
		}
	}
}

// checkStringKernels asserts that the kernels agree on b read as the content of a string
// (after its opening quote) from every offset below 40, and that the AVX2 kernel accepts
// exactly the valid strings: when it gives up, the portable code must find an error.
func checkStringKernels(t testing.TB, b []byte) {
	t.Helper()
	for _, d := range []Dialect{plain, surr, lossy} {
		for i := 0; i <= len(b) && i < 40; i++ {
			wantEnd, want := scanStringSWAR(b, i, d)
			for _, k := range kernels()[1:] {
				end, e := scanStringK(b, i, d, k)
				if end != wantEnd || !reflect.DeepEqual(e, want) {
					t.Fatalf("scanString(%q, %d, %+v): %s kernel %d, %v; swar %d, %v", b, i, d, k, end, e, wantEnd, want)
				}
				if k != kernelAVX2 || len(b) < 32 {
					continue
				}
				q := scanStringAVX2(b, i, d.Surrogates)
				if d.Lossy {
					// The kernel reads UTF-8 strictly: it may give up where Lossy accepts.
					if q >= 0 && (want != nil || q+1 != wantEnd) {
						t.Fatalf("scanStringAVX2(%q, %d, %+v) = %d; swar %d, %v", b, i, d, q, wantEnd, want)
					}
					continue
				}
				if (q >= 0) != (want == nil) || (q >= 0 && q+1 != wantEnd) {
					t.Fatalf("scanStringAVX2(%q, %d, %+v) = %d; swar %d, %v", b, i, d, q, wantEnd, want)
				}
			}
		}
	}
}

func TestKernelsValidCases(t *testing.T) {
	t.Logf("kernels: %v (best %s)", kernels(), bestKernel)
	for _, k := range kernels() {
		for _, c := range validCases {
			err := validK([]byte(c.in), c.d, k)
			e, _ := err.(*Error)
			if c.kind == valid && err != nil || c.kind != valid && (e == nil || e.Kind != c.kind || e.Offset != c.off) {
				t.Errorf("%s kernel: Valid(%q, %+v) = %v, want %s at %d", k, c.in, c.d, err, c.kind, c.off)
			}
		}
	}
	for _, s := range fuzzSeeds {
		checkKernels(t, []byte(s))
	}
	for _, c := range validCases {
		checkKernels(t, []byte(c.in))
		checkKernels(t, []byte(`["`+strings.Repeat("x", 40)+`", `+c.in+`]`))
	}
}

func TestKernelsTruncatedAtEveryByte(t *testing.T) {
	doc := []byte(`{"a": "` + strings.Repeat(`abc\n\"é中😀\u00e9\\ `, 6) + `", "b": [1, "` + strings.Repeat("x", 70) + `"]}`)
	for k := 0; k <= len(doc); k++ {
		checkKernels(t, doc[:k])
		checkStringKernels(t, doc[:k])
	}
}

// TestKernelsStringBytes puts each interesting byte sequence at every position around the
// 8- and 32-byte boundaries of a string and of the end of the input.
func TestKernelsStringBytes(t *testing.T) {
	seqs := []string{`"`, `\`, `\\`, `\"`, `\\\"`, `\u00e9`, `\uD83D\uDE00`, `\u12g4`, `\u12`, `\x`, `\/`,
		"\x00", "\x1f", "\x7f", "é", "中", "😀", "\xed\xa0\x80", "\xe2\x82", "\xf0\x9f\x98", "\xc0\x80",
		"\xff", "\x80", "\xef\xbb\xbf", "\xf4\x90\x80\x80", "\xe0\x80\xaf", `\\\\`, `\\\`}
	buf := make([]byte, 0, 128)
	for _, s := range seqs {
		for pos := 0; pos < 72; pos++ {
			for _, tail := range []string{"", `"`, `"]`, `x"` + strings.Repeat(" ", 40)} {
				buf = append(append(append(buf[:0], strings.Repeat("a", pos)...), s...), tail...)
				checkStringKernels(t, buf)
				doc := append([]byte(`["`), buf...)
				checkKernels(t, doc)
			}
		}
	}
}

// TestKernelsRandomStrings checks random strings built from troublesome pieces.
func TestKernelsRandomStrings(t *testing.T) {
	pieces := []string{"a", "bc", " ", `\`, `\\`, `\"`, `\n`, `\u`, `\u00`, `\u0041`, "0", "f", "é", "中", "😀",
		"\xed\xa0\x80", "\xe2", "\x82", "\xf0\x9f", "\x01", `"`, "u"}
	r := rand.New(rand.NewPCG(5, 6))
	var buf []byte
	n := 20000
	if testing.Short() {
		n = 2000
	}
	for range n {
		buf = buf[:0]
		for m := r.IntN(40); m > 0; m-- {
			buf = append(buf, pieces[r.IntN(len(pieces))]...)
		}
		checkStringKernels(t, buf)
		checkKernels(t, append([]byte(`{"k":"`), buf...))
	}
}

func TestKernelsBenchData(t *testing.T) {
	if testing.Short() {
		t.Skip("slow")
	}
	doc, jsonl := benchData()
	checkKernels(t, doc[:1<<20])
	Lines(jsonl[:1<<20], func(_ int, line []byte, _ bool) bool {
		checkKernels(t, line)
		return true
	})
}

// FuzzKernels checks that the kernels agree on every input: as a document, and as the
// content of a string from each of its first offsets.
func FuzzKernels(f *testing.F) {
	addSeeds(f)
	f.Add([]byte(strings.Repeat(`ab\"\\\u00e9é中😀`, 5)))
	f.Fuzz(func(t *testing.T, b []byte) {
		checkKernels(t, b)
		checkStringKernels(t, b)
		if len(b) < 64 { // also as a string long enough for the 32-byte blocks
			checkStringKernels(t, append(bytes.Repeat([]byte("x"), 64-len(b)), b...))
		}
	})
}
