package fsio

import (
	"testing"

	"github.com/sessionmedic/sessionmedic/internal/resolve"
)

// TestConfinedWithoutOpenat2: where openat2 is missing (kernels before 5.6), the walk from /
// refuses the same symlinks.
func TestConfinedWithoutOpenat2(t *testing.T) {
	defer resolve.WalkOnly(resolve.WalkOnly(true))
	checkConfined(t)
}
