package state

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/sessionmedic/sessionmedic/heal/fsio"
)

func hashFile(path string) (string, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return "", err
	}
	return sha(b), nil
}

// An entry being applied is left alone by Recover; once it has ended there is nothing left,
// and an entry of this process that no journal is applying is a leftover, resolved.
func TestJournalInFlight(t *testing.T) {
	dir := t.TempDir()
	target := filepath.Join(dir, "s.json")
	os.WriteFile(target, []byte("new"), 0o600)
	j := NewJournal(filepath.Join(dir, "journal"), fsio.FS{}, NewQuarantine(filepath.Join(dir, "quarantine"), fsio.FS{}), func(string) bool { return true }, hashFile)
	e := &Entry{ID: NewID(time.Now()), Edits: []Edit{{Path: target, OldSHA256: sha([]byte("old")), NewSHA256: sha([]byte("new"))}}}
	if err := j.Begin(e); err != nil {
		t.Fatal(err)
	}
	if got, err := j.Recover(); err != nil || len(got) != 0 {
		t.Fatalf("Recover while the entry is applied: %v, %v", got, err)
	}
	if err := j.End(e); err != nil {
		t.Fatal(err)
	}
	if left, _ := os.ReadDir(j.Root); len(left) != 0 {
		t.Fatalf("left after End: %v", left)
	}

	// Another journal of this process (a restart, as far as it knows) finds a leftover.
	if err := j.Begin(e); err != nil {
		t.Fatal(err)
	}
	other := NewJournal(j.Root, fsio.FS{}, NewQuarantine(filepath.Join(dir, "quarantine"), fsio.FS{}), func(string) bool { return true }, hashFile)
	got, err := other.Recover()
	if err != nil || len(got) != 1 || got[0].Outcome != "applied" || got[0].Path != target {
		t.Fatalf("Recover of a leftover: %+v, %v", got, err)
	}
	if left, _ := os.ReadDir(j.Root); len(left) != 0 {
		t.Fatalf("left after Recover: %v", left)
	}
}
