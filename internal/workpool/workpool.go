// Package workpool runs a batch of n independent calls on a bounded number of goroutines:
// the parallel walk of a tree's subdirectories and the one-shot commands' inspections.
//
// Work is handed out in index order (call i starts no later than call i+1); the calls
// themselves finish in any order. Ordered also hands each finished index back in index
// order, so a caller can stream results while later calls still run. A pool owns its
// goroutines: both functions return only after every call has returned. There is no
// cancellation here: a call that must stop early checks its own context (work already
// handed out is the caller's to skip). A panic in a call is not recovered.
package workpool

import (
	"sync"
	"sync/atomic"
)

// Run calls fn(i) for every i in [0, n) on at most k goroutines (at least one) and returns
// once every call has returned.
func Run(n, k int, fn func(i int)) {
	Ordered(n, k, fn, nil)
}

// Ordered is Run that also calls emit(i) for every i in [0, n), in order of i, on the
// caller's goroutine, as soon as fn(0) … fn(i) have all returned. The workers never wait
// for emit: a slow emit does not hold back the calls still to run. emit may be nil.
func Ordered(n, k int, fn func(i int), emit func(i int)) {
	if n <= 0 {
		return
	}
	k = max(1, min(k, n))
	var next atomic.Int64
	// finished is buffered for every index: no worker ever blocks on it.
	var finished chan int
	if emit != nil {
		finished = make(chan int, n)
	}
	var wg sync.WaitGroup
	for range k {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				i := int(next.Add(1) - 1)
				if i >= n {
					return
				}
				fn(i)
				if finished != nil {
					finished <- i
				}
			}
		}()
	}
	if emit != nil {
		ready := make([]bool, n)
		for cursor := 0; cursor < n; {
			ready[<-finished] = true
			for cursor < n && ready[cursor] {
				emit(cursor)
				cursor++
			}
		}
	}
	wg.Wait()
}
