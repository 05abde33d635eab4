package apps

import (
	"math/rand/v2"
	"testing"
)

// The replay's id table against a map with keys that share their tags (high 32 bits), their
// low bits, or both (the same slot and the same tag), re-added after checkpoints, rewound to
// and dropped: every message is found at its index, and the table stays in proportion to the
// messages held however many entries stopped holding.
func TestGeminiIDTableTags(t *testing.T) {
	for _, family := range []struct {
		name string
		key  func(k uint64) uint64
	}{
		{"same tag", func(k uint64) uint64 { return k*0x9e3779b9 + 7 }},
		{"same low bits", func(k uint64) uint64 { return k << 40 }},
		{"same tag and slot", func(k uint64) uint64 { return k << 16 }},
		{"mixed", func(k uint64) uint64 {
			switch k % 3 {
			case 0:
				return k
			case 1:
				return k << 48
			}
			return k * 0x9e3779b97f4a7c15
		}},
	} {
		t.Run(family.name, func(t *testing.T) {
			rng := rand.New(rand.NewPCG(7, 3))
			var never []uint64
			for k := uint64(3001); k < 3050; k++ {
				never = append(never, family.key(k))
			}
			r, most := replayAgainstMap(t, rng, func() uint64 { return family.key(uint64(1 + rng.IntN(3000))) }, 60000, never)
			if n := len(r.at.slots); n > max(1024, 8*most) {
				t.Fatalf("%d slots for at most %d messages held", n, most)
			}
		})
	}
}

// replayAgainstMap runs steps random operations on a replay and on a map of the same
// messages — messages added (new or again), rewinds (to a message held or not), checkpoints
// (holding some of the messages again) — with keys drawn by key, and checks every so often
// that the replay holds the map's messages, in order, each found at its index, and none of
// never. It returns the replay and the most messages it held.
func replayAgainstMap(t *testing.T, rng *rand.Rand, key func() uint64, steps int, never []uint64) (*geminiReplay, int) {
	t.Helper()
	r := &geminiReplay{}
	r.init()
	var ids []uint64
	res := map[uint64]bool{}
	at := map[uint64]int{}
	most := 0
	for step := 0; step < steps; step++ {
		switch n := rng.IntN(1000); {
		case n < 4: // a checkpoint, holding some of the messages again
			again := ids[:rng.IntN(len(ids)+1)]
			r.reset()
			ids, res, at = nil, map[uint64]bool{}, map[uint64]int{}
			for _, k := range again {
				r.addKey(k, true)
				at[k], res[k] = len(ids), true
				ids = append(ids, k)
			}
		case n < 30: // a rewind
			k := key()
			if len(ids) > 0 && rng.IntN(3) > 0 {
				k = ids[rng.IntN(len(ids))]
			}
			i, ok := at[k]
			if got := r.rewind(k); got != ok {
				t.Fatalf("step %d: rewind %x: %v, want %v", step, k, got, ok)
			}
			if ok {
				for _, gone := range ids[i:] {
					delete(at, gone)
					delete(res, gone)
				}
				ids = ids[:i]
			} else {
				ids, res, at = nil, map[uint64]bool{}, map[uint64]int{}
			}
		default:
			k, v := key(), rng.IntN(2) == 0
			r.addKey(k, v)
			if _, ok := at[k]; !ok {
				at[k] = len(ids)
				ids = append(ids, k)
			}
			res[k] = v
		}
		most = max(most, len(ids))
		if step%499 == 0 || step == steps-1 {
			if len(r.ids) != len(ids) {
				t.Fatalf("step %d: %d messages held, want %d", step, len(r.ids), len(ids))
			}
			for i, k := range ids {
				if r.ids[i] != k || r.res[i] != res[k] {
					t.Fatalf("step %d: message %d %x %v, want %x %v", step, i, r.ids[i], r.res[i], k, res[k])
				}
				if j, ok := r.at.lookup(k, r.ids); !ok || j != i {
					t.Fatalf("step %d: lookup %x = %d %v, want %d", step, k, j, ok, i)
				}
			}
			for _, k := range never {
				if _, ok := r.at.lookup(k, r.ids); ok {
					t.Fatalf("step %d: lookup of %x, never added, found", step, k)
				}
			}
		}
	}
	return r, most
}
