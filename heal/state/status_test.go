package state

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/sessionmedic/sessionmedic/heal/fsio"
)

// TestRecoverRecordsStatus: the journal's resolution records in each quarantine entry it
// names how its heal ended — rolled back where the file still holds the quarantined bytes,
// superseded where it holds other bytes, nothing (healed) where it holds the heal's — before
// the journal entry goes; a status once recorded stays; an entry whose manifest was never
// written is removed; an entry written before statuses existed reads as healed; an entry of
// a journal entry not yet resolved is pending; and a status that cannot be written keeps
// the journal entry for the next start.
func TestRecoverRecordsStatus(t *testing.T) {
	dir := t.TempDir()
	var fail func(op, path string) error
	fs := fsio.FS{Faults: func(op, path string) error {
		if fail != nil {
			return fail(op, path)
		}
		return nil
	}}
	q := NewQuarantine(filepath.Join(dir, "quarantine"), fs)
	newJournal := func() Journal {
		return NewJournal(filepath.Join(dir, "journal"), fs, q, func(string) bool { return true }, hashFile)
	}
	old, healed := []byte("damaged"), []byte("healed")
	now := time.Date(2026, 11, 24, 10, 0, 0, 0, time.UTC)
	// heal leaves what a crash leaves: a quarantine entry of old (unless unwritten) and a
	// journal entry naming it, of a process that is gone; target holds holds.
	heal := func(name string, holds []byte, unwritten bool) (string, *Manifest) {
		t.Helper()
		target := filepath.Join(dir, name)
		os.WriteFile(target, holds, 0o600)
		m := &Manifest{Path: target, Kind: "truncated", Strategy: "salvage", NewSHA256: sha(healed)}
		qdir := q.EntryDir(m, now)
		if !unwritten {
			if _, err := q.Put(m, old, now); err != nil {
				t.Fatal(err)
			}
		}
		e := &Entry{ID: NewID(now), Edits: []Edit{{Path: target, OldSHA256: sha(old), NewSHA256: sha(healed), Quarantine: qdir}}}
		if err := newJournal().begin(e); err != nil {
			t.Fatal(err)
		}
		return qdir, m
	}
	status := func(qdir string) string {
		t.Helper()
		m, err := readManifest(qdir)
		if err != nil {
			t.Fatal(err)
		}
		return m.Status
	}

	rolled, _ := heal("rolled.json", old, false)
	applied, _ := heal("applied.json", healed, false)
	superseded, _ := heal("superseded.json", []byte("the app wrote"), false)
	unwritten, _ := heal("unwritten.json", old, true)
	os.MkdirAll(unwritten, 0o700) // a quarantine cut short: its bytes, no manifest
	os.WriteFile(filepath.Join(unwritten, "unwritten.json"), old[:3], 0o600)

	pending := newJournal().Pending()
	for _, d := range []string{rolled, applied, superseded, unwritten} {
		if !pending[d] {
			t.Errorf("%s: not pending before the recovery (%v)", d, pending)
		}
	}
	got, err := newJournal().Recover()
	if err != nil || len(got) != 4 {
		t.Fatalf("Recover: %+v, %v", got, err)
	}
	for qdir, want := range map[string]string{rolled: StatusRolledBack, applied: StatusHealed, superseded: StatusSuperseded} {
		if s := status(qdir); s != want {
			t.Errorf("%s: status %q, want %q", filepath.Base(qdir), s, want)
		}
	}
	if b, _ := os.ReadFile(filepath.Join(applied, "manifest.json")); strings.Contains(string(b), `"status"`) {
		t.Errorf("a heal that was applied got a status written:\n%s", b)
	}
	if _, err := os.Stat(unwritten); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the entry without a manifest is left: %v", err)
	}
	if left, _ := os.ReadDir(filepath.Join(dir, "journal")); len(left) != 0 {
		t.Errorf("journal left: %v", left)
	}
	if len(newJournal().Pending()) != 0 {
		t.Error("pending after the recovery")
	}
	all, _ := q.List()
	if len(all) != 3 {
		t.Fatalf("%d entries listed, want 3", len(all))
	}
	for _, m := range all {
		if b, err := m.Bytes(); err != nil || string(b) != string(old) {
			t.Errorf("%s: bytes after the mark: %q, %v", m.ID, b, err)
		}
	}

	// The journal entry of a recorded status reappears (a crash before its removal), the
	// file now healed by a later heal: the first record stands.
	e := &Entry{ID: NewID(now), Edits: []Edit{{Path: filepath.Join(dir, "rolled.json"), OldSHA256: sha(old), NewSHA256: sha(healed), Quarantine: rolled}}}
	os.WriteFile(filepath.Join(dir, "rolled.json"), []byte("healed again"), 0o600)
	newJournal().begin(e)
	if _, err := newJournal().Recover(); err != nil {
		t.Fatal(err)
	}
	if s := status(rolled); s != StatusRolledBack {
		t.Errorf("a recorded status was overwritten: %q", s)
	}

	// A status that cannot be written keeps the journal entry; the next start records it.
	failing, _ := heal("failing.json", old, false)
	fail = func(op, path string) error {
		if op == "rename" && strings.HasPrefix(path, failing) {
			return syscall.EIO
		}
		return nil
	}
	if _, err := newJournal().Recover(); err != nil {
		t.Fatal(err)
	}
	if left, _ := os.ReadDir(filepath.Join(dir, "journal")); len(left) != 1 || status(failing) != StatusHealed {
		t.Fatalf("after a failed mark: journal %v, status %q", left, status(failing))
	}
	if !newJournal().Pending()[failing] {
		t.Error("the entry whose mark failed is not pending")
	}
	fail = nil
	if _, err := newJournal().Recover(); err != nil {
		t.Fatal(err)
	}
	if left, _ := os.ReadDir(filepath.Join(dir, "journal")); len(left) != 0 || status(failing) != StatusRolledBack {
		t.Fatalf("the next start: journal %v, status %q", left, status(failing))
	}
	temps, _ := filepath.Glob(filepath.Join(failing, ".*"))
	if len(temps) != 0 {
		t.Errorf("temps left in the entry: %v", temps)
	}

	// An entry written before statuses were recorded has no status member: healed.
	m := &Manifest{Path: filepath.Join(dir, "older.json")}
	qdir, err := q.Put(m, old, now)
	if err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(filepath.Join(qdir, "manifest.json")); strings.Contains(string(b), `"status"`) {
		t.Fatalf("a new entry records a status:\n%s", b)
	}
	if s := status(qdir); s != StatusHealed {
		t.Errorf("an entry without a status reads %q", s)
	}
}

// TestMarkTouchesOnlyEntries: a journal names quarantine entries, and its resolution removes
// or rewrites only those: a directory outside the quarantine, the quarantine itself or a
// day's directory is never touched.
func TestMarkTouchesOnlyEntries(t *testing.T) {
	dir := t.TempDir()
	q := NewQuarantine(filepath.Join(dir, "quarantine"), fsio.FS{})
	day := filepath.Join(q.Root, "2026-11-24")
	outside := filepath.Join(dir, "elsewhere", "x")
	for _, d := range []string{day, outside} {
		os.MkdirAll(d, 0o700)
	}
	for _, d := range []string{outside, q.Root, day, filepath.Join(q.Root, "..", "elsewhere")} {
		if err := q.mark(d, StatusRolledBack); err != nil {
			t.Errorf("mark %s: %v", d, err)
		}
	}
	for _, d := range []string{day, outside} {
		if _, err := os.Stat(d); err != nil {
			t.Errorf("%s: %v", d, err)
		}
	}
}
