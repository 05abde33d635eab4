package heal

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/sessionmedic/sessionmedic/heal/fsio"
)

// TestReadBufClasses: a read's buffer is of its size's class, one given back is given out
// again for a read of that class, and reads outside the classes are the reader's own.
func TestReadBufClasses(t *testing.T) {
	for _, n := range []int{1, 1 << 10, 1<<16 + 1, 1 << 20, 1<<25 + 1, 1 << 30} {
		b := readBuf(n)
		switch {
		case n <= 1<<minPooledShift || n > 1<<maxPooledShift:
			if b != nil {
				t.Errorf("readBuf(%d) = %d bytes, want none (outside the classes)", n, cap(b))
			}
		case len(b) != n || cap(b)&(cap(b)-1) != 0 || cap(b) < n || cap(b) >= 2*n:
			t.Errorf("readBuf(%d): len %d cap %d", n, len(b), cap(b))
		}
	}
	b := readBuf(300 << 10)
	b[0] = 'x'
	releaseRead(b)
	again := readBuf(400 << 10)
	if cap(again) != 512<<10 {
		t.Fatalf("cap %d", cap(again))
	}
	releaseRead(make([]byte, 3000)) // not a class: ignored
}

// TestReadStableIntoPooled: a file is read into the buffer given when it is large enough,
// into one of the reader's own when it is not.
func TestReadStableIntoPooled(t *testing.T) {
	p := filepath.Join(t.TempDir(), "f.jsonl")
	want := []byte("{\"a\":1}\n")
	os.WriteFile(p, want, 0o600)
	big := make([]byte, 1<<16)
	for i := range big {
		big[i] = '#'
	}
	got, id, err := fsio.ReadStableInto(p, 0, 0, func(n int) []byte { return big[:n] })
	if err != nil || string(got) != string(want) || id.Size != int64(len(want)) || &got[0] != &big[0] {
		t.Fatalf("ReadStableInto = %q, %+v, %v", got, id, err)
	}
	// Too small a buffer: the reader makes its own.
	got, _, err = fsio.ReadStableInto(p, 0, 0, func(n int) []byte { return make([]byte, 2) })
	if err != nil || string(got) != string(want) {
		t.Fatalf("ReadStableInto with a small buffer = %q, %v", got, err)
	}
}
