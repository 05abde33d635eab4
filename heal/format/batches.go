package format

import (
	"errors"
	"runtime"
	"sync"
	"sync/atomic"

	"github.com/sessionmedic/sessionmedic/internal/panics"
)

// A record checklist whose sequence can read records ahead of it ([BatchSequence]) is judged
// on several CPUs too: the blocks of plainBlocks are walked by workers, each validating its
// block's lines and reading its records into a batch, and one goroutine applies the batches
// to the sequence in the file's order, exactly as judgeRecords feeds it record by record —
// the same line numbers, offsets, first problem and syntax fault, which is reported over a
// checklist problem before it. Workers run at most batchesAhead blocks ahead of it, so memory
// stays bounded: a buffer and a batch per block in flight.

// batchesAhead is how many blocks per worker may be read ahead of the sequence; recordBlock
// is the size of a block (half of lineBlock: a worker's buffer is touched only as far as a
// block and the end of its last line go, and a batch holds half as many records).
const batchesAhead = 2

var recordBlock int64 = lineBlock / 2 // SetParallel sets it for a test

// batchRecord is where a record of a block starts and its line's number in the block.
type batchRecord struct {
	off  int64
	line int
}

// batchBlock is what a worker found in one block: its records (read into batch), and what
// ended the walk of it, if anything.
type batchBlock struct {
	lines int  // lines that start in the block, up to its fault
	blank bool // ... a blank one among them
	*batchSlot
	fault *lineFault
	start int64 // where the faulty line starts
	err   error
	done  chan struct{}
}

// batchSlot is a batch and its records' places, reused from block to block.
type batchSlot struct {
	recs  []batchRecord
	batch RecordBatch
}

// recordBlocks is judgeRecords of the bytes from st on up to n that walkers made by
// newWalker walk, for st's sequence, which reads batches (a [BatchSequence]), on workers
// goroutines, by blocks of block bytes, each worker holding a line up to held bytes; and what
// it knew at the first damaged line (see [Front]). ok is false when the walk must be made
// again on one goroutine with a fresh sequence (a line longer than a worker holds, or than
// MaxLine).
func recordBlocks(p Profile, st passState, n int64, workers int, block int64, held int, newWalker func(maxHeld int) walker) (v Verdict, fr *Front, ok bool) {
	seq := st.seq.(BatchSequence)
	d := rulesOf(p)
	nb := (n - st.off + block - 1) / block
	blocks := make([]batchBlock, nb)
	for i := range blocks {
		blocks[i].done = make(chan struct{})
	}
	free := make(chan *batchSlot, workers*batchesAhead)
	for range cap(free) {
		free <- &batchSlot{batch: seq.NewBatch()}
	}
	quit := make(chan struct{}) // closed when the verdict is known: no more blocks
	var stop atomic.Bool        // ... said to the walks under way
	var next atomic.Int64       // the next block to take
	var wg sync.WaitGroup
	var caught panics.Slot // a worker's panic, raised again where its block is waited for
	for range min(int64(workers), nb) {
		wg.Go(func() {
			var b *batchBlock // the block this worker walks
			defer func() {
				if r := recover(); r != nil {
					caught.Keep(r)
					if b != nil {
						close(b.done)
					}
				}
			}()
			walk := newWalker(held)
			for {
				var slot *batchSlot
				select {
				case slot = <-free:
				case <-quit:
					return
				}
				i := next.Add(1) - 1
				if i >= nb || stop.Load() {
					return
				}
				b = &blocks[i]
				b.batchSlot, slot.recs = slot, slot.recs[:0]
				batch := slot.batch
				batch.Reset()
				keyed, _ := batch.(KeyedBatch)
				var keys []int32 // a record's keys, from its validation
				judge := func(start int64, l []byte, terminated bool, long *longLine) ([]byte, bool, *lineFault) {
					if keyed != nil && long == nil {
						return judgeLineKeys(d, start, l, terminated, &keys)
					}
					return judgeAny(d, start, l, terminated, long)
				}
				from, skip := st.off+i*block, i > 0
				if skip {
					from-- // a line of this block starts after a '\n' at from or later
				}
				err := walk(from, min(st.off+(i+1)*block, n), skip, func(start int64, l []byte, terminated bool, long *longLine) error {
					b.lines++
					body, blank, f := judge(start, l, terminated, long)
					switch {
					case blank:
						b.blank = true
						return nil
					case f != nil:
						b.fault, b.start = f, start
						return Stop
					case keyed != nil && long == nil:
						keyed.AddKeyed(body, keys)
					default:
						batch.Add(body, long == nil)
					}
					b.recs = append(b.recs, batchRecord{off: start, line: b.lines})
					if stop.Load() {
						return Stop // the verdict is known: this block does not count
					}
					return nil
				})
				if err != nil && err != Stop {
					b.err = err
				}
				close(b.done)
				b = nil
			}
		})
	}
	defer func() {
		stop.Store(true)
		close(quit)
		wg.Wait()
	}()

	line, records, last, blanks := st.lines, st.records, st.last, st.blank
	readErr := false    // a read error ended the file
	var schema *Verdict // the first checklist problem; a syntax fault anywhere is reported first
	for i := range blocks {
		b := &blocks[i]
		<-b.done
		caught.Rethrow()
		for k, r := range b.recs {
			if schema == nil {
				if prob := seq.ApplyBatch(b.batch, k); prob != "" {
					v := Damage(problemKind(seq), r.off, "line %d: %s", line+r.line, prob)
					schema = &v
				}
			}
			records, last = records+1, r.off
		}
		blanks = blanks || b.blank
		switch {
		case b.fault != nil:
			if schema == nil {
				fr = &Front{st: passState{off: b.start, lines: line + b.lines - 1, records: records, last: last, blank: blanks, seq: seq}}
			}
			return b.fault.verdict(line + b.lines), fr, true
		case errors.Is(b.err, errHeld) || errors.Is(b.err, ErrNoStream):
			return Verdict{}, nil, false
		}
		line += b.lines
		free <- b.batchSlot
		b.batchSlot = nil
		if b.err != nil {
			readErr = true
			break // a read error ends the file there
		}
	}
	v = endRecords(p, seq, schema, records, last)
	if !readErr && v.Status == Healthy {
		fr = &Front{st: passState{off: n, lines: line, records: records, last: last, blank: blanks, seq: seq}, end: true}
	}
	return v, fr, true
}

// parallelRecords: the workers a record checklist's pass may use, 0 for one goroutine.
func parallelRecords(n int64) int {
	workers := min(runtime.GOMAXPROCS(0), maxLineWorkers)
	if n < parallelFrom || workers < 2 {
		return 0
	}
	return workers
}
