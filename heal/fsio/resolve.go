package fsio

import "path/filepath"

// Resolved is dir with its symlinks resolved: below a confined rule root (see [Confine]),
// the root's real path, resolved when the policy was loaded, with the rest as it is (no
// symlink below a root is ever followed); elsewhere, dir read through every symlink on its
// way (dir itself when that fails). It names the directory a symlinked rule root stands for.
func Resolved(dir string) string {
	if real, ok := confined(dir); ok {
		return real
	}
	if real, err := filepath.EvalSymlinks(dir); err == nil {
		return real
	}
	return dir
}
