package jsonv

import "bytes"

// Lines iterates JSONL: it calls fn for each line of b, split on '\n'. The '\n' is not part
// of line (a '\r' before it is, and is JSON whitespace); start is the line's offset in b. A
// final segment without '\n' is passed with terminated=false; the empty segment after a
// trailing '\n' is not passed. Lines returns early if fn returns false.
func Lines(b []byte, fn func(start int, line []byte, terminated bool) bool) {
	start := 0
	for start < len(b) {
		k := bytes.IndexByte(b[start:], '\n')
		if k < 0 {
			fn(start, b[start:len(b):len(b)], false)
			return
		}
		end := start + k
		if !fn(start, b[start:end:end], true) {
			return
		}
		start = end + 1
	}
}
