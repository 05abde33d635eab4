package heal

import (
	"math/bits"
	"sync"
)

// Buffers of whole-file reads, reused from one file to the next of a scan: a first scan of
// thousands of transcripts otherwise allocates (and the kernel zeroes and faults in) a new
// buffer the size of each file, and the collector gives the memory back between them.
// Classes are powers of two from 64 KiB to the streaming size; smaller reads are not worth
// pooling, larger ones are not read whole by a scan.
const (
	minPooledShift = 16
	maxPooledShift = 25 // 32 MiB: streamThreshold
)

var readBufs [maxPooledShift + 1]sync.Pool // of *[]byte, of capacity 1<<class

// readBuf is a buffer of at least n bytes: a pooled one of n's class, or nil for the reader
// to allocate (n outside the classes).
func readBuf(n int) []byte {
	class := bits.Len(uint(n - 1))
	if class < minPooledShift || class > maxPooledShift {
		return nil
	}
	if b, ok := readBufs[class].Get().(*[]byte); ok {
		return (*b)[:n]
	}
	return make([]byte, n, 1<<class)
}

// releaseRead gives a buffer readBuf gave back, once nothing reads its bytes any more.
func releaseRead(b []byte) {
	c := cap(b)
	if c == 0 || c&(c-1) != 0 {
		return // not one of the classes
	}
	class := bits.TrailingZeros(uint(c))
	if class < minPooledShift || class > maxPooledShift {
		return
	}
	b = b[:0]
	readBufs[class].Put(&b)
}
