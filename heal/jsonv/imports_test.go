package jsonv

import (
	"testing"

	"github.com/sessionmedic/sessionmedic/internal/layering"
)

// TestImports keeps the layering of DESIGN.md §2: heal/jsonv imports no other package of ours.
func TestImports(t *testing.T) {
	layering.Check(t, ".", false, func(string) bool { return false })
}
