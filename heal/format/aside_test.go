package format

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"io"
	"math/rand"
	"testing"
)

// HashAside is the sha256 of the first n bytes, read in blocks on its own goroutine; a
// reader shorter than n is an error, never the sum of what it had; Stop ends it.
func TestHashAside(t *testing.T) {
	data := bytes.Repeat([]byte("0123456789abcdef\n"), 200_000) // 3.4 MB: several blocks
	r := bytes.NewReader(data)
	for _, n := range []int64{0, 1, 1 << 20, int64(len(data)) - 1, int64(len(data))} {
		a := HashAside(r, n)
		sum, err := a.Wait()
		if want := sha256.Sum256(data[:n]); err != nil || sum != hex.EncodeToString(want[:]) {
			t.Fatalf("n %d: %s, %v", n, sum, err)
		}
		a.Stop() // after Wait: nothing to stop
	}
	a := HashAside(r, int64(len(data))+1)
	if _, err := a.Wait(); !errors.Is(err, io.ErrUnexpectedEOF) {
		t.Fatalf("a short reader: %v", err)
	}
	a.Stop()
	a = HashAside(r, int64(len(data)))
	a.Stop()
	if sum, err := a.Wait(); err == nil && sum != "" {
		// Stopped after it finished: its sum stands.
		if want := sha256.Sum256(data); sum != hex.EncodeToString(want[:]) {
			t.Fatalf("stopped: %s", sum)
		}
	} else if !errors.Is(err, errAsideStopped) {
		t.Fatalf("stopped: %q, %v", sum, err)
	}
}

// hashAside's mark takes the sum of the bytes before it, the hash going on; what is written
// to upToMark is exactly those bytes, in order.
func TestHashAsideMark(t *testing.T) {
	r := rand.New(rand.NewSource(4))
	data := make([]byte, 3*asideBuf+77) // several of its reads
	r.Read(data)
	for i := 0; i < 20; i++ {
		at := int64(r.Intn(len(data) + 1))
		if i < 3 {
			at = []int64{0, asideBuf, int64(len(data))}[i]
		}
		var before bytes.Buffer
		a := hashAside(bytes.NewReader(data), int64(len(data)), at, &before)
		whole, err := a.Wait()
		pre, all := sha256.Sum256(data[:at]), sha256.Sum256(data)
		if err != nil || a.MarkSum() != hex.EncodeToString(pre[:]) || whole != hex.EncodeToString(all[:]) {
			t.Fatalf("round %d (mark at %d): mark %s, sum %s, %v", i, at, a.MarkSum(), whole, err)
		}
		if !bytes.Equal(before.Bytes(), data[:at]) {
			t.Fatalf("round %d: %d bytes written up to the mark at %d", i, before.Len(), at)
		}
	}
}
