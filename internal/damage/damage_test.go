package damage

import (
	"testing"

	"github.com/sessionmedic/sessionmedic/internal/layering"
)

func TestGlueAndTear(t *testing.T) {
	data := []byte("{\"a\":1}\n{\"b\":2}\n{\"c\":3}\n{\"d\":4}\n")
	if got := string(GlueMiddle(data)); got != "{\"a\":1}\n{\"b\":2}\n{\"c\":3}{\"d\":4}\n" {
		t.Errorf("glued: %q", got)
	}
	damaged, kept := TearLast(data)
	if string(damaged) != "{\"a\":1}\n{\"b\":2}\n{\"c\":3}\n{\"d\"" || string(kept) != "{\"a\":1}\n{\"b\":2}\n{\"c\":3}\n" {
		t.Errorf("torn: %q, kept %q", damaged, kept)
	}
}

func TestImports(t *testing.T) {
	layering.Check(t, ".", false, func(string) bool { return false })
}
