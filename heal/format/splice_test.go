package format

import (
	"bytes"
	"math/rand"
	"os"
	"path/filepath"
	"testing"
)

// A splice written by the kernel's copy (CopyOut) is byte for byte what it streams (WriteOut)
// and what it reads as (Bytes), for random runs of ranges and held bytes.
func TestSpliceCopyOutIsWriteOut(t *testing.T) {
	dir := t.TempDir()
	r := rand.New(rand.NewSource(7))
	orig := make([]byte, 1<<20+333)
	r.Read(orig)
	op := filepath.Join(dir, "orig")
	os.WriteFile(op, orig, 0o600)
	src, err := os.Open(op)
	if err != nil {
		t.Fatal(err)
	}
	defer src.Close()
	for i := 0; i < 200; i++ {
		var s Splice
		for k := r.Intn(8); k >= 0; k-- {
			if r.Intn(3) == 0 {
				b := make([]byte, r.Intn(300))
				r.Read(b)
				s.AddData(b)
			} else {
				off := r.Int63n(int64(len(orig)))
				s.AddRange(off, r.Int63n(int64(len(orig))-off+1))
			}
		}
		want, err := s.Bytes(src)
		if err != nil {
			t.Fatal(err)
		}
		var streamed bytes.Buffer
		if _, err := s.WriteOut(&streamed, src); err != nil || !bytes.Equal(streamed.Bytes(), want) {
			t.Fatalf("splice %d: WriteOut differs from Bytes (%v)", i, err)
		}
		dp := filepath.Join(dir, "dst")
		os.Remove(dp)
		dst, err := os.Create(dp)
		if err != nil {
			t.Fatal(err)
		}
		if err := s.CopyOut(dst, src); err != nil {
			t.Fatal(err)
		}
		dst.Close()
		if got, _ := os.ReadFile(dp); !bytes.Equal(got, want) {
			t.Fatalf("splice %d: CopyOut wrote %d bytes, want %d", i, len(got), len(want))
		}
	}
}
