package jsonv

import "bytes"

// PrefixMembers reads b, the start of an object that may be torn anywhere, as far as it goes:
// the members of the object reached by following path (each name the member of an object
// holding the next) whose values are complete, each its raw bytes, by its raw key without the
// quotes. A value the tear cut is never taken: each is read by [FirstValue], which refuses an
// incomplete one, and must be followed by ',' or '}'. It is for rebuilding what a torn record held, never for judging validity.
func PrefixMembers(b []byte, d Dialect, path ...string) map[string][]byte {
	out := map[string][]byte{}
	i := 0
	ws := func() {
		for i < len(b) && isWS[b[i]] {
			i++
		}
	}
	punct := func(c byte) bool {
		ws()
		if i < len(b) && b[i] == c {
			i++
			return true
		}
		return false
	}
	value := func() ([]byte, bool) { // the complete value at i
		end, err := FirstValue(b[i:], d)
		if err != nil {
			return nil, false
		}
		v := bytes.TrimLeft(b[i:i+end], " \t\r\n")
		i += end
		return v, len(v) > 0
	}
	if !punct('{') {
		return out
	}
	for {
		k, ok := value()
		if !ok || k[0] != '"' || !punct(':') {
			return out
		}
		key := string(k[1 : len(k)-1])
		if len(path) > 0 && key == path[0] {
			ws()
			return PrefixMembers(b[i:], d, path[1:]...)
		}
		v, ok := value()
		if !ok {
			return out
		}
		// Complete only when what follows says so: a number cut short is still a number.
		more := punct(',')
		if !more && !punct('}') {
			return out
		}
		if len(path) == 0 {
			out[key] = v
		}
		if !more {
			return out
		}
	}
}
