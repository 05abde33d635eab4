package format

import (
	"bytes"
	"math/rand"
	"testing"
)

// DocLostBytes, read streaming in 64 KiB chunks, measures what docLostBytes measures of the
// two held whole: pairs sharing prefixes and suffixes across chunk boundaries, equal, empty.
func TestDocLostBytesStreamedAsHeld(t *testing.T) {
	rng := rand.New(rand.NewSource(9))
	blob := func(n int) []byte {
		b := make([]byte, n)
		for i := range b {
			b[i] = "ab{}"[rng.Intn(4)]
		}
		return b
	}
	for i := 0; i < 200; i++ {
		base := blob(rng.Intn(300 << 10))
		old := bytes.Clone(base)
		new := bytes.Clone(base)
		switch i % 4 {
		case 0: // a middle replaced
			a := rng.Intn(len(base) + 1)
			b := a + rng.Intn(len(base)-a+1)
			new = append(append(bytes.Clone(base[:a]), blob(rng.Intn(100<<10))...), base[b:]...)
		case 1: // cut
			new = base[:rng.Intn(len(base)+1)]
		case 2: // unrelated
			new = blob(rng.Intn(200 << 10))
		}
		got, err := DocLostBytes(bytes.NewReader(old), int64(len(old)), bytes.NewReader(new), int64(len(new)))
		if err != nil {
			t.Fatal(err)
		}
		if want := docLostBytes(old, new); got != want {
			t.Fatalf("case %d (%d → %d bytes): streamed %d, held %d", i, len(old), len(new), got, want)
		}
	}
}
