package format

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"math/rand/v2"
	"testing"

	"github.com/sessionmedic/sessionmedic/heal/fsio"
)

// An AsideHash keeps its sha256 state at each multiple of its step, and a splice's sum taken
// from the state of the original's bytes it starts with (ResumeSum) is the sum of its bytes:
// splices that keep a prefix of any length, then other ranges and bytes, with steps from a
// byte to past the original's end.
func TestSumResumedFromAsideState(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 9))
	resumed := 0
	for iter := 0; iter < 400; iter++ {
		orig := make([]byte, 1+r.IntN(3000))
		for i := range orig {
			orig[i] = byte(r.IntN(256))
		}
		every := int64(1 + r.IntN(700))
		restore := SetHashStateEvery(every)
		a := HashAside(bytes.NewReader(orig), int64(len(orig)))
		sum, err := a.Wait()
		restore()
		if want := sha256.Sum256(orig); err != nil || sum != hex.EncodeToString(want[:]) {
			t.Fatalf("the original's sum %s, %v", sum, err)
		}
		sp := &Splice{}
		first := int64(r.IntN(len(orig) + 1))
		sp.AddRange(0, first)
		sp.AddData([]byte("glued\n"))
		if first < int64(len(orig)) {
			from := first + int64(r.IntN(len(orig)-int(first)))
			sp.AddRange(from, int64(len(orig))-from)
		}
		at, st := a.StateBefore(sp.FirstKept())
		if at > sp.FirstKept() || (st == nil) != (at == 0) || at%every != 0 || sp.FirstKept()-at >= every {
			t.Fatalf("state of the first %d bytes (step %d) for a splice keeping %d", at, every, sp.FirstKept())
		}
		sp.ResumeSum(at, st)
		if st != nil {
			resumed++
		}
		got, err := fsio.ContentSum(sp, bytes.NewReader(orig))
		b, _ := sp.Bytes(bytes.NewReader(orig))
		if want := sha256.Sum256(b); err != nil || got != hex.EncodeToString(want[:]) {
			t.Fatalf("resumed from %d of %d bytes: sum %s, want %x (%v)", at, len(orig), got, want, err)
		}
	}
	if resumed < 100 {
		t.Fatalf("only %d sums resumed", resumed)
	}
}
