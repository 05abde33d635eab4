package state

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/sessionmedic/sessionmedic/heal/fsio"
)

// TestDeletedFilesCopyDroppedAfterTheWindow: the last-good copy of a deleted file is kept
// for the retention window, then removed; one whose file came back is kept.
func TestDeletedFilesCopyDroppedAfterTheWindow(t *testing.T) {
	root := filepath.Join(t.TempDir(), "last-good")
	l := NewLastGood(root, 0, fsio.FS{}, nil)
	gone, back, live := "/s/gone.jsonl", "/s/back.jsonl", "/s/live.jsonl"
	for _, p := range []string{gone, back, live} {
		if err := l.Put(p, []byte("{}\n")); err != nil {
			t.Fatal(err)
		}
	}
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	l.MarkGone(gone, t0)
	l.MarkGone(back, t0)
	l.MarkGone(gone, t0.Add(24*time.Hour)) // a later deletion seen again keeps the first time
	l.Put(back, []byte("{\"again\":1}\n")) // it came back
	const window = 30 * 24 * time.Hour
	if n, err := l.PruneGone(t0.Add(window), window); err != nil || n != 0 {
		t.Fatalf("within the window: removed %d (%v)", n, err)
	}
	if l.Load(gone) == nil {
		t.Fatal("the deleted file's copy went before the window passed")
	}
	n, err := l.PruneGone(t0.Add(window+time.Second), window)
	if err != nil || n != 1 {
		t.Fatalf("after the window: removed %d (%v), want 1", n, err)
	}
	if l.Load(gone) != nil || l.Get(gone) != nil {
		t.Error("the deleted file's copy is still there")
	}
	if l.Load(back) == nil || l.Load(live) == nil {
		t.Error("the copy of a file that is there was removed")
	}
	if ents, _ := os.ReadDir(root); len(ents) != 2 {
		t.Errorf("%d entries left in last-good, want the 2 copies and no mark", len(ents))
	}
}
