package state

import (
	"os"
	"path"
	"path/filepath"
	"testing"

	"github.com/sessionmedic/sessionmedic/heal/fsio"
)

// A last-good temp whose rename was lost (a crash, a power cut) is removed when the store is
// first used; the copies stay.
func TestLastGoodDropsLostTemps(t *testing.T) {
	ownTemp := func(base string) bool { ok, _ := path.Match(".*.sessionmedic-*.tmp", base); return ok }
	root := t.TempDir()
	lg := NewLastGood(root, 0, fsio.FS{}, ownTemp)
	if err := lg.Put("/srv/a.jsonl", []byte("{}\n")); err != nil {
		t.Fatal(err)
	}
	stray := filepath.Join(root, ".~0123456789abcdef0123456789abcdef.sessionmedic-0a1b2c3d4e5f.tmp")
	if err := os.WriteFile(stray, []byte("{"), 0o600); err != nil {
		t.Fatal(err)
	}
	again := NewLastGood(root, 0, fsio.FS{}, ownTemp)
	if got := again.Get("/srv/a.jsonl"); string(got) != "{}\n" {
		t.Fatalf("the copy: %q", got)
	}
	if _, err := os.Stat(stray); !os.IsNotExist(err) {
		t.Fatalf("the lost temp is still there: %v", err)
	}
}
