package resolve

import (
	"testing"

	"github.com/sessionmedic/sessionmedic/internal/layering"
)

// TestImports: the resolver is a leaf (so heal/fsio and heal/lock both open through it).
func TestImports(t *testing.T) {
	layering.Check(t, ".", false, layering.Leaf)
}
