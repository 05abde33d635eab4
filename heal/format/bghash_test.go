package format

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"math/rand"
	"testing"
)

// bgHash sums what is written to it in order, however the writes are cut (empty, smaller and
// larger than its buffers), and Close after Sum (or alone) is harmless.
func TestBGHash(t *testing.T) {
	r := rand.New(rand.NewSource(3))
	data := make([]byte, 5*StreamBuf+123) // many buffers long
	r.Read(data)
	for i := 0; i < 20; i++ {
		h := newBGHash()
		rest := data
		for len(rest) > 0 {
			k := min(len(rest), r.Intn(3*StreamBuf))
			h.Write(rest[:k])
			rest = rest[k:]
		}
		want := sha256.Sum256(data)
		if got := h.Sum(); got != hex.EncodeToString(want[:]) {
			t.Fatalf("round %d: %s", i, got)
		}
		h.Close()
	}
	newBGHash().Close()
}

// A Mark takes the sum of what was written before it, the hash going on; what is written to
// upToMark is exactly those bytes.
func TestBGHashMark(t *testing.T) {
	r := rand.New(rand.NewSource(4))
	data := make([]byte, 3*StreamBuf+77)
	r.Read(data)
	for i := 0; i < 20; i++ {
		at := r.Intn(len(data) + 1)
		h := newBGHash()
		var before bytes.Buffer
		h.upToMark = &before
		for j, part := range [][]byte{data[:at], data[at:]} {
			for len(part) > 0 {
				k := min(len(part), 1+r.Intn(StreamBuf))
				h.Write(part[:k])
				part = part[k:]
			}
			if j == 0 {
				h.Mark()
			}
		}
		whole := h.Sum()
		pre, all := sha256.Sum256(data[:at]), sha256.Sum256(data)
		if len(h.marks) != 1 || h.marks[0] != hex.EncodeToString(pre[:]) || whole != hex.EncodeToString(all[:]) {
			t.Fatalf("round %d (mark at %d): marks %v, sum %s", i, at, h.marks, whole)
		}
		if !bytes.Equal(before.Bytes(), data[:at]) {
			t.Fatalf("round %d: %d bytes written up to the mark at %d", i, before.Len(), at)
		}
	}
}
