package format

import (
	"testing"

	"github.com/sessionmedic/sessionmedic/internal/layering"
)

// TestImports keeps the layering of DESIGN.md §2: heal/format imports heal/jsonv, heal/fsio
// and the internal leaf packages, never heal itself.
func TestImports(t *testing.T) {
	layering.Check(t, ".", false, func(own string) bool {
		return own == "heal/jsonv" || own == "heal/fsio" || layering.Leaf(own)
	})
}
