package fsio

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"
)

// TestKernelCopyWritesBehind: a kernel copy asks for the write-out of each piece it copied,
// at the destination's own offsets (the file's offset, where bytes were written before it),
// piece after piece with no gap, and leaves less than a piece to the fsync; the bytes and
// the destination's offset after it are those of the copy.
func TestKernelCopyWritesBehind(t *testing.T) {
	defer func(b int64, w func(int, int64, int64)) { writeBehind, writeOut = b, w }(writeBehind, writeOut)
	writeBehind = 1<<20 + 7
	type span struct{ off, n int64 }
	var asked []span
	writeOut = func(_ int, off, n int64) { asked = append(asked, span{off, n}) }

	dir, src, sf := randomSource(t, 5<<20+123, 3)
	for _, c := range []struct{ off, n int64 }{{0, int64(len(src))}, {1, 1 << 20}, {3, 1<<20 + 7}, {1<<20 - 5, 3<<20 + 11}, {9, 100}} {
		asked = nil
		dp := filepath.Join(dir, "dst")
		os.Remove(dp)
		df, err := os.OpenFile(dp, os.O_WRONLY|os.O_CREATE, 0o600)
		if err != nil {
			t.Fatal(err)
		}
		head := []byte("head of the file:")
		df.Write(head)
		if err := CopyRange(df, sf, c.off, c.n); err != nil {
			t.Fatalf("%+v: %v", c, err)
		}
		df.Write([]byte(":tail"))
		df.Close()
		got, _ := os.ReadFile(dp)
		want := append(append(append([]byte(nil), head...), src[c.off:c.off+c.n]...), ":tail"...)
		if !bytes.Equal(got, want) {
			t.Fatalf("%+v: %d bytes, want %d", c, len(got), len(want))
		}
		at := int64(len(head))
		for _, s := range asked {
			if s.off != at || s.n < writeBehind {
				t.Fatalf("%+v: write-outs asked %v: want pieces of at least %d bytes from %d on, one after the other", c, asked, writeBehind, len(head))
			}
			at += s.n
		}
		if end := int64(len(head)) + c.n; at > end || end-at >= writeBehind {
			t.Fatalf("%+v: write-outs asked %v end at %d: the copy ends at %d (less than a piece left to the fsync)", c, asked, at, end)
		}
	}
}
