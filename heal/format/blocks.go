package format

import (
	"errors"
	"fmt"
	"runtime"
	"sync"
	"sync/atomic"

	"github.com/sessionmedic/sessionmedic/internal/panics"
)

// JSONL without a record checklist is judged on several CPUs: the bytes are cut into blocks
// of lineBlock, each block owns the lines that start in it, and workers take the blocks in
// order. Each worker counts its block's lines, so the first fault found (in the earliest
// block with one) gets the same line number, offset and message as a walk from the start.
// Workers stop taking blocks past a fault. Memory stays bounded: a worker holds one buffer
// of lineBlock bytes, and a line up to heldPerWorker; a longer line sends the whole file
// back to one goroutine (which holds a line up to MaxLine, as a walk always did).
const (
	lineBlock      = 1 << 20
	maxLineWorkers = 4
	heldPerWorker  = 8 << 20
)

// parallelFrom: smaller files are judged on one goroutine (SetParallel sets it for a test).
var parallelFrom int64 = 4 << 20

// SetParallel makes files from from bytes on be judged on several CPUs, a record checklist's
// in blocks of block bytes, until restore is called: for the tests of the packages whose
// strategies judge files (never in parallel ones), so that their small files take the way
// big ones take. It needs two CPUs (GOMAXPROCS) to have an effect.
func SetParallel(from, block int64) (restore func()) {
	wasFrom, wasBlock := parallelFrom, recordBlock
	parallelFrom, recordBlock = from, block
	return func() { parallelFrom, recordBlock = wasFrom, wasBlock }
}

// errHeld: a worker met a line longer than it may hold.
var errHeld = errors.New("line longer than a worker holds")

// tooLong is a line longer than MaxLine: line number line, starting at off. It is an
// [ErrNoStream].
type tooLong struct {
	line int
	off  int64
}

func (e *tooLong) Error() string {
	return fmt.Sprintf("line %d is longer than %d bytes", e.line, MaxLine)
}
func (e *tooLong) Unwrap() error { return ErrNoStream }

// verdict is the damage a record checklist reports for the line.
func (e *tooLong) verdict() Verdict {
	return Damage(KindMalformedRecord, e.off, "line %d is longer than %d bytes", e.line, MaxLine)
}

// plainLines judges the n bytes that walkers made by newWalker (holding a line up to the
// given length) walk as JSONL without a record checklist: the first faulty line's verdict,
// or OK. A line over MaxLine is a *tooLong error; a read error is returned as is.
func plainLines(n int64, d lineRules, newWalker func(maxHeld int) walker) (Verdict, error) {
	workers := min(runtime.GOMAXPROCS(0), maxLineWorkers)
	if n >= parallelFrom && workers > 1 {
		v, err := plainBlocks(n, d, workers, lineBlock, heldPerWorker, newWalker)
		if !errors.Is(err, errHeld) {
			return v, err
		}
	}
	return plainWalk(n, d, newWalker(MaxLine))
}

// plainWalk is plainLines on one goroutine.
func plainWalk(n int64, d lineRules, walk walker) (Verdict, error) {
	line := 0
	var next int64 // where the next line starts
	var fault *lineFault
	err := walk(0, n, false, func(start int64, l []byte, terminated bool, long *longLine) error {
		line++
		next = start + int64(len(l)) + 1
		if _, _, f := judgeAny(d, start, l, terminated, long); f != nil {
			fault = f
			return Stop
		}
		return nil
	})
	switch {
	case fault != nil:
		return fault.verdict(line), nil
	case errors.Is(err, ErrNoStream):
		return Verdict{}, &tooLong{line: line + 1, off: next}
	case err != nil:
		return Verdict{}, err
	}
	return OK(), nil
}

// plainBlocks is plainLines on workers goroutines, by blocks of block bytes, each worker
// holding a line up to held bytes (errHeld beyond).
func plainBlocks(n int64, d lineRules, workers int, block int64, held int, newWalker func(maxHeld int) walker) (Verdict, error) {
	type part struct {
		lines int // lines that start in the block (up to its fault)
		fault *lineFault
		err   error
	}
	nb := (n + block - 1) / block
	blocks := make([]part, nb)
	var next atomic.Int64  // the next block to take
	var first atomic.Int64 // the earliest block known to end the walk
	first.Store(nb)
	lower := func(i int64) {
		for c := first.Load(); i < c && !first.CompareAndSwap(c, i); c = first.Load() {
		}
	}
	var wg sync.WaitGroup
	var caught panics.Slot // a worker's panic, raised again once all have returned
	for range min(int64(workers), nb) {
		wg.Go(func() {
			defer func() {
				if r := recover(); r != nil {
					caught.Keep(r)
					first.Store(-1) // the others stop at their next line
				}
			}()
			walk := newWalker(held)
			for {
				i := next.Add(1) - 1
				if i >= nb || i > first.Load() {
					return
				}
				b := &blocks[i]
				from, skip := i*block, i > 0
				if skip {
					from-- // a line of this block starts after a '\n' at from or later
				}
				err := walk(from, min((i+1)*block, n), skip, func(start int64, l []byte, terminated bool, long *longLine) error {
					b.lines++
					if _, _, f := judgeAny(d, start, l, terminated, long); f != nil {
						b.fault = f
						return Stop
					}
					if i > first.Load() {
						return Stop // an earlier block ends the walk: this one does not count
					}
					return nil
				})
				if err != nil && err != Stop {
					b.err = err
				}
				if b.fault != nil || b.err != nil {
					lower(i)
				}
			}
		})
	}
	wg.Wait()
	caught.Rethrow()
	line := 0
	for _, b := range blocks {
		switch {
		case b.fault != nil:
			return b.fault.verdict(line + b.lines), nil
		case b.err != nil:
			return Verdict{}, b.err
		}
		line += b.lines
	}
	return OK(), nil
}
