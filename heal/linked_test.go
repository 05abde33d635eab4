package heal

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/sessionmedic/sessionmedic/policy"
)

// The quarantine of a replace keeps the original's own inode (a second name in the state
// directory, then its only one): no byte is copied. Tested with the engine as it runs
// (every damaged file planned from the file).

const linkedOrig = "{\"n\":1}\nxx\n{\"n\":2}\n"

func nlink(t *testing.T, p string) uint64 {
	t.Helper()
	fi, err := os.Lstat(p)
	if err != nil {
		t.Fatal(err)
	}
	return uint64(fi.Sys().(*syscall.Stat_t).Nlink)
}

// onlyEntry is the one quarantine entry's file and manifest.
func onlyEntry(t *testing.T, e *Engine) (string, *Manifest) {
	t.Helper()
	all, err := e.Quarantine.List()
	if err != nil || len(all) != 1 {
		t.Fatalf("quarantine: %d entries (%v), want 1", len(all), err)
	}
	return filepath.Join(all[0].Dir, all[0].File), all[0]
}

func TestQuarantineKeepsTheOriginalInode(t *testing.T) {
	e, _, _, p, _ := appendingApp(t)
	before, _ := os.Lstat(p)
	r := e.Heal(context.Background(), Target{Path: p, Rule: &e.Policy.Rules[0]}, false)
	if r.Action != ActionHealed {
		t.Fatalf("%+v", r)
	}
	if b, _ := os.ReadFile(p); string(b) != "{\"n\":1}\n{\"n\":2}\n" {
		t.Fatalf("healed to %q", b)
	}
	f, m := onlyEntry(t, e)
	kept, _ := os.Lstat(f)
	if !os.SameFile(before, kept) {
		t.Fatal("the quarantine holds a copy, not the original's inode")
	}
	if n := nlink(t, f); n != 1 {
		t.Fatalf("the entry's file has %d names, want 1 (the path holds the healed file)", n)
	}
	if now, _ := os.Lstat(p); os.SameFile(before, now) || nlink(t, p) != 1 {
		t.Fatal("the path still names the original")
	}
	if b, err := m.Bytes(); err != nil || string(b) != linkedOrig {
		t.Fatalf("entry bytes %q (%v)", b, err)
	}
	if m.Size != int64(len(linkedOrig)) || kept.Mode().Perm() != 0o644 {
		t.Fatalf("manifest size %d, entry mode %v", m.Size, kept.Mode())
	}
	if r.QuarantinedBytes != int64(len(linkedOrig)) {
		t.Fatalf("quarantined bytes %d", r.QuarantinedBytes)
	}
	// A restore puts the original back: a new file, the entry left as it is.
	if _, err := e.Restore(context.Background(), m, Target{Path: p, Rule: &e.Policy.Rules[0]}); err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(p); string(b) != linkedOrig {
		t.Fatalf("restored %q", b)
	}
	if b, err := m.Bytes(); err != nil || string(b) != linkedOrig {
		t.Fatalf("entry after the restore %q (%v)", b, err)
	}
}

// What may not be linked is copied: a file with another name (a hard link swapped in), a
// file of someone other than the tree's owner, and a cut (its entry would be cut with it).
func TestQuarantineCopiesWhatItMayNotLink(t *testing.T) {
	cases := map[string]struct {
		data  string
		setup func(t *testing.T, p string)
	}{
		"another name": {linkedOrig, func(t *testing.T, p string) {
			if err := os.Link(p, p+".other"); err != nil {
				t.Fatal(err)
			}
		}},
		"another owner": {linkedOrig, func(t *testing.T, p string) {
			if os.Geteuid() != 0 {
				t.Skip("needs root to give the file away")
			}
			if err := os.Chown(p, 4242, 4242); err != nil {
				t.Fatal(err)
			}
		}},
		"a tail cut": {"{\"n\":1}\n{\"n\":2}\n{\"n\"", nil},
	}
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			e, _, _, p, _ := appendingApp(t)
			os.WriteFile(p, []byte(c.data), 0o644)
			if c.setup != nil {
				c.setup(t, p)
			}
			before, _ := os.Lstat(p)
			r := e.Heal(context.Background(), Target{Path: p, Rule: &e.Policy.Rules[0]}, false)
			if r.Action != ActionHealed {
				t.Fatalf("%+v", r)
			}
			f, m := onlyEntry(t, e)
			kept, _ := os.Lstat(f)
			if os.SameFile(before, kept) {
				t.Fatal("linked where it must copy")
			}
			if b, err := m.Bytes(); err != nil || string(b) != c.data {
				t.Fatalf("entry bytes %q (%v)", b, err)
			}
			if name == "another name" {
				if b, _ := os.ReadFile(p + ".other"); string(b) != c.data {
					t.Fatalf("the other name's file changed: %q", b)
				}
			}
		})
	}
}

// A heal that links its entry and then never replaces the file leaves no entry sharing the
// file's inode: not when it fails before the rename, nor after a crash once the journal is
// resolved. The file keeps its one name, and a later heal links again.
func TestLinkedEntryNeverOutlivesAHealThatDidNotReplace(t *testing.T) {
	for _, how := range []string{"rename fails", "crash at quarantined", "crash at temp-written"} {
		t.Run(how, func(t *testing.T) {
			e, faults, _, p, _ := appendingApp(t)
			rule := &e.Policy.Rules[0]
			linked := false
			faults.set(func(op, path string) error {
				if op == "link" && filepath.Base(path) == filepath.Base(p) {
					linked = true
				}
				if how == "rename fails" && op == "rename" && path == p {
					return errors.New("injected")
				}
				return nil
			})
			e.onStep = func(s, path string) {
				if how == "crash at "+s {
					panic(how)
				}
			}
			func() {
				defer func() { recover() }()
				if r := e.Heal(context.Background(), Target{Path: p, Rule: rule}, false); r.Action == ActionHealed {
					t.Fatalf("healed: %+v", r)
				}
			}()
			if !linked {
				t.Fatal("the heal never linked its entry")
			}
			e2 := New(e.Policy, Options{Faults: faults.fault})
			if _, err := e2.Recover(); err != nil {
				t.Fatal(err)
			}
			if b, _ := os.ReadFile(p); string(b) != linkedOrig {
				t.Fatalf("the file is not the original: %q", b)
			}
			if n := nlink(t, p); n != 1 {
				t.Fatalf("the file has %d names after the heal that did not replace it", n)
			}
			if all, _ := e2.Quarantine.List(); len(all) != 0 {
				t.Fatalf("%d quarantine entries left; the file kept its bytes", len(all))
			}
			faults.set(nil)
			before, _ := os.Lstat(p)
			if r := e2.Heal(context.Background(), Target{Path: p, Rule: rule}, false); r.Action != ActionHealed {
				t.Fatalf("heal after: %+v", r)
			}
			if f, _ := onlyEntry(t, e2); !sameFile(t, f, before) {
				t.Fatal("the heal after did not link its entry")
			}
		})
	}
}

func sameFile(t *testing.T, p string, fi os.FileInfo) bool {
	t.Helper()
	got, err := os.Lstat(p)
	return err == nil && os.SameFile(got, fi)
}

// A state dir on another file system than the tree: the original is copied, and the heal
// is the same.
func TestQuarantineOnAnotherFileSystemCopies(t *testing.T) {
	shm, err := os.MkdirTemp("/dev/shm", "sessionmedic-state")
	if err != nil {
		t.Skip("no /dev/shm")
	}
	defer os.RemoveAll(shm)
	dir := filepath.Join(t.TempDir(), "sessions")
	os.MkdirAll(dir, 0o755)
	a, _ := os.Stat(shm)
	b, _ := os.Stat(dir)
	if a.Sys().(*syscall.Stat_t).Dev == b.Sys().(*syscall.Stat_t).Dev {
		t.Skip("/dev/shm is on the tree's file system here")
	}
	cfg := &policy.Config{Version: 1, StateDir: filepath.Join(shm, "state"), Rules: []policy.Rule{{
		Name: "j", Format: "jsonl", Paths: []string{dir}, Lock: policy.Lock{Protocol: "none"},
		Strategies: []policy.Strategy{policy.Salvage}, Limits: policy.Limits{MaxLoss: 0.9}, Mode: "heal",
	}}}
	e := New(cfg, Options{QuietCheck: time.Millisecond})
	p := filepath.Join(dir, "s.jsonl")
	os.WriteFile(p, []byte(linkedOrig), 0o644)
	if r := e.Heal(context.Background(), Target{Path: p, Rule: &e.Policy.Rules[0]}, false); r.Action != ActionHealed {
		t.Fatalf("%+v", r)
	}
	if b, _ := os.ReadFile(p); string(b) != "{\"n\":1}\n{\"n\":2}\n" {
		t.Fatalf("healed to %q", b)
	}
	if _, m := onlyEntry(t, e); m.Size != int64(len(linkedOrig)) {
		t.Fatalf("entry of %d bytes", m.Size)
	} else if got, err := m.Bytes(); err != nil || string(got) != linkedOrig {
		t.Fatalf("entry %q (%v)", got, err)
	}
}
