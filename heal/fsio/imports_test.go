package fsio

import (
	"testing"

	"github.com/sessionmedic/sessionmedic/internal/layering"
)

// TestImports keeps the layering of DESIGN.md §2: heal/fsio imports no other package of ours
// but the internal leaf packages.
func TestImports(t *testing.T) {
	layering.Check(t, ".", false, layering.Leaf)
}
