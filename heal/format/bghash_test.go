package format

import (
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
