package jsonv

import (
	"encoding/binary"
	"errors"
	"io"
)

// ErrTokenTooLong: a single number or literal of the input does not fit in the
// window ValidReader may hold. The input is neither accepted nor rejected.
var ErrTokenTooLong = errors.New("jsonv: a token is longer than the streaming window")

// lookahead is how many bytes past an error's offset are kept in the window before the error
// is reported: every decision and message of the scanner depends on at most that many bytes
// after the offending one (a \u escape, a UTF-8 sequence, a byte order mark).
const lookahead = 8

// ValidReader is Valid and FirstValue for input read from r, holding only a window of it in
// memory: a chunk of the input plus the longest number or literal, up to maxWindow bytes
// (ErrTokenTooLong beyond). A string is never held whole, however long (see stream.str). err is exactly the error Valid returns for the
// whole input (nil, or an *Error with the same kind, offset and message); end is the end of the
// first complete value (FirstValue's end) when the scan found one (err nil or ErrTrailing),
// else the error's offset. A read error of r is returned as is.
func ValidReader(r io.Reader, d Dialect, chunk, maxWindow int) (end int64, err error) {
	s := &stream{r: r, chunk: max(chunk, 64)}
	s.maxWindow = max(maxWindow, s.chunk)
	end, e := s.scan(d)
	switch {
	case s.rerr != nil:
		return end, s.rerr
	case s.tooLong:
		return end, ErrTokenTooLong
	case e != nil:
		return end, e
	}
	i := s.skipWS(int(end - s.base))
	if s.rerr != nil {
		return end, s.rerr
	}
	if i < len(s.buf) {
		i = s.need(i, lookahead)
		return end, s.rebase(errUnexpected(s.buf, i, d, "after top-level value").withKind(ErrTrailing))
	}
	return end, nil
}

// stream is a window on the input: buf holds the bytes from offset base on.
type stream struct {
	r         io.Reader
	buf       []byte
	base      int64
	eof       bool
	rerr      error
	chunk     int
	maxWindow int
	tooLong   bool
}

// fill reads once more into the window, first dropping the bytes before keep (an index into
// buf); it returns how many bytes were dropped, and false when nothing can be added.
func (s *stream) fill(keep int) (dropped int, ok bool) {
	if s.eof || s.rerr != nil {
		return 0, false
	}
	if keep > 0 {
		n := copy(s.buf, s.buf[keep:])
		s.buf = s.buf[:n]
		s.base += int64(keep)
	}
	if cap(s.buf)-len(s.buf) < s.chunk {
		if len(s.buf) > s.maxWindow {
			s.tooLong = true
			return keep, false
		}
		nb := make([]byte, len(s.buf), min(max(2*cap(s.buf), len(s.buf)+s.chunk), s.maxWindow+s.chunk))
		copy(nb, s.buf)
		s.buf = nb
	}
	for {
		n, err := s.r.Read(s.buf[len(s.buf):cap(s.buf)])
		s.buf = s.buf[:len(s.buf)+n]
		if err == io.EOF {
			s.eof = true
		} else if err != nil {
			s.rerr = err
		}
		if n > 0 || err != nil {
			return keep, n > 0
		}
	}
}

// need makes the window hold n bytes from buf[i] on when the input has them, dropping the
// bytes before i if it must read. It returns i's new index.
func (s *stream) need(i, n int) int {
	for i+n > len(s.buf) {
		d, ok := s.fill(i)
		i -= d
		if !ok {
			break
		}
	}
	return i
}

// skipWS skips whitespace from buf[i], reading as needed; i == len(buf) on return means the
// input ended.
func (s *stream) skipWS(i int) int {
	for {
		i = skipWS(s.buf, i)
		if i < len(s.buf) {
			return i
		}
		d, ok := s.fill(i)
		i -= d
		if !ok {
			return i
		}
	}
}

func (s *stream) total() int64 { return s.base + int64(len(s.buf)) }

func (s *stream) truncated() *Error {
	return &Error{Kind: ErrTruncated, Offset: s.total(), Msg: "unexpected end of json input"}
}

func (s *stream) rebase(e *Error) *Error {
	if e.Kind == ErrTruncated {
		e.Offset = s.total()
		return e
	}
	e.Offset += s.base
	return e
}

// errAt is errUnexpected at buf[i] with the bytes its message needs in the window.
func (s *stream) errAt(i int, d Dialect, where string) *Error {
	i = s.need(i, lookahead)
	return s.rebase(errUnexpected(s.buf, i, d, where))
}

// token runs one of the scanner's token functions on the token starting at buf[i], with the
// whole token (and the lookahead its errors need) in the window. It returns the index just
// past the token.
func (s *stream) token(i int, f func(b []byte, i int) (int, *Error)) (int, *Error) {
	for {
		j, e := f(s.buf, i)
		complete := e == nil && j < len(s.buf) // a number may go on after the window
		if e != nil && e.Kind != ErrTruncated && e.Offset+lookahead <= int64(len(s.buf)) {
			complete = true
		}
		if complete || s.eof || s.rerr != nil {
			if e != nil {
				return j, s.rebase(e)
			}
			return j, nil
		}
		d, _ := s.fill(i)
		i -= d
		if s.tooLong {
			return i, &Error{Kind: ErrSyntax, Offset: s.base + int64(i), Msg: ErrTokenTooLong.Error()}
		}
	}
}

// str scans the string whose opening quote is at buf[i] (scanString) without holding it: a
// string that runs past the window is scanned in pieces, each resumed at the start of the
// unit (a byte, an escape, a UTF-8 sequence) that the window cut, so that only that unit is
// kept. Every unit is judged exactly as one scan of the whole string would, so the result
// and any error (offset and message, with its lookahead in the window) are the same. It
// returns the index just past the closing quote.
func (s *stream) str(i int, d Dialect) (int, *Error) {
	j := i + 1 // where the scan resumes: inside the string, at the start of a unit
	for {
		k, e := scanString(s.buf, j, d)
		complete := e == nil || e.Kind != ErrTruncated && e.Offset+lookahead <= int64(len(s.buf))
		if complete || s.eof || s.rerr != nil {
			if e != nil {
				return k, s.rebase(e)
			}
			return k, nil
		}
		// Everything before the error's offset is valid units: resume at the last unit start.
		keep := unitStart(s.buf[:min(int(e.Offset), len(s.buf))], j)
		dropped, _ := s.fill(keep)
		j = keep - dropped
		if s.tooLong { // never with a window of a chunk: a unit is at most six bytes
			return j, &Error{Kind: ErrSyntax, Offset: s.base + int64(j), Msg: ErrTokenTooLong.Error()}
		}
	}
}

// unitStart is where the last unit of the string content b[j:] that b holds whole ends (the
// start of the one it cuts, or len(b)); b[j:] is valid string content up to its end.
func unitStart(b []byte, j int) int {
	for j < len(b) {
		// Plain ASCII eight bytes at a time.
		for j+8 <= len(b) && specialMask(binary.LittleEndian.Uint64(b[j:j+8:j+8])) == 0 {
			j += 8
		}
		if j >= len(b) {
			break
		}
		w := 1
		switch c := b[j]; {
		case c == '\\':
			w = 2
			if j+1 < len(b) && b[j+1] == 'u' {
				w = 6
			}
		case c >= 0x80:
			// A sequence's bytes after its first: only continuation bytes (an invalid
			// sequence a Lossy scan reads byte by byte ends before any other).
			w = max(int(utf8First[c]&7), 1)
			for k := 1; k < w; k++ {
				if j+k < len(b) && b[j+k]&0xC0 != 0x80 {
					w = k
					break
				}
			}
		}
		if j+w > len(b) {
			return j
		}
		j += w
	}
	return len(b)
}

// scan is scan (scan.go) over the stream. It returns the end offset of the first value.
func (s *stream) scan(d Dialect) (int64, *Error) {
	var (
		i     int
		depth int
		small uint64
		deep  []uint64
		e     *Error
	)
	num := func(b []byte, i int) (int, *Error) { return scanNumber(b, i, d) }
	lit := func(word string) func(b []byte, i int) (int, *Error) {
		return func(b []byte, i int) (int, *Error) { return literal(b, i, word, d) }
	}
value:
	i = s.skipWS(i)
	if i >= len(s.buf) {
		return s.total(), s.truncated()
	}
	switch s.buf[i] {
	case '"':
		if i, e = s.str(i, d); e != nil {
			return e.Offset, e
		}
	case '{', '[':
		if depth >= d.maxDepth() {
			return s.base + int64(i), &Error{Kind: ErrTooDeep, Offset: s.base + int64(i), Msg: "exceeded max depth"}
		}
		obj := s.buf[i] == '{'
		openContainer(depth, obj, &small, &deep)
		depth++
		i = s.skipWS(i + 1)
		if i >= len(s.buf) {
			return s.total(), s.truncated()
		}
		if obj {
			if s.buf[i] == '}' {
				i++
				depth--
				break
			}
			if s.buf[i] != '"' {
				e = s.errAt(i, d, "looking for beginning of object key string")
				return e.Offset, e
			}
			goto key
		}
		if s.buf[i] == ']' {
			i++
			depth--
			break
		}
		goto value
	case 't':
		if i, e = s.token(i, lit("true")); e != nil {
			return e.Offset, e
		}
	case 'f':
		if i, e = s.token(i, lit("false")); e != nil {
			return e.Offset, e
		}
	case 'n':
		if i, e = s.token(i, lit("null")); e != nil {
			return e.Offset, e
		}
	case '-', '0', '1', '2', '3', '4', '5', '6', '7', '8', '9':
		if i, e = s.token(i, num); e != nil {
			return e.Offset, e
		}
	case 'N':
		if !d.NonFinite {
			e = s.errAt(i, d, "looking for beginning of value")
			return e.Offset, e
		}
		if i, e = s.token(i, lit("NaN")); e != nil {
			return e.Offset, e
		}
	case 'I':
		if !d.NonFinite {
			e = s.errAt(i, d, "looking for beginning of value")
			return e.Offset, e
		}
		if i, e = s.token(i, lit("Infinity")); e != nil {
			return e.Offset, e
		}
	default:
		e = s.errAt(i, d, "looking for beginning of value")
		return e.Offset, e
	}

after:
	if depth == 0 {
		return s.base + int64(i), nil
	}
	i = s.skipWS(i)
	if i >= len(s.buf) {
		return s.total(), s.truncated()
	}
	if inObject(depth, small, deep) {
		switch s.buf[i] {
		case ',':
			i = s.skipWS(i + 1)
			if i >= len(s.buf) {
				return s.total(), s.truncated()
			}
			if s.buf[i] != '"' {
				e = s.errAt(i, d, "looking for beginning of object key string")
				return e.Offset, e
			}
			goto key
		case '}':
			i++
			depth--
			goto after
		}
		e = s.errAt(i, d, "after object key:value pair")
		return e.Offset, e
	}
	switch s.buf[i] {
	case ',':
		i++
		goto value
	case ']':
		i++
		depth--
		goto after
	}
	e = s.errAt(i, d, "after array element")
	return e.Offset, e

key:
	if i, e = s.str(i, d); e != nil {
		return e.Offset, e
	}
	i = s.skipWS(i)
	if i >= len(s.buf) {
		return s.total(), s.truncated()
	}
	if s.buf[i] != ':' {
		e = s.errAt(i, d, "after object key")
		return e.Offset, e
	}
	i++
	goto value
}
