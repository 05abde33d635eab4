// Package damage makes the damage the apps' JSONL files are found with, for tests and
// benchmarks: a record glued to the next, a torn last line. It imports no package of ours.
package damage

import "bytes"

// GlueMiddle is data with the '\n' after its middle record removed: that record glued to
// the next on one line (two writers interleaving, a lost newline).
func GlueMiddle(data []byte) []byte {
	mid := len(data) / 2
	nl := mid + bytes.IndexByte(data[mid:], '\n')
	return append(bytes.Clone(data[:nl]), data[nl+1:]...)
}

// TearLast is data with its last line cut in the middle and no '\n' after it (a crash during
// an append), and what a heal that cuts the torn line keeps: every line before it.
func TearLast(data []byte) (damaged, kept []byte) {
	last := bytes.LastIndexByte(data[:len(data)-1], '\n') + 1
	return data[:last+(len(data)-last)/2], data[:last]
}
