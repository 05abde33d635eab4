package fsio

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"math/rand"
	"os"
	"path/filepath"
	"testing"
)

// CopyRange copies exactly the range asked, at the destination's offset, whether the kernel
// copies it or the buffered copy does (a destination opened O_APPEND makes copy_file_range
// refuse with EBADF), and says ErrUnexpectedEOF for a source shorter than the range.
func TestCopyRange(t *testing.T) {
	dir, src, sf := randomSource(t, 3<<20+17, 1)
	for _, flag := range []int{0, os.O_APPEND} {
		for _, c := range []struct{ off, n int64 }{{0, 0}, {0, 1}, {5, 100}, {0, int64(len(src))}, {1<<20 - 3, 2<<20 + 9}, {int64(len(src)) - 1, 1}} {
			dp := filepath.Join(dir, "dst")
			os.Remove(dp)
			df, err := os.OpenFile(dp, os.O_WRONLY|os.O_CREATE|flag, 0o600)
			if err != nil {
				t.Fatal(err)
			}
			df.Write([]byte("head:"))
			if err := CopyRange(df, sf, c.off, c.n); err != nil {
				t.Fatalf("flag %d, %+v: %v", flag, c, err)
			}
			df.Write([]byte(":tail"))
			df.Close()
			got, _ := os.ReadFile(dp)
			want := append(append([]byte("head:"), src[c.off:c.off+c.n]...), ":tail"...)
			if !bytes.Equal(got, want) {
				t.Fatalf("flag %d, %+v: %d bytes, want %d", flag, c, len(got), len(want))
			}
		}
		df, _ := os.OpenFile(filepath.Join(dir, "short"), os.O_WRONLY|os.O_CREATE|os.O_TRUNC|flag, 0o600)
		if err := CopyRange(df, sf, int64(len(src))-10, 11); !errors.Is(err, io.ErrUnexpectedEOF) {
			t.Fatalf("flag %d: a range past the source's end: %v", flag, err)
		}
		df.Close()
	}
}

// randomSource is a file of n random bytes (of seed) in a temp dir, open (sf), and the dir.
func randomSource(t *testing.T, n int, seed int64) (dir string, src []byte, sf *os.File) {
	t.Helper()
	dir = t.TempDir()
	src = make([]byte, n)
	rand.New(rand.NewSource(seed)).Read(src)
	sp := filepath.Join(dir, "src")
	if err := os.WriteFile(sp, src, 0o600); err != nil {
		t.Fatal(err)
	}
	sf, err := os.Open(sp)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { sf.Close() })
	return dir, src, sf
}

// tempSource is a 1.6 MB JSONL file in a temp dir, open (sf), and the dir as a Dir.
func tempSource(t *testing.T) (dir string, src []byte, sf *os.File, d *Dir) {
	t.Helper()
	dir = t.TempDir()
	src = bytes.Repeat([]byte(`{"a":1}`+"\n"), 200000)
	sp := filepath.Join(dir, "s.jsonl")
	os.WriteFile(sp, src, 0o600)
	sf, _ = os.Open(sp)
	t.Cleanup(func() { sf.Close() })
	d, err := FS{}.OpenParent(dir, sp)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { d.Close() })
	return dir, src, sf, d
}

// A FileContent written by WriteTemp is the same bytes WriteOut streams, and gives no hash
// (so a want it cannot check is left to the caller's identity check, never failed).
func TestWriteTempCopiesByKernel(t *testing.T) {
	dir, src, sf, d := tempSource(t)
	tmp := filepath.Join(dir, "t")
	if _, err := d.WriteTemp(tmp, Range{Off: 8, N: int64(len(src)) - 16}, sf, "not-the-sum", 0o600, -1, -1); err != nil {
		t.Fatal(err)
	}
	got, _ := os.ReadFile(tmp)
	if !bytes.Equal(got, src[8:len(src)-8]) {
		t.Fatalf("temp holds %d bytes, want %d", len(got), len(src)-16)
	}
	// Through a reader that is not a file, the bytes are streamed and hashed: a wrong want
	// is the busy verdict it always was.
	os.Remove(tmp)
	if _, err := d.WriteTemp(tmp, Range{Off: 0, N: 16}, io.NewSectionReader(sf, 0, int64(len(src))), "not-the-sum", 0o600, -1, -1); !errors.Is(err, ErrBusy) {
		t.Fatalf("streamed with a wrong sum: %v", err)
	}
}

// WriteTempSum gives the sha256 of the bytes it wrote, however it wrote them: beside the
// kernel's copy of a FileContent from a file, from the stream through a buffer otherwise,
// and of Bytes (which hash nothing of their own).
func TestWriteTempSumIsTheWrittenBytesSum(t *testing.T) {
	dir, src, sf, d := tempSource(t)
	for i, w := range []struct {
		c   Content
		src io.ReaderAt
	}{
		{Range{Off: 8, N: int64(len(src)) - 16}, sf},
		{Range{Off: 8, N: int64(len(src)) - 16}, io.NewSectionReader(sf, 0, int64(len(src)))},
		{Bytes(src[:100]), sf},
		{Bytes(nil), sf},
	} {
		tmp := filepath.Join(dir, fmt.Sprintf("t%d", i))
		id, sum, err := d.WriteTempSum(tmp, w.c, w.src, 0o600, -1, -1)
		if err != nil {
			t.Fatal(err)
		}
		got, _ := os.ReadFile(tmp)
		if s := sha256.Sum256(got); sum != hex.EncodeToString(s[:]) || id.Size != int64(len(got)) {
			t.Fatalf("write %d: sum %s, size %d; the file holds %d bytes of sum %x", i, sum, id.Size, len(got), s)
		}
	}
	// WriteTemp takes none.
	if _, err := d.WriteTemp(filepath.Join(dir, "plain"), Range{Off: 0, N: 16}, sf, "", 0o600, -1, -1); err != nil {
		t.Fatal(err)
	}
}
