package format

import (
	"fmt"
	"math/rand/v2"
	"testing"
)

// heldSeq is a sequence that holds n bytes.
type heldSeq struct{ n int }

func (s heldSeq) Record([]byte) string { return "" }
func (s heldSeq) End() string          { return "" }
func (s heldSeq) Held() int            { return s.n }

// The checklist states an AppendCache keeps stay within its bound whatever is stored, taken
// and dropped: a state that would pass it lets the others' go first, and is not kept when
// it alone would; what the cache counts is what its entries hold.
func TestKeptStatesBounded(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 9))
	c := &AppendCache{limit: 1000}
	paths := []string{"a", "b", "c", "d", "e", "f"}
	for i := 0; i < 5000; i++ {
		p := paths[r.IntN(len(paths))]
		switch r.IntN(5) {
		case 0:
			c.Drop(p)
		case 1:
			if e, ok := c.get(p); ok {
				if pass := c.takePass(p, e); pass != nil && pass.seq.(heldSeq).n == 0 {
					t.Fatal("a state taken that holds nothing")
				}
			}
		default:
			st := &tailState{lines: 1}
			held := 1 + r.IntN(600)
			if r.IntN(10) == 0 {
				held = 1001 + r.IntN(100) // over the bound alone
			}
			st.keep(&passState{seq: heldSeq{held}})
			c.put(p, incEntry{size: int64(i), tail: st})
			e, _ := c.get(p)
			if kept := e.tail.pass != nil; kept != (held <= 1000) {
				t.Fatalf("a state of %d bytes: kept %v (bound 1000)", held, kept)
			}
		}
		sum := 0
		for _, e := range c.m {
			sum += keptBytes(e)
		}
		if sum != c.kept || c.kept > 1000 {
			t.Fatalf("step %d: the entries keep %d bytes, the cache counts %d (bound 1000)", i, sum, c.kept)
		}
	}
	// Several fit at once: the bound is not one state.
	c = &AppendCache{limit: 1000}
	for i, p := range paths[:4] {
		st := &tailState{lines: 1}
		st.keep(&passState{seq: heldSeq{200}})
		c.put(p, incEntry{size: int64(i), tail: st})
	}
	if c.kept != 800 {
		t.Fatal(fmt.Sprint("four states of 200 bytes: ", c.kept, " kept"))
	}
}
