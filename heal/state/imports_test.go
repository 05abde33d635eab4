package state

import (
	"testing"

	"github.com/sessionmedic/sessionmedic/internal/layering"
)

// TestImports keeps the layering of DESIGN.md §2: heal/state imports, of ours, only heal/fsio,
// heal/lock (process liveness) and the internal leaf packages — never heal itself.
func TestImports(t *testing.T) {
	layering.Check(t, ".", false, func(own string) bool {
		return own == "heal/fsio" || own == "heal/lock" || layering.Leaf(own)
	})
}
