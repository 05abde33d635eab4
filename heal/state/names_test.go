package state

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/sessionmedic/sessionmedic/heal/fsio"
)

const oddName = "/s/bad\xff\xfename\x80.jsonl"

// TestManifestKeepsExactNames: a quarantine entry of a file whose name is not UTF-8 names
// it exactly when read back (JSON alone would have made it U+FFFD).
func TestManifestKeepsExactNames(t *testing.T) {
	q := NewQuarantine(t.TempDir(), fsio.FS{})
	m := &Manifest{Path: oddName, Kind: "truncated"}
	if _, err := q.Put(m, []byte("{"), time.Now()); err != nil {
		t.Fatal(err)
	}
	all, err := q.List()
	if err != nil || len(all) != 1 {
		t.Fatalf("%v %v", all, err)
	}
	if all[0].Path != oddName || all[0].File != filepath.Base(oddName) {
		t.Fatalf("read back as %q / %q", all[0].Path, all[0].File)
	}
	if b, err := all[0].Bytes(); err != nil || string(b) != "{" {
		t.Fatalf("bytes: %q %v", b, err)
	}
}

// TestJournalEntryKeepsExactNames: a journal entry's paths round-trip exactly.
func TestJournalEntryKeepsExactNames(t *testing.T) {
	e := &Entry{ID: "x", Edits: []Edit{{Path: oddName, Temp: "/s/.~bad\xff.sessionmedic-0.tmp"}}}
	e.encodeNames()
	b, _ := json.Marshal(e)
	var back Entry
	if err := json.Unmarshal(b, &back); err != nil {
		t.Fatal(err)
	}
	back.decodeNames()
	if back.Edits[0].Path != oddName || back.Edits[0].Temp != e.Edits[0].Temp {
		t.Fatalf("read back as %q, %q", back.Edits[0].Path, back.Edits[0].Temp)
	}
}

// TestHandsOffKeepsExactNames: the hands-off mark of a file whose name is not UTF-8 is found.
func TestHandsOffKeepsExactNames(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "bad\xff.jsonl")
	os.WriteFile(p, []byte("{}\n"), 0o644)
	h := NewHandsOff(filepath.Join(dir, "hands-off"), fsio.FS{})
	if err := h.Mark(p, "q", time.Now()); err != nil {
		t.Fatal(err)
	}
	id, _ := fsio.StatIdentity(p)
	if h.Get(p, id) == nil {
		t.Fatal("the mark of a non-UTF-8 name is lost")
	}
}
