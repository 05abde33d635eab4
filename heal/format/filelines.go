package format

import (
	"bytes"
	"crypto/sha256"
	"encoding/binary"
	"errors"
	"hash/maphash"
	"io"
	"slices"

	"github.com/sessionmedic/sessionmedic/heal/fsio"
)

// errHoldRepair: a repair read from its file cannot be measured from it (a line over the
// line window that a hunk would compare; more searches of its bytes than fileLinePasses):
// the caller holds it.
var errHoldRepair = errors.New("the repair is measured held whole")

// fileLinePasses is how many searches of a repair's bytes a loss meter makes from its file
// (each a pass over it) before it asks for the repair held instead.
const fileLinePasses = 8

// fileLines is a repair read from its file (size bytes of r), never held: each non-blank
// line's place and a 128-bit hash of its bytes ('\r' aside: lineSum), by which lines are
// compared; a line's bytes are read back when a hunk of the damaged file needs them, and a
// search of the repair's bytes is a pass over the file. A line over the window is known by
// its sha256, as the damaged file's long lines are compared (lossMeter.long).
type fileLines struct {
	r      io.ReaderAt
	size   int64
	off    []int64
	n      []int32
	sum    [][16]byte
	byKey  []lineKeyAt // sorted by key, then index
	passes int
}

// lineSeeds are the seeds of lineSum, the process's own: no one who writes a file can make
// two lines of it collide.
var lineSeeds = [2]maphash.Seed{maphash.MakeSeed(), maphash.MakeSeed()}

// lineSum is a line's key (a 64-bit hash) and its 128-bit sum (that key and another): a
// tenth of the cost of a sha256 of it.
func lineSum(line []byte) (uint64, [16]byte) {
	a, b := maphash.Bytes(lineSeeds[0], line), maphash.Bytes(lineSeeds[1], line)
	var s [16]byte
	binary.LittleEndian.PutUint64(s[:8], a)
	binary.LittleEndian.PutUint64(s[8:], b)
	return a, s
}

type lineKeyAt struct {
	k uint64
	i int32
}

// newFileLines reads the repair's lines, and, with long, the sha256 of each line longer than
// half the line window, as newLossMeter keeps them.
func newFileLines(p Profile, r io.ReaderAt, size int64, long bool) (*fileLines, map[[sha256.Size]byte][]int, error) {
	fl := &fileLines{r: r, size: size}
	var longs map[[sha256.Size]byte][]int
	if long {
		longs = map[[sha256.Size]byte][]int{}
	}
	lj := &longJudge{r: rulesOf(p), window: lineWindow}
	err := readWalker(r, size, min(StreamBuf, lineWindow), MaxLine, lj)(0, size, false,
		func(start int64, line []byte, _ bool, ll *longLine) error {
			if ll != nil {
				// A line over the window: known by the hash of its bytes (as the survey
				// knows the original's), never held; read back only where a hunk would
				// compare it (line: errHoldRepair).
				if ll.blank {
					return nil
				}
				full, err := longLineHash(r, start, ll.n)
				if err != nil {
					return err
				}
				i := len(fl.off)
				fl.off = append(fl.off, start)
				fl.n = append(fl.n, -1)
				fl.sum = append(fl.sum, [16]byte(full[:16]))
				fl.byKey = append(fl.byKey, lineKeyAt{binary.LittleEndian.Uint64(full[:8]), int32(i)})
				if long {
					longs[full] = append(longs[full], i)
				}
				return nil
			}
			line = bytes.TrimRight(line, "\r")
			if len(bytes.TrimSpace(line)) == 0 {
				return nil
			}
			k, sum := lineSum(line)
			i := len(fl.off)
			fl.off = append(fl.off, start)
			fl.n = append(fl.n, int32(len(line)))
			fl.sum = append(fl.sum, sum)
			fl.byKey = append(fl.byKey, lineKeyAt{k, int32(i)})
			if long && len(line) > lineWindow/2 {
				full := sha256.Sum256(line)
				longs[full] = append(longs[full], i)
			}
			return nil
		})
	if err != nil {
		return nil, nil, err
	}
	slices.SortFunc(fl.byKey, compareKeyAt)
	return fl, longs, nil
}

// compareKeyAt orders entries by key, then index.
func compareKeyAt(a, b lineKeyAt) int {
	if a.k != b.k {
		if a.k < b.k {
			return -1
		}
		return 1
	}
	return int(a.i - b.i)
}

func (fl *fileLines) count() int { return len(fl.off) }

func (fl *fileLines) indexFrom(line []byte, from int) int {
	k, sum := lineSum(bytes.TrimRight(line, "\r"))
	// The first entry of the key at or after from (byKey is sorted by key, then index): a
	// line repeated many times is found without walking its earlier copies.
	j, _ := slices.BinarySearchFunc(fl.byKey, lineKeyAt{k, int32(from)}, compareKeyAt)
	for ; j < len(fl.byKey) && fl.byKey[j].k == k; j++ {
		if i := int(fl.byKey[j].i); fl.sum[i] == sum {
			return i
		}
	}
	return -1
}

func (fl *fileLines) line(i int) ([]byte, error) {
	if fl.n[i] < 0 {
		return nil, errHoldRepair // a line over the window, not read back
	}
	b := make([]byte, fl.n[i])
	if n, err := fl.r.ReadAt(b, fl.off[i]); n < len(b) {
		if err == nil {
			err = io.ErrUnexpectedEOF
		}
		return nil, err
	}
	return b, nil
}

func (fl *fileLines) contains(b []byte) (bool, error) {
	if len(b) == 0 {
		return true, nil
	}
	if b[len(b)-1] != '\r' && fl.indexFrom(b, 0) >= 0 {
		return true, nil // one of its lines
	}
	if fl.passes++; fl.passes > fileLinePasses {
		return false, errHoldRepair
	}
	cw := &fsio.ContainsWriter{Needle: b}
	if _, err := io.Copy(cw, io.NewSectionReader(fl.r, 0, fl.size)); err != nil {
		return false, err
	}
	return cw.Found, nil
}

// newFileLossMeter is newLossMeter of the repair read from its file (size bytes of r).
func newFileLossMeter(p Profile, r io.ReaderAt, size int64, long bool) (*lossMeter, error) {
	fl, longs, err := newFileLines(p, r, size, long)
	if err != nil {
		return nil, err
	}
	return &lossMeter{p: p, res: fl, long: longs}, nil
}
