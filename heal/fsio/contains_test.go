package fsio

import (
	"bytes"
	"math/rand"
	"testing"
)

// ContainsWriter finds the needle wherever the writes split it, as bytes.Contains of all
// that was written does, and holds no more than the needle's length between writes.
func TestContainsWriterAcrossWrites(t *testing.T) {
	rng := rand.New(rand.NewSource(7))
	for i := 0; i < 20000; i++ {
		data := make([]byte, rng.Intn(40))
		for j := range data {
			data[j] = "ab\\n"[rng.Intn(3)]
		}
		needle := make([]byte, 1+rng.Intn(5))
		for j := range needle {
			needle[j] = "ab\\n"[rng.Intn(3)]
		}
		c := &ContainsWriter{Needle: needle}
		for rest := data; len(rest) > 0; {
			n := 1 + rng.Intn(len(rest))
			if rng.Intn(4) == 0 {
				c.Write(nil)
			}
			c.Write(rest[:n])
			rest = rest[n:]
			if len(c.carry) >= len(needle) {
				t.Fatalf("carries %d bytes for a needle of %d", len(c.carry), len(needle))
			}
		}
		if want := bytes.Contains(data, needle); c.Found != want {
			t.Fatalf("%q in %q: found %v, want %v", needle, data, c.Found, want)
		}
	}
}
