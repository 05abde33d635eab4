package jsonv

import (
	"bufio"
	"bytes"
	"errors"
	"strings"
	"testing"
)

func TestSkeleton(t *testing.T) {
	for _, c := range []struct{ in, want string }{
		{`{"a":"xyz","b":[1,"ab"]}`, `{"a":"xyz","b":[1,"ab"]}`},
		{`{"a":"xyzw","b":"ab"}`, `{"a":"xyz","b":"ab"}`},
		{`{"abcd":"x"}`, `{"abc":"x"}`},
		{`{"a":"é\u00e9xx","b":"\"\\\"q"}`, `{"a":"é\u00e9","b":"\"\\"}`},
		{`{"a":"ab\u00e9x"}`, `{"a":"ab\u00e9"}`},
		{`{"a":"a\\\"\\"}`, `{"a":"a\\"}`},
		{`{"a":"😀😀"}`, `{"a":"😀"}`},
		{` [ "abc" , true ] `, ` [ "abc" , true ] `},
	} {
		got, err := Skeleton(strings.NewReader(c.in), 3, 1<<20)
		if err != nil || string(got) != c.want {
			t.Errorf("Skeleton(%s) = %s, %v; want %s", c.in, got, err, c.want)
		}
		if err := Valid(got, Dialect{}); err != nil {
			t.Errorf("Skeleton(%s) = %s: not valid: %v", c.in, got, err)
		}
	}
	if _, err := Skeleton(strings.NewReader(`[`+strings.Repeat(`"a",`, 1000)+`1]`), 3, 100); !errors.Is(err, ErrTooLarge) {
		t.Errorf("a large skeleton: %v", err)
	}
}

// FuzzSkeleton: the skeleton of any valid value is valid, no larger than the value, and the
// value itself when no string is over keep.
func FuzzSkeleton(f *testing.F) {
	addSeeds(f)
	f.Fuzz(func(t *testing.T, b []byte) {
		d := Dialect{NonFinite: true, Lossy: true}
		if Valid(b, d) != nil {
			return
		}
		for _, keep := range []int{0, 1, 2, 5, 1 << 20} {
			got, err := Skeleton(bytes.NewReader(b), keep, 1<<20)
			if err != nil {
				t.Fatal(err)
			}
			if err := Valid(got, d); err != nil {
				t.Fatalf("Skeleton(%q, %d) = %q: %v", b, keep, got, err)
			}
			if len(got) > len(b) || keep == 1<<20 && !bytes.Equal(got, b) {
				t.Fatalf("Skeleton(%q, %d) = %q", b, keep, got)
			}
			// Read through the smallest buffer (a cut string's bytes skipped a buffer at a
			// time), with its cuts: the same copy.
			small, cuts, err := SkeletonCuts(bufio.NewReaderSize(bytes.NewReader(b), 16), keep, 1<<20)
			if err != nil || !bytes.Equal(small, got) || cuts.Orig(len(small)) != len(b) {
				t.Fatalf("Skeleton(%q, %d) through 16 bytes = %q (ends at %d), %v; want %q", b, keep, small, cuts.Orig(len(small)), err, got)
			}
			// Its size, measured without the copy: the same, and too large alike.
			if n, err := SkeletonSize(bytes.NewReader(b), keep, 1<<20); n != len(got) || err != nil {
				t.Fatalf("SkeletonSize(%q, %d) = %d, %v; want %d", b, keep, n, err, len(got))
			}
			if len(got) > 0 {
				_, err1 := Skeleton(bytes.NewReader(b), keep, len(got)-1)
				_, err2 := SkeletonSize(bytes.NewReader(b), keep, len(got)-1)
				if !errors.Is(err1, ErrTooLarge) || !errors.Is(err2, ErrTooLarge) {
					t.Fatalf("%q, keep %d, limit %d: %v and %v, want ErrTooLarge", b, keep, len(got)-1, err1, err2)
				}
			}
		}
	})
}
