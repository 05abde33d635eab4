package fsio

import "path/filepath"

// Resolved is dir read through every symlink on its way (dir itself when that fails): the
// directory a symlinked rule root stands for.
func Resolved(dir string) string {
	if real, err := filepath.EvalSymlinks(dir); err == nil {
		return real
	}
	return dir
}
