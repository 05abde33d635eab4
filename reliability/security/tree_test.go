//go:build linux

package security

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

const torn = "{\"a\":1}\n{\"a\""

// A directory of the attacker's tree that is a symlink into the victim's tree, there from
// the start or swapped in and out while root heals again and again: the victim's damaged
// session is never read, copied, quarantined or written.
func TestSymlinkedDirectoryIntoTheVictimsTree(t *testing.T) {
	needRoot(t)
	s := newStage(t, "")
	mkdir(t, filepath.Join(s.tree, "projects"), 0o755, attackerUID)
	os.Symlink(filepath.Join(s.victim, "projects"), filepath.Join(s.tree, "projects", "linked"))
	os.Lchown(filepath.Join(s.tree, "projects", "linked"), attackerUID, attackerUID)
	mkdir(t, filepath.Join(s.tree, "projects", "p"), 0o755, attackerUID)
	write(t, filepath.Join(s.tree, "projects", "p", "v.jsonl"), torn, 0o644, attackerUID)
	before := snap(t, s.victim, s.rootOnly)
	// An operator (or a script) names a file through the link: still below the rule's root,
	// and no symlink below it is followed.
	write(t, filepath.Join(s.victim, "projects", "h.jsonl"), "{\"secret\":\"victim\"}\n", 0o600, victimUID)
	before = snap(t, s.victim, s.rootOnly)
	r := sm(t, nil, "heal", "-config", s.policy, filepath.Join(s.tree, "projects", "linked", "v.jsonl"), filepath.Join(s.tree, "projects", "linked", "h.jsonl"))
	if strings.Count("\n"+r.stdout, "\nskipped ") != 2 {
		t.Errorf("a file named through a symlinked directory was not skipped:\n%s%s", r.stdout, r.stderr)
	}
	// The attacker swaps projects/p for a link to the victim's projects/ while root heals.
	done := startAttacker(t, "swap", filepath.Join(s.tree, "projects", "p"), filepath.Join(s.victim, "projects"), "3000")
	for range 20 {
		sm(t, nil, "heal", "-config", s.policy)
		// Damaged again, by the attacker (who cannot write through the link: the victim's
		// directory is the victim's).
		startAttacker(t, "write", filepath.Join(s.tree, "projects", "p", "v.jsonl"), torn, "1")()
	}
	done()
	unchanged(t, before, s.victim, s.rootOnly)
	if p := stateHolds(t, s.state, "victim"); p != "" {
		t.Errorf("the victim's bytes are in the state dir: %s", p)
	}
}

// A lock file name that is a symlink to a root-only place: the heal never creates, opens or
// truncates anything there (refused instead).
func TestLockFileSymlink(t *testing.T) {
	needRoot(t)
	s := newStage(t, `format: jsonl, lock: {flock: "{file}.lock"}`)
	f := filepath.Join(s.tree, "s.jsonl")
	write(t, f, torn, 0o644, attackerUID)
	os.Symlink(filepath.Join(s.rootOnly, "created-by-root"), f+".lock")
	os.Lchown(f+".lock", attackerUID, attackerUID)
	os.Symlink(filepath.Join(s.rootOnly, "secret.jsonl"), filepath.Join(s.tree, "t.jsonl.lock"))
	write(t, filepath.Join(s.tree, "t.jsonl"), torn, 0o644, attackerUID)
	before := snap(t, s.victim, s.rootOnly)
	r := sm(t, nil, "heal", "-config", s.policy)
	if r.code != 1 {
		t.Errorf("heal: exit %d, want 1 (refused)\n%s%s", r.code, r.stdout, r.stderr)
	}
	unchanged(t, before, s.victim, s.rootOnly)
}

// A heal as root in the attacker's tree writes as the attacker: the healed file keeps its
// owner, group, mode, ACL and xattrs; nothing in the tree belongs to root after; in a
// directory of the tree root owns, where the attacker cannot write, nothing is healed.
func TestHealKeepsTheTreesOwnership(t *testing.T) {
	needRoot(t)
	s := newStage(t, "")
	f := filepath.Join(s.tree, "s.jsonl")
	write(t, f, torn, 0o640, attackerUID)
	xattr := syscall.Setxattr(f, "user.origin", []byte("attacker"), 0) == nil
	mkdir(t, filepath.Join(s.tree, "rootdir"), 0o755, 0)
	write(t, filepath.Join(s.tree, "rootdir", "r.jsonl"), torn, 0o644, attackerUID)
	r := sm(t, nil, "heal", "-json", "-config", s.policy)
	if r.code != 1 {
		t.Fatalf("heal: exit %d, want 1 (one refused)\n%s%s", r.code, r.stdout, r.stderr)
	}
	var st syscall.Stat_t
	syscall.Stat(f, &st)
	if b, _ := os.ReadFile(f); string(b) != "{\"a\":1}\n" || st.Uid != attackerUID || st.Gid != attackerUID || st.Mode&0o7777 != 0o640 {
		t.Errorf("healed file %q: %d:%d %o", b, st.Uid, st.Gid, st.Mode&0o7777)
	}
	if xattr {
		buf := make([]byte, 64)
		if n, err := syscall.Getxattr(f, "user.origin", buf); err != nil || string(buf[:n]) != "attacker" {
			t.Errorf("user.origin after the heal: %q %v", buf[:max(n, 0)], err)
		}
	}
	if b, _ := os.ReadFile(filepath.Join(s.tree, "rootdir", "r.jsonl")); string(b) != torn {
		t.Errorf("healed where the tree's owner cannot write: %q", b)
	}
	filepath.Walk(s.tree, func(p string, fi os.FileInfo, err error) error {
		if err == nil && p != filepath.Join(s.tree, "rootdir") && fi.Sys().(*syscall.Stat_t).Uid != attackerUID {
			t.Errorf("%s belongs to uid %d after the heal", p, fi.Sys().(*syscall.Stat_t).Uid)
		}
		return nil
	})
}

// The attacker hard-links root's secret into the tree (root can; protected_hardlinks stops
// only the attacker): it is never read, so never quarantined nor copied.
func TestHardLinkToAnotherUsersFile(t *testing.T) {
	needRoot(t)
	s := newStage(t, "")
	secret := filepath.Join(s.rootOnly, "secret.jsonl")
	write(t, secret, "{\"secret\":\"root\"}\n{\"torn", 0o600, 0)
	if err := os.Link(secret, filepath.Join(s.tree, "s.jsonl")); err != nil {
		t.Skip(err)
	}
	before := snap(t, s.victim, s.rootOnly)
	r := sm(t, nil, "heal", "-json", "-config", s.policy)
	if !strings.Contains(r.stdout, "hard link") && !strings.Contains(r.stdout, "permission denied") {
		t.Errorf("no report of the hard link:\n%s", r.stdout)
	}
	unchanged(t, before, s.victim, s.rootOnly)
	if p := stateHolds(t, s.state, "\"root\""); p != "" {
		t.Errorf("root's secret is in the state dir: %s", p)
	}
}

// FIFOs where a session, a lock file and a backup would be: every command finishes (sm
// fails a run that takes a minute) and reports them.
func TestFIFOsNeverHang(t *testing.T) {
	needRoot(t)
	s := newStage(t, `format: jsonl, lock: {flock: "{file}.lock"}, backups: ["{file}.bak"], strategies: [backup, salvage]`)
	syscall.Mkfifo(filepath.Join(s.tree, "fifo.jsonl"), 0o666)
	write(t, filepath.Join(s.tree, "s.jsonl"), torn, 0o644, attackerUID)
	syscall.Mkfifo(filepath.Join(s.tree, "s.jsonl.lock"), 0o666)
	syscall.Mkfifo(filepath.Join(s.tree, "s.jsonl.bak"), 0o666)
	for _, args := range [][]string{{"check"}, {"heal"}, {"heal", "-dry-run"}} {
		r := sm(t, nil, append(args, "-config", s.policy)...)
		if !strings.Contains(r.stdout, "fifo.jsonl") {
			t.Errorf("%v: the FIFO is not reported:\n%s", args, r.stdout)
		}
	}
}

// A directory of the tree that anyone may write: root refuses to heal there.
func TestWorldWritableDirectory(t *testing.T) {
	needRoot(t)
	s := newStage(t, "")
	mkdir(t, filepath.Join(s.tree, "open"), 0o777, attackerUID)
	write(t, filepath.Join(s.tree, "open", "s.jsonl"), torn, 0o644, attackerUID)
	r := sm(t, nil, "heal", "-config", s.policy)
	if r.code != 1 || !strings.Contains(r.stdout, "parent directory has insecure permissions") {
		t.Errorf("exit %d:\n%s", r.code, r.stdout)
	}
	if b, _ := os.ReadFile(filepath.Join(s.tree, "open", "s.jsonl")); string(b) != torn {
		t.Errorf("healed in a world-writable directory: %q", b)
	}
}

// File names that forge report lines or drive a terminal: one line per file.
func TestNamesCannotForgeOutput(t *testing.T) {
	needRoot(t)
	s := newStage(t, "")
	names := []string{"x\nhealthy\tattacker\tshadow.jsonl", "\x1b[2J\x1b[Hy.jsonl", "z\r.jsonl"}
	for _, n := range names {
		write(t, filepath.Join(s.tree, n), torn, 0o644, attackerUID)
	}
	r := sm(t, nil, "check", "-config", s.policy)
	lines := strings.Split(strings.TrimSuffix(r.stdout, "\n"), "\n")
	if len(lines) != len(names)+1 || strings.ContainsAny(r.stdout, "\x1b\r") {
		t.Errorf("%d lines for %d files:\n%q", len(lines), len(names), r.stdout)
	}
	for _, l := range lines[:len(lines)-1] {
		if !strings.HasPrefix(l, "damaged ") {
			t.Errorf("a line that is not a damaged file's: %q", l)
		}
	}
}

// quarantine restore re-derives everything from the current policy: a manifest pointing
// outside every rule is refused; a file that is gone comes back with its directory's owner
// and permission bits only, whatever the manifest says.
func TestRestoreIsRederived(t *testing.T) {
	needRoot(t)
	s := newStage(t, "")
	f := filepath.Join(s.tree, "s.jsonl")
	write(t, f, torn, 0o644, attackerUID)
	if r := sm(t, nil, "heal", "-config", s.policy); r.code != 0 {
		t.Fatalf("heal: %d %s", r.code, r.stderr)
	}
	ms, _ := filepath.Glob(filepath.Join(s.state, "quarantine", "*", "*", "manifest.json"))
	if len(ms) != 1 {
		t.Fatalf("manifests: %v", ms)
	}
	var m map[string]any
	b, _ := os.ReadFile(ms[0])
	json.Unmarshal(b, &m)
	id := m["id"].(string)
	// As if an old (or forged) entry: root's ownership, setuid.
	m["identity"].(map[string]any)["mode"] = 0o4755
	m["identity"].(map[string]any)["uid"] = 0
	b, _ = json.Marshal(m)
	os.WriteFile(ms[0], b, 0o600)
	os.Remove(f)
	if r := sm(t, nil, "quarantine", "restore", id, "-config", s.policy); r.code != 0 {
		t.Fatalf("restore: %d %s", r.code, r.stderr)
	}
	var st syscall.Stat_t
	syscall.Stat(f, &st)
	if st.Uid != attackerUID || st.Mode&0o7000 != 0 {
		t.Errorf("restored file: uid %d mode %o; want the attacker's, no setuid", st.Uid, st.Mode&0o7777)
	}
	before := snap(t, s.victim, s.rootOnly)
	m["path"] = filepath.Join(s.rootOnly, "planted")
	b, _ = json.Marshal(m)
	os.WriteFile(ms[0], b, 0o600)
	r := sm(t, nil, "quarantine", "restore", id, "-config", s.policy)
	if r.code != 2 || !strings.Contains(r.stderr, fmt.Sprintf("%s is guarded by no rule", filepath.Join(s.rootOnly, "planted"))) {
		t.Errorf("restore outside the rules: exit %d %q", r.code, r.stderr)
	}
	unchanged(t, before, s.victim, s.rootOnly)
}
