package heal

import (
	"strings"
	"testing"

	"github.com/sessionmedic/sessionmedic/internal/layering"
)

// TestImports keeps the layering of DESIGN.md §2: heal and every package under it import, of
// ours, only policy, heal's own sub-packages and the internal leaf packages (never daemon,
// watcher or cmd).
func TestImports(t *testing.T) {
	layering.Check(t, ".", true, func(own string) bool {
		return own == "policy" || own == "heal" || strings.HasPrefix(own, "heal/") || layering.Leaf(own)
	})
}
