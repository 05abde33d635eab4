package fsio

import "testing"

// TestConfinedWithoutOpenat2: where openat2 is missing (kernels before 5.6), the walk from /
// refuses the same symlinks.
func TestConfinedWithoutOpenat2(t *testing.T) {
	was := noOpenat2.Load()
	noOpenat2.Store(true)
	defer noOpenat2.Store(was)
	checkConfined(t)
}
