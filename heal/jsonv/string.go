package jsonv

import (
	"encoding/binary"
	"math/bits"
)

// isPlain marks the bytes that stand for themselves inside a string: printable ASCII other
// than '"' and '\\'.
var isPlain = func() (t [256]bool) {
	for c := 0x20; c < 0x80; c++ {
		t[c] = c != '"' && c != '\\'
	}
	return t
}()

// escapeOK lists the characters allowed after a backslash, except 'u'.
var escapeOK = [256]bool{'"': true, '\\': true, '/': true, 'b': true, 'f': true, 'n': true, 'r': true, 't': true}

var isHex = func() (t [256]bool) {
	for c := '0'; c <= '9'; c++ {
		t[c] = true
	}
	for c := 'a'; c <= 'f'; c++ {
		t[c] = true
		t[c-'a'+'A'] = true
	}
	return t
}()

const (
	lsb = 0x0101010101010101
	msb = 0x8080808080808080
)

// specialMask sets the high bit of every byte of x (little-endian) that is not plain string
// content: a control character, '"', '\\', or a byte >= 0x80. A byte below 0x80 gets its high
// bit from a subtraction only if it is < 0x20 or equal to the byte compared with; borrows
// propagate upwards, so bytes above the lowest flagged byte may be flagged spuriously and only
// the lowest flag is exact.
func specialMask(x uint64) uint64 {
	return ((x - lsb*0x20) | ((x ^ lsb*'"') - lsb) | ((x ^ lsb*'\\') - lsb) | x) & msb
}

// utf8First describes a byte as the first byte of a UTF-8 sequence: the low three bits hold
// the sequence length (0 for a byte that cannot start one), the high four bits index the
// allowed range of the second byte in utf8Second.
var utf8First = func() (t [256]uint8) {
	for c := 0xC2; c < 0xE0; c++ {
		t[c] = 2
	}
	for c := 0xE0; c < 0xF0; c++ {
		t[c] = 3
	}
	for c := 0xF0; c < 0xF5; c++ {
		t[c] = 4
	}
	t[0xE0] |= 1 << 4
	t[0xED] |= 2 << 4
	t[0xF0] |= 3 << 4
	t[0xF4] |= 4 << 4
	return t
}()

type byteRange struct{ lo, hi byte }

// utf8Second is indexed by the high bits of utf8First: the allowed second bytes, strict and
// with Dialect.Surrogates (which lets ED be followed by A0..BF).
var utf8Second = [2][5]byteRange{
	{{0x80, 0xBF}, {0xA0, 0xBF}, {0x80, 0x9F}, {0x90, 0xBF}, {0x80, 0x8F}},
	{{0x80, 0xBF}, {0xA0, 0xBF}, {0x80, 0xBF}, {0x90, 0xBF}, {0x80, 0x8F}},
}

// scanString scans a string whose opening quote is at b[i-1]. It returns the offset just past
// the closing quote.
func scanString(b []byte, i int, d Dialect) (int, *Error) {
	return scanStringK(b, i, d, bestKernel)
}

// scanStringK is scanString with kernel k. The AVX2 kernel only ever accepts: it returns the
// closing quote of a valid string, or gives up, and then the portable code scans the string
// again and tells the error. A short string is finished here, eight bytes at a time.
func scanStringK(b []byte, i int, d Dialect, k kernel) (int, *Error) {
	if k == kernelAVX2 && len(b) >= 32 {
		for w := 0; w < 2 && i+8 <= len(b); w++ {
			m := specialMask(binary.LittleEndian.Uint64(b[i : i+8 : i+8]))
			if m == 0 {
				i += 8
				continue
			}
			if j := i + bits.TrailingZeros64(m)>>3; b[j] == '"' {
				return j + 1, nil
			}
			break
		}
		if q := scanStringAVX2(b, i, d.Surrogates); q >= 0 {
			return q + 1, nil
		}
	}
	return scanStringSWAR(b, i, d)
}

// scanStringSWAR is scanString in portable Go.
func scanStringSWAR(b []byte, i int, d Dialect) (int, *Error) {
	n := len(b)
	second := &utf8Second[0]
	if d.Surrogates {
		second = &utf8Second[1]
	}
	for {
		// Skip plain ASCII eight bytes at a time, then byte by byte.
		for i+8 <= n {
			if m := specialMask(binary.LittleEndian.Uint64(b[i : i+8 : i+8])); m != 0 {
				i += bits.TrailingZeros64(m) >> 3
				goto special
			}
			i += 8
		}
		for i < n && isPlain[b[i]] {
			i++
		}
		if i >= n {
			return n, errTruncated(n)
		}
	special:
		c := b[i]
		if c >= 0x80 {
			// Fast path for a complete, valid sequence with room to load four bytes.
			if i+4 <= n {
				w := binary.LittleEndian.Uint32(b[i : i+4 : i+4])
				x := utf8First[c]
				r := second[x>>4]
				c1 := byte(w >> 8)
				switch x & 7 {
				case 2:
					if c1&0xC0 == 0x80 {
						i += 2
						continue
					}
				case 3:
					if r.lo <= c1 && c1 <= r.hi && w&0xC00000 == 0x800000 {
						i += 3
						continue
					}
				case 4:
					if r.lo <= c1 && c1 <= r.hi && w&0xC0C00000 == 0x80800000 {
						i += 4
						continue
					}
				}
			}
			size := utf8Len(b, i, d.Surrogates)
			if size > 0 {
				i += size
				continue
			}
			if size < 0 {
				return n, errTruncated(n)
			}
			if d.Lossy {
				i++ // read as U+FFFD
				continue
			}
			return i, errInvalidUTF8(b, i)
		}
		if c == '"' {
			return i + 1, nil
		}
		if c != '\\' {
			return i, errUnexpected(b, i, d, "in string literal")
		}
		if i+1 >= n {
			return n, errTruncated(n)
		}
		if escapeOK[b[i+1]] {
			i += 2
			continue
		}
		if b[i+1] != 'u' {
			return i + 1, errUnexpected(b, i+1, d, "in string escape code")
		}
		if i+6 <= n && isHex[b[i+2]] && isHex[b[i+3]] && isHex[b[i+4]] && isHex[b[i+5]] {
			i += 6
			continue
		}
		for k := i + 2; ; k++ {
			if k >= n {
				return n, errTruncated(n)
			}
			if !isHex[b[k]] {
				return k, errUnexpected(b, k, d, `in \u hexadecimal character escape`)
			}
		}
	}
}
