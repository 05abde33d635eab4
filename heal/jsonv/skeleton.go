package jsonv

import (
	"bufio"
	"errors"
	"io"
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
	br, ok := r.(*bufio.Reader)
	if !ok {
		br = bufio.NewReaderSize(r, 64<<10)
	}
	return skeleton(br, keep, limit, nil)
}

// skeleton is Skeleton, noting in cuts (when not nil) where each cut string ends.
func skeleton(br *bufio.Reader, keep, limit int, cuts *[]cut) ([]byte, error) {
	var out []byte
	dropped := 0 // bytes of the current cut string left out
	var (
		inStr    bool
		content  int  // content bytes of the current string copied
		hexLeft  int  // hex digits of a \u escape still to come
		contLeft int  // continuation bytes of a UTF-8 sequence still to come
		afterEsc bool // the byte after a backslash decides the escape's length
		cutting  bool // the rest of the current string is skipped
		skipEsc  bool // skipping: the byte after a backslash
	)
	for {
		c, err := br.ReadByte()
		if err == io.EOF {
			return out, nil
		}
		if err != nil {
			return nil, err
		}
		switch {
		case !inStr:
			inStr = c == '"'
			content, hexLeft, contLeft, afterEsc, cutting = 0, 0, 0, false, false
		case cutting:
			switch {
			case skipEsc:
				skipEsc = false
			case c == '\\':
				skipEsc = true
			case c == '"':
				inStr = false
				if cuts != nil {
					*cuts = append(*cuts, cut{pos: len(out), n: dropped})
				}
				out = append(out, c)
				continue
			}
			dropped++
			continue
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
			inStr, contLeft = false, 0
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
		out = append(out, c)
		if len(out) > limit {
			return nil, ErrTooLarge
		}
	}
}
