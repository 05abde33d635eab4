package jsonv

// utf8Len checks the multi-byte UTF-8 sequence that starts at b[i] (b[i] >= 0x80) with the
// rules of unicode/utf8: no overlong forms, nothing above U+10FFFF, and no surrogates unless
// surr is set. It returns the sequence length (2..4), 0 if the sequence is invalid, or -1 if
// the input ends after a valid but incomplete prefix.
func utf8Len(b []byte, i int, surr bool) int {
	c0 := b[i]
	var size int
	lo, hi := byte(0x80), byte(0xBF) // range of the second byte
	switch {
	case c0 < 0xC2:
		return 0
	case c0 < 0xE0:
		size = 2
	case c0 < 0xF0:
		size = 3
		if c0 == 0xE0 {
			lo = 0xA0
		} else if c0 == 0xED && !surr {
			hi = 0x9F
		}
	case c0 < 0xF5:
		size = 4
		if c0 == 0xF0 {
			lo = 0x90
		} else if c0 == 0xF4 {
			hi = 0x8F
		}
	default:
		return 0
	}
	rest := b[i+1:]
	if len(rest) == 0 {
		return -1
	}
	if c := rest[0]; c < lo || c > hi {
		return 0
	}
	for k := 1; k < size-1; k++ {
		if k >= len(rest) {
			return -1
		}
		if rest[k]&0xC0 != 0x80 {
			return 0
		}
	}
	return size
}
