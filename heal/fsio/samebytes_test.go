package fsio

import (
	"bytes"
	"errors"
	"testing"
)

// shortAt reads no more than n bytes.
type shortAt struct {
	b []byte
	n int64
}

func (s shortAt) ReadAt(p []byte, off int64) (int, error) {
	if off+int64(len(p)) > s.n {
		return 0, errors.New("short")
	}
	return copy(p, s.b[off:]), nil
}

// SameBytes compares across its blocks, to the byte, and says a read that comes short.
func TestSameBytes(t *testing.T) {
	a := bytes.Repeat([]byte("0123456789abcdef"), 200000) // 3.2 MB: several blocks
	for _, at := range []int{0, 1 << 20, 1<<20 + 1, len(a) - 1} {
		b := bytes.Clone(a)
		if same, err := SameBytes(bytes.NewReader(a), bytes.NewReader(b), int64(len(a))); !same || err != nil {
			t.Fatalf("equal: %v %v", same, err)
		}
		b[at] ^= 1
		if same, err := SameBytes(bytes.NewReader(a), bytes.NewReader(b), int64(len(a))); same || err != nil {
			t.Fatalf("a byte at %d differs: %v %v", at, same, err)
		}
		if same, err := SameBytes(bytes.NewReader(a), bytes.NewReader(b), int64(at)); !same || err != nil {
			t.Fatalf("the first %d bytes: %v %v", at, same, err)
		}
	}
	if _, err := SameBytes(bytes.NewReader(a), shortAt{a, 100}, 1000); err == nil {
		t.Fatal("a short read compared")
	}
	if same, err := SameBytes(bytes.NewReader(nil), bytes.NewReader(nil), 0); !same || err != nil {
		t.Fatalf("nothing: %v %v", same, err)
	}
}
