package heal

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"io"
	"testing"
)

// sumAside is the sha256 of the first n bytes, read in blocks on its own goroutine; a file
// shorter than n is an error, never the sum of what it had.
func TestSumAside(t *testing.T) {
	data := bytes.Repeat([]byte("0123456789abcdef\n"), 200_000) // 3.4 MB: several blocks
	r := bytes.NewReader(data)
	for _, n := range []int64{0, 1, 1 << 20, int64(len(data)) - 1, int64(len(data))} {
		sum, err := sumAside(r, n)()
		if want := sha256.Sum256(data[:n]); err != nil || sum != hex.EncodeToString(want[:]) {
			t.Fatalf("n %d: %s, %v", n, sum, err)
		}
	}
	wait := sumAside(r, int64(len(data))+1)
	if _, err := wait(); !errors.Is(err, io.ErrUnexpectedEOF) {
		t.Fatalf("a short file: %v", err)
	}
	if _, err := wait(); !errors.Is(err, io.ErrUnexpectedEOF) {
		t.Fatalf("asked again: %v", err)
	}
}
