package jsonv

import (
	"bufio"
	"bytes"
	"errors"
	"io"
	"sort"
	"unicode/utf8"
)

// ErrTooLarge: a skeleton would be larger than its bound.
var ErrTooLarge = errors.New("jsonv: skeleton larger than its bound")

// Skeleton copies the valid JSON value read from r with every string whose content is longer
// than keep bytes cut after its first units (bytes, escapes, UTF-8 sequences) reaching keep
// bytes: the copy is a valid value of the same shape, members and short values, that a
// checklist can parse without the bulk of a long record. It holds the copy and a read
// buffer, never more: ErrTooLarge when the copy would pass limit bytes. r must hold a valid
// value (ValidReader first).
func Skeleton(r io.Reader, keep, limit int) ([]byte, error) {
	return FieldsSkeleton(r, Dialect{}, nil, keep, limit)
}

// SkeletonSize is the length of the skeleton Skeleton would copy from r, found without
// copying it: ErrTooLarge once it would pass limit bytes.
func SkeletonSize(r io.Reader, keep, limit int) (int, error) {
	return FieldsSkeletonSize(r, Dialect{}, nil, keep, limit)
}

// sketch is a skeleton being copied (out), or only measured (n, its length either way).
type sketch struct {
	out  []byte
	n    int
	cuts *[]cut
}

// run copies the skeleton of br's value into out, or only counts its bytes when dry.
func (sk *sketch) run(br *bufio.Reader, keep, limit int, dry bool) error {
	for {
		c, err := br.ReadByte()
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return err
		}
		sk.put(c, dry)
		if sk.n > limit {
			return ErrTooLarge
		}
		if c == '"' {
			if err := sk.str(br, keep, limit, dry, nil); err == io.EOF {
				return nil
			} else if err != nil {
				return err
			}
		}
	}
}

// str copies the rest of a string whose opening quote was just read, through its closing
// quote: its content up to the first units (bytes, escapes, UTF-8 sequences) reaching keep
// bytes, the rest left out (a cut, noted in cuts). capture, when not nil, gets the content
// copied.
func (sk *sketch) str(br *bufio.Reader, keep, limit int, dry bool, capture *[]byte) error {
	dropped := 0 // bytes of the string left out
	var (
		content  int  // content bytes copied
		hexLeft  int  // hex digits of a \u escape still to come
		contLeft int  // continuation bytes of a UTF-8 sequence still to come
		afterEsc bool // the byte after a backslash decides the escape's length
		cutting  bool // the rest of the string is skipped
		skipEsc  bool // skipping: the byte after a backslash
	)
	for {
		if cutting && !skipEsc {
			// The bulk of a long string: what the reader holds up to its next quote or
			// backslash is left out as it stands.
			buf, _ := br.Peek(br.Buffered())
			k := bytes.IndexAny(buf, `"\`)
			if k < 0 {
				k = len(buf)
			}
			br.Discard(k)
			dropped += k
		}
		if !cutting && hexLeft == 0 && contLeft == 0 && !afterEsc && content < keep {
			// Plain ASCII up to the cut: copied as it stands.
			buf, _ := br.Peek(min(br.Buffered(), keep-content))
			k := 0
			for k < len(buf) && buf[k] < utf8.RuneSelf && buf[k] != '"' && buf[k] != '\\' {
				k++
			}
			if sk.n+k > limit {
				return ErrTooLarge
			}
			if !dry {
				sk.out = append(sk.out, buf[:k]...)
			}
			if capture != nil {
				*capture = append(*capture, buf[:k]...)
			}
			sk.n, content = sk.n+k, content+k
			br.Discard(k)
		}
		c, err := br.ReadByte()
		if err != nil {
			return err
		}
		closing := false
		switch {
		case cutting:
			switch {
			case skipEsc:
				skipEsc = false
			case c == '\\':
				skipEsc = true
			case c == '"':
				closing = true
				if sk.cuts != nil {
					*sk.cuts = append(*sk.cuts, cut{pos: sk.n, n: dropped})
				}
			}
			if !closing {
				dropped++
				continue
			}
		case hexLeft > 0:
			hexLeft--
			content++
		case contLeft > 0 && c&0xC0 == 0x80:
			contLeft--
			content++
		case afterEsc:
			afterEsc = false
			if c == 'u' {
				hexLeft = 4
			}
			content++
		case c == '"':
			closing = true
		case content >= keep:
			cutting, skipEsc, dropped = true, c == '\\', 1
			continue
		default:
			contLeft = 0 // a sequence cut short (Lossy) ends before any byte but a continuation
			content++
			if c == '\\' {
				afterEsc = true
			} else if c >= 0x80 {
				contLeft = max(int(utf8First[c]&7)-1, 0)
			}
		}
		sk.put(c, dry)
		if sk.n > limit {
			return ErrTooLarge
		}
		if closing {
			return nil
		}
		if capture != nil {
			*capture = append(*capture, c)
		}
	}
}

// put adds c to the skeleton (counts it only, when dry).
func (sk *sketch) put(c byte, dry bool) {
	sk.n++
	if !dry {
		sk.out = append(sk.out, c)
	}
}

// SkeletonCuts is [Skeleton], with where its strings were cut: what maps an offset in the
// skeleton back to the value's own.
func SkeletonCuts(r io.Reader, keep, limit int) ([]byte, Cuts, error) {
	return FieldsSkeletonCuts(r, Dialect{}, nil, keep, limit)
}

// summed adds up the bytes each cut left out, once the cuts are noted.
func (cs *Cuts) summed() {
	cs.sum = make([]int, len(cs.cuts))
	for i, c := range cs.cuts {
		cs.sum[i] = c.n
		if i > 0 {
			cs.sum[i] += cs.sum[i-1]
		}
	}
}

// Cuts is where a skeleton ([SkeletonCuts]) cut its strings; the zero Cuts is none.
type Cuts struct {
	cuts []cut
	sum  []int // bytes left out up to and including each cut
}

// Orig is the offset in the value of offset x of its skeleton, x outside the bytes a cut
// left out (a value's start or end, a member's key).
func (cs Cuts) Orig(x int) int {
	if i := sort.Search(len(cs.cuts), func(i int) bool { return cs.cuts[i].pos >= x }); i > 0 {
		x += cs.sum[i-1]
	}
	return x
}

// Whole: the skeleton's bytes [start, end) are the value's own, no string among them cut.
func (cs Cuts) Whole(start, end int) bool {
	// A cut's bytes were left out just before its closing quote (pos).
	i := sort.Search(len(cs.cuts), func(i int) bool { return cs.cuts[i].pos > start })
	return i == len(cs.cuts) || cs.cuts[i].pos >= end
}
