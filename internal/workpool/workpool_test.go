package workpool

import (
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/sessionmedic/sessionmedic/internal/layering"
)

func TestRunCallsEveryIndexOnceOnAtMostK(t *testing.T) {
	for _, c := range []struct{ n, k, want int }{
		{0, 4, 0}, {1, 4, 1}, {10, 3, 3}, {10, 0, 1}, {10, -2, 1}, {3, 100, 3},
	} {
		var mu sync.Mutex
		calls := make([]int, c.n)
		var now, peak atomic.Int64
		Run(c.n, c.k, func(i int) {
			n := now.Add(1)
			for p := peak.Load(); n > p && !peak.CompareAndSwap(p, n); p = peak.Load() {
			}
			time.Sleep(time.Millisecond) // let the other workers overlap
			mu.Lock()
			calls[i]++
			mu.Unlock()
			now.Add(-1)
		})
		for i, n := range calls {
			if n != 1 {
				t.Errorf("n=%d k=%d: fn(%d) called %d times", c.n, c.k, i, n)
			}
		}
		if p := int(peak.Load()); p > c.want || (c.n > 0 && p < 1) {
			t.Errorf("n=%d k=%d: %d calls at once, want at most %d", c.n, c.k, p, c.want)
		}
	}
}

func TestWorkIsHandedOutInIndexOrder(t *testing.T) {
	var got []int
	Run(50, 1, func(i int) { got = append(got, i) })
	if !slices.IsSorted(got) || len(got) != 50 {
		t.Fatalf("one worker ran %v", got)
	}
}

// Calls that finish out of order are still emitted in order, each after its call returned.
func TestOrderedEmitsInIndexOrder(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const n = 40
		var returned [n]atomic.Bool
		var emitted []int
		Ordered(n, 8, func(i int) {
			time.Sleep(time.Duration(n-i) * time.Millisecond) // later indices finish first
			returned[i].Store(true)
		}, func(i int) {
			for j := 0; j <= i; j++ {
				if !returned[j].Load() {
					t.Errorf("emit(%d) before fn(%d) returned", i, j)
				}
			}
			emitted = append(emitted, i)
		})
		if len(emitted) != n || !slices.IsSorted(emitted) {
			t.Fatalf("emitted %v", emitted)
		}
	})
}

// A slow emit does not hold the workers back: every call runs while emit(0) still waits.
func TestOrderedWorkersRunAheadOfEmit(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const n = 100
		var calls atomic.Int64
		all := make(chan struct{})
		Ordered(n, 2, func(i int) {
			if calls.Add(1) == n {
				close(all)
			}
		}, func(i int) {
			if i == 0 {
				<-all // would never return if workers waited for emit
			}
		})
	})
}

// Both functions return only once every worker goroutine has ended (synctest.Test fails
// on a goroutine left blocked in the bubble).
func TestNoGoroutineOutlivesTheCall(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		Run(10, 4, func(int) { time.Sleep(time.Millisecond) })
		Ordered(10, 4, func(int) { time.Sleep(time.Millisecond) }, func(int) {})
		Ordered(10, 4, func(int) {}, nil)
	})
}

// TestImports keeps the layering of DESIGN.md §2: workpool is a leaf: heal imports it, so it
// imports no package of ours.
func TestImports(t *testing.T) {
	layering.Check(t, ".", false, func(string) bool { return false })
}
