// Package pathx owns one question about paths: is p its root or below it. The answer is
// lexical, and it is the answer of [filepath.Rel]: both paths are cleaned first, nothing is
// read from the file system, no symlink is followed, and an absolute path is never below a
// relative root nor the other way round. It imports no package of ours, so every layer may
// use it.
package pathx

import (
	"path/filepath"
	"strings"
)

// Within reports whether p is root or below it.
func Within(root, p string) bool {
	_, ok := Rel(root, p)
	return ok
}

// Rel returns the slash-separated path of p below root, "." when p is root itself; ok is
// false when p is not root or below it. rel is what [filepath.Rel] returns when that does
// not climb out of root, without its allocations.
func Rel(root, p string) (rel string, ok bool) {
	root, p = filepath.Clean(root), filepath.Clean(p)
	if filepath.IsAbs(root) != filepath.IsAbs(p) {
		return "", false
	}
	if p == root {
		return ".", true
	}
	switch {
	case root == ".":
		rel = p
	case root == string(filepath.Separator):
		rel = p[1:]
	case len(p) > len(root) && p[len(root)] == filepath.Separator && p[:len(root)] == root:
		rel = p[len(root)+1:]
	default:
		return "", false
	}
	// A clean path has ".." only at its start: a relative root made of ".." alone does not
	// hold the paths that climb further up.
	if rel == ".." || strings.HasPrefix(rel, ".."+string(filepath.Separator)) {
		return "", false
	}
	return filepath.ToSlash(rel), true
}
