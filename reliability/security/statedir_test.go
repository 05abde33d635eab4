//go:build linux

package security

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

// A forged quarantine entry in a state dir the attacker owns (as the shipped unit's
// StateDirectory= belonged to its User= and root's default was the same directory): every
// command run as root refuses the state dir, exit 2, one line naming it; the manifest's
// target (a root-only file, a victim's session, a new setuid file) is never touched.
func TestForgedManifestInAStateDirTheAttackerOwns(t *testing.T) {
	needRoot(t)
	s := newStage(t, "")
	mkdir(t, s.state, 0o700, attackerUID)
	entry := filepath.Join(s.state, "quarantine", "2026-01-01", "20260101T000000Z-00000001")
	mkdir(t, filepath.Join(s.state, "quarantine"), 0o700, attackerUID)
	mkdir(t, filepath.Dir(entry), 0o700, attackerUID)
	mkdir(t, entry, 0o700, attackerUID)
	for i, target := range []string{filepath.Join(s.rootOnly, "secret.jsonl"), filepath.Join(s.victim, "projects", "v.jsonl"), filepath.Join(s.rootOnly, "new-setuid")} {
		id := fmt.Sprintf("20260101T000000Z-0000000%d", i+1)
		e := filepath.Join(filepath.Dir(entry), id)
		mkdir(t, e, 0o700, attackerUID)
		write(t, filepath.Join(e, "x"), "#!/bin/sh\nid > /tmp/pwned\n", 0o600, attackerUID)
		write(t, filepath.Join(e, "manifest.json"), fmt.Sprintf(`{"id":%q,"path":%q,"rule":"attacker","identity":{"mode":2541,"uid":0,"gid":0},"size":26,"sha256":"%s","file":"x"}`,
			id, target, "0000"), 0o600, attackerUID)
	}
	before := snap(t, s.victim, s.rootOnly)
	for _, args := range [][]string{
		{"quarantine", "restore", "20260101T000000Z-00000001"}, {"quarantine", "restore", "20260101T000000Z-00000002"},
		{"quarantine", "restore", "20260101T000000Z-00000003"}, {"quarantine", "list"}, {"heal"}, {"check"},
	} {
		r := sm(t, nil, append(args, "-config", s.policy)...)
		want := fmt.Sprintf("sessionmedic: state_dir %s: not used: %s is owned by uid %d, not by this process's uid 0", s.state, s.state, attackerUID)
		if r.code != 2 || !strings.HasPrefix(r.stderr, want) || strings.Count(r.stderr, "\n") != 1 {
			t.Errorf("%v: exit %d, stderr %q; want exit 2 and one line %q…", args, r.code, r.stderr, want)
		}
	}
	unchanged(t, before, s.victim, s.rootOnly)
}

// A state sub-directory swapped for a symlink (last-good -> a root-only directory), and a
// state dir others can write: refused by every command, nothing written through the link.
func TestStateDirWithASymlinkOrOpenToOthers(t *testing.T) {
	needRoot(t)
	for _, tc := range []struct {
		name   string
		set    func(s *stage)
		offend func(s *stage) string
	}{
		{"symlinked last-good", func(s *stage) { os.Symlink(s.rootOnly, filepath.Join(s.state, "last-good")) },
			func(s *stage) string { return filepath.Join(s.state, "last-good") + " is a symlink" }},
		{"world-writable journal", func(s *stage) { mkdir(t, filepath.Join(s.state, "journal"), 0o777, 0) },
			func(s *stage) string {
				return filepath.Join(s.state, "journal") + " is writable by group or others (mode 0777)"
			}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := newStage(t, "")
			write(t, filepath.Join(s.tree, "s.jsonl"), "{\"a\":1}\n{\"a\"", 0o644, attackerUID)
			mkdir(t, s.state, 0o700, 0)
			tc.set(s)
			before := snap(t, s.victim, s.rootOnly)
			for _, args := range [][]string{{"heal"}, {"check"}, {"quarantine", "list"}, {"run"}} {
				r := sm(t, nil, append(args, "-config", s.policy)...)
				if r.code != 2 || !strings.Contains(r.stderr, "not used: "+tc.offend(s)) {
					t.Errorf("%v: exit %d, stderr %q", args, r.code, r.stderr)
				}
			}
			unchanged(t, before, s.victim, s.rootOnly)
		})
	}
}

// A policy the attacker can change is never used by root: owned by them, writable by
// others, or in (or reached through) a directory they own.
func TestPolicyTheAttackerCanChange(t *testing.T) {
	needRoot(t)
	for _, tc := range []struct {
		name string
		set  func(s *stage) (policy, offender string)
	}{
		{"owned by the attacker", func(s *stage) (string, string) {
			os.Chown(s.policy, attackerUID, attackerUID)
			return s.policy, s.policy
		}},
		{"world-writable", func(s *stage) (string, string) { os.Chmod(s.policy, 0o666); return s.policy, s.policy }},
		{"in the attacker's directory", func(s *stage) (string, string) {
			p := filepath.Join(s.tree, "policy.yaml")
			b, _ := os.ReadFile(s.policy)
			write(t, p, string(b), 0o644, 0)
			return p, s.tree
		}},
		{"a symlink into the attacker's directory", func(s *stage) (string, string) {
			p := filepath.Join(s.tree, "policy.yaml")
			b, _ := os.ReadFile(s.policy)
			write(t, p, string(b), 0o644, 0)
			link := filepath.Join(filepath.Dir(s.policy), "linked.yaml")
			os.Symlink(p, link)
			return link, s.tree
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := newStage(t, "")
			p, offender := tc.set(s)
			r := sm(t, nil, "check", "-config", p)
			if r.code != 2 || !strings.HasPrefix(r.stderr, "sessionmedic: read policy: "+offender+": not used:") {
				t.Errorf("exit %d, stderr %q; want exit 2 naming %s", r.code, r.stderr, offender)
			}
		})
	}
	s := newStage(t, "")
	if r := sm(t, nil, "check", "-config", s.policy); r.code == 2 {
		t.Errorf("root's own policy refused: %s", r.stderr)
	}
}

// Root heals a session of another user by keeping its inode in quarantine (a hard link in
// the state dir, then its only name): the entry's file is that user's, with its mode (group
// writable here), and the state dir stays trusted for every command. Only an entry's bytes
// are exempt: that user's file anywhere else in the state dir (an entry's manifest) is
// still refused.
func TestLinkedQuarantineOfAnotherUsersFile(t *testing.T) {
	needRoot(t)
	s := newStage(t, "")
	session := filepath.Join(s.tree, "s.jsonl")
	orig := "{\"a\":1}\nxx\n{\"a\":2}\n"
	write(t, session, orig, 0o664, attackerUID)
	before, err := os.Lstat(session)
	if err != nil {
		t.Fatal(err)
	}
	if r := sm(t, nil, "heal", "-config", s.policy); r.code != 0 {
		t.Fatalf("heal: exit %d, %s", r.code, r.stderr)
	}
	if b, _ := os.ReadFile(session); string(b) != "{\"a\":1}\n{\"a\":2}\n" {
		t.Fatalf("healed to %q", b)
	}
	entries, _ := filepath.Glob(filepath.Join(s.state, "quarantine", "*", "*", "s.jsonl"))
	if len(entries) != 1 {
		t.Fatalf("quarantine entries: %v", entries)
	}
	kept, _ := os.Lstat(entries[0])
	if !os.SameFile(before, kept) || kept.Mode().Perm() != 0o664 {
		t.Fatalf("the entry is not the original's inode, or not as it was (%v)", kept.Mode())
	}
	if b, _ := os.ReadFile(entries[0]); string(b) != orig {
		t.Fatalf("entry holds %q", b)
	}
	for _, args := range [][]string{{"quarantine", "list"}, {"check"}, {"heal"}} {
		if r := sm(t, nil, append(args, "-config", s.policy)...); r.code != 0 {
			t.Errorf("%v after the heal: exit %d, %s", args, r.code, r.stderr)
		}
	}
	// A restore puts the original back as that user's file; the entry stays as it was.
	id := filepath.Base(filepath.Dir(entries[0]))
	if r := sm(t, nil, "quarantine", "restore", id, "-config", s.policy); r.code != 0 {
		t.Fatalf("restore: exit %d, %s", r.code, r.stderr)
	}
	if b, _ := os.ReadFile(session); string(b) != orig {
		t.Fatalf("restored %q", b)
	}
	if fi, err := os.Lstat(session); err != nil || fi.Sys().(*syscall.Stat_t).Uid != attackerUID || os.SameFile(fi, kept) {
		t.Fatalf("the restored session is not a new file of its user: %v", err)
	}
	if b, _ := os.ReadFile(entries[0]); string(b) != orig {
		t.Fatalf("the entry after the restore holds %q", b)
	}
	manifest := filepath.Join(filepath.Dir(entries[0]), "manifest.json")
	os.Lchown(manifest, attackerUID, attackerUID)
	r := sm(t, nil, "quarantine", "list", "-config", s.policy)
	if want := manifest + " is owned by uid"; r.code != 2 || !strings.Contains(r.stderr, want) {
		t.Errorf("a manifest of another user: exit %d, stderr %q", r.code, r.stderr)
	}
}
