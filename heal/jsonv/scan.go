package jsonv

// Valid reports nil when b is exactly one JSON value surrounded only by JSON whitespace
// (space, \t, \n, \r). Otherwise it returns an *Error for the first problem found scanning
// from the start; anything but whitespace after a complete value is ErrTrailing.
func Valid(b []byte, d Dialect) error {
	return validK(b, d, bestKernel)
}

// ValidTop is Valid that also gives, when b holds an object, where each of its members'
// keys begins in b (the offset of its opening quote), in keys (emptied first): a build of
// its members ([Arena.ParseFieldsKeys]) then passes over none of b's bytes again.
func ValidTop(b []byte, d Dialect, keys *[]int32) error {
	*keys = (*keys)[:0]
	end, e := scanTop(b, d, bestKernel, keys)
	if e != nil {
		return e
	}
	if i := skipWS(b, end); i < len(b) {
		return errUnexpected(b, i, d, "after top-level value").withKind(ErrTrailing)
	}
	return nil
}

// validK is Valid with kernel k.
func validK(b []byte, d Dialect, k kernel) error {
	end, e := scan(b, d, k)
	if e != nil {
		return e
	}
	if i := skipWS(b, end); i < len(b) {
		return errUnexpected(b, i, d, "after top-level value").withKind(ErrTrailing)
	}
	return nil
}

// FirstValue returns the end offset (exclusive) of the first complete JSON value in b,
// skipping leading whitespace. err is nil when a complete value was found, whatever follows;
// otherwise it is an *Error of kind ErrTruncated, ErrSyntax, ErrInvalidUTF8 or ErrTooDeep.
// A top-level number ends at the first byte that cannot continue it: for `12x` the value `12`
// is complete and end is 2. On error, end is the error's Offset.
func FirstValue(b []byte, d Dialect) (end int, err error) {
	return firstValueK(b, d, bestKernel)
}

// firstValueK is FirstValue with kernel k.
func firstValueK(b []byte, d Dialect, k kernel) (end int, err error) {
	end, e := scan(b, d, k)
	if e != nil {
		return end, e
	}
	return end, nil
}

func (e *Error) withKind(k ErrKind) *Error {
	e.Kind = k
	return e
}

var isWS = [256]bool{' ': true, '\t': true, '\n': true, '\r': true}

func skipWS(b []byte, i int) int {
	for i < len(b) && isWS[b[i]] {
		i++
	}
	return i
}

// scan scans the first JSON value in b after leading whitespace and returns the offset just
// past it. Nesting is tracked in a bit stack (1 = object, 0 = array): the first 64 levels in a
// register, deeper levels in an array allocated on first use.
func scan(b []byte, d Dialect, k kernel) (int, *Error) {
	return scanTop(b, d, k, nil)
}

// scanTop is scan that appends to keys, when it is not nil, the offset of each key of the
// outermost object (at depth 1).
func scanTop(b []byte, d Dialect, k kernel, keys *[]int32) (int, *Error) {
	var (
		n     = len(b)
		i     int
		depth int
		small uint64
		deep  []uint64
		e     *Error
	)
value:
	i = skipWS(b, i)
	if i >= n {
		return n, errTruncated(n)
	}
	switch b[i] {
	case '"':
		if i, e = scanStringK(b, i+1, d, k); e != nil {
			return i, e
		}
	case '{', '[':
		if depth >= d.maxDepth() {
			return i, newError(ErrTooDeep, i, "exceeded max depth")
		}
		obj := b[i] == '{'
		openContainer(depth, obj, &small, &deep)
		depth++
		i = skipWS(b, i+1)
		if i >= n {
			return n, errTruncated(n)
		}
		if obj {
			if b[i] == '}' {
				i++
				depth--
				break
			}
			if b[i] != '"' {
				return i, errUnexpected(b, i, d, "looking for beginning of object key string")
			}
			goto key
		}
		if b[i] == ']' {
			i++
			depth--
			break
		}
		goto value
	case 't':
		if i, e = literal(b, i, "true", d); e != nil {
			return i, e
		}
	case 'f':
		if i, e = literal(b, i, "false", d); e != nil {
			return i, e
		}
	case 'n':
		if i, e = literal(b, i, "null", d); e != nil {
			return i, e
		}
	case '-', '0', '1', '2', '3', '4', '5', '6', '7', '8', '9':
		if i, e = scanNumber(b, i, d); e != nil {
			return i, e
		}
	case 'N':
		if !d.NonFinite {
			return i, errUnexpected(b, i, d, "looking for beginning of value")
		}
		if i, e = literal(b, i, "NaN", d); e != nil {
			return i, e
		}
	case 'I':
		if !d.NonFinite {
			return i, errUnexpected(b, i, d, "looking for beginning of value")
		}
		if i, e = literal(b, i, "Infinity", d); e != nil {
			return i, e
		}
	default:
		return i, errUnexpected(b, i, d, "looking for beginning of value")
	}

after:
	if depth == 0 {
		return i, nil
	}
	i = skipWS(b, i)
	if i >= n {
		return n, errTruncated(n)
	}
	if inObject(depth, small, deep) {
		switch b[i] {
		case ',':
			i = skipWS(b, i+1)
			if i >= n {
				return n, errTruncated(n)
			}
			if b[i] != '"' {
				return i, errUnexpected(b, i, d, "looking for beginning of object key string")
			}
			goto key
		case '}':
			i++
			depth--
			goto after
		}
		return i, errUnexpected(b, i, d, "after object key:value pair")
	}
	switch b[i] {
	case ',':
		i++
		goto value
	case ']':
		i++
		depth--
		goto after
	}
	return i, errUnexpected(b, i, d, "after array element")

key:
	if keys != nil && depth == 1 {
		*keys = append(*keys, int32(i))
	}
	if i, e = scanStringK(b, i+1, d, k); e != nil {
		return i, e
	}
	i = skipWS(b, i)
	if i >= n {
		return n, errTruncated(n)
	}
	if b[i] != ':' {
		return i, errUnexpected(b, i, d, "after object key")
	}
	i++
	goto value
}

// openContainer records the kind of the container opened at depth: the first 64 levels in
// small, deeper ones in deep, grown as the nesting is.
func openContainer(depth int, obj bool, small *uint64, deep *[]uint64) {
	if depth < 64 {
		if obj {
			*small |= 1 << depth
		} else {
			*small &^= 1 << depth
		}
		return
	}
	for len(*deep) <= depth>>6 {
		*deep = append(*deep, 0)
	}
	if obj {
		(*deep)[depth>>6] |= 1 << (depth & 63)
	} else {
		(*deep)[depth>>6] &^= 1 << (depth & 63)
	}
}

// inObject reports whether the innermost open container (depth >= 1) is an object.
func inObject(depth int, small uint64, deep []uint64) bool {
	k := depth - 1
	if k < 64 {
		return small&(1<<k) != 0
	}
	return deep[k>>6]&(1<<(k&63)) != 0
}

// literal matches word (true, false, null, NaN, Infinity) at b[i].
func literal(b []byte, i int, word string, d Dialect) (int, *Error) {
	if i+len(word) <= len(b) && string(b[i:i+len(word)]) == word {
		return i + len(word), nil
	}
	for k := 0; k < len(word); k++ {
		if i+k >= len(b) {
			return len(b), errTruncated(len(b))
		}
		if b[i+k] != word[k] {
			return i + k, errUnexpected(b, i+k, d, "in literal "+word+" (expecting "+quoteChar([]byte(word), k)+")")
		}
	}
	return i + len(word), nil
}

func isDigit(c byte) bool { return c-'0' < 10 }

// scanNumber scans a number (or -Infinity with Dialect.NonFinite) at b[i]. A number that is
// complete when the input ends is not truncated; one that ends in '-', '.', 'e' or a sign is.
func scanNumber(b []byte, i int, d Dialect) (int, *Error) {
	n := len(b)
	if b[i] == '-' {
		i++
		if i >= n {
			return n, errTruncated(n)
		}
		if b[i] == 'I' && d.NonFinite {
			return literal(b, i, "Infinity", d)
		}
	}
	switch c := b[i]; {
	case c == '0':
		i++
	case '1' <= c && c <= '9':
		i++
		for i < n && isDigit(b[i]) {
			i++
		}
	default:
		return i, errUnexpected(b, i, d, "in numeric literal")
	}
	if i < n && b[i] == '.' {
		i++
		if i >= n {
			return n, errTruncated(n)
		}
		if !isDigit(b[i]) {
			return i, errUnexpected(b, i, d, "after decimal point in numeric literal")
		}
		for i++; i < n && isDigit(b[i]); i++ {
		}
	}
	if i < n && (b[i] == 'e' || b[i] == 'E') {
		i++
		if i >= n {
			return n, errTruncated(n)
		}
		if b[i] == '+' || b[i] == '-' {
			i++
			if i >= n {
				return n, errTruncated(n)
			}
		}
		if !isDigit(b[i]) {
			return i, errUnexpected(b, i, d, "in exponent of numeric literal")
		}
		for i++; i < n && isDigit(b[i]); i++ {
		}
	}
	return i, nil
}
