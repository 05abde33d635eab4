//go:build linux

package security

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

// A lock file reached through a directory of the attacker's tree that is a symlink to a
// root-only directory (the flock and the lockfile protocols): root never creates, opens or
// flocks anything there; the heal is refused and says why.
func TestLockFileThroughASymlinkedDirectory(t *testing.T) {
	for _, lock := range []string{`flock: "{dir}/locks/{name}.lock"`, `lockfile: "{dir}/locks/{name}.lock"`} {
		t.Run(strings.SplitN(lock, ":", 2)[0], func(t *testing.T) {
			needRoot(t)
			s := newStage(t, "format: jsonl, lock: {"+lock+"}")
			f := filepath.Join(s.tree, "s.jsonl")
			write(t, f, torn, 0o644, attackerUID)
			os.Symlink(s.rootOnly, filepath.Join(s.tree, "locks"))
			os.Lchown(filepath.Join(s.tree, "locks"), attackerUID, attackerUID)
			before := snap(t, s.victim, s.rootOnly)
			r := sm(t, nil, "heal", "-config", s.policy)
			if r.code != 1 || !strings.Contains(r.stdout, "s.jsonl") {
				t.Errorf("heal: exit %d, want 1 (refused)\n%s%s", r.code, r.stdout, r.stderr)
			}
			unchanged(t, before, s.victim, s.rootOnly)
			if b, _ := os.ReadFile(f); string(b) != torn {
				t.Errorf("healed without its lock: %q", b)
			}
		})
	}
}

// Codex's thread-writer-locks directory swapped for a symlink to a root-only directory: root
// creates no coordination or thread lock there, and does not heal the rollout unlocked.
func TestCodexLockDirectorySymlink(t *testing.T) {
	needRoot(t)
	s := newStage(t, "preset: codex")
	if out, err := exec.Command("cp", "-a", "../../heal/testdata/samples/codex/glued_record/home/.codex/.", s.tree).CombinedOutput(); err != nil {
		t.Fatalf("cp: %v %s", err, out)
	}
	locks := filepath.Join(s.tree, "thread-writer-locks")
	os.RemoveAll(locks)
	os.Symlink(s.rootOnly, locks)
	filepath.Walk(s.tree, func(p string, _ os.FileInfo, _ error) error { return os.Lchown(p, attackerUID, attackerUID) })
	before := snap(t, s.victim, s.rootOnly)
	rollouts := snap(t, filepath.Join(s.tree, "sessions"))
	r := sm(t, nil, "heal", "-config", s.policy)
	if r.code != 1 || !strings.Contains(r.stdout, "thread-writer-locks") {
		t.Errorf("heal: exit %d, want 1 (refused, naming the lock directory)\n%s%s", r.code, r.stdout, r.stderr)
	}
	unchanged(t, before, s.victim, s.rootOnly)
	unchanged(t, rollouts, filepath.Join(s.tree, "sessions"))
}

// The attacker's lock file is a character device (a FIFO, another test): it is never
// opened or flocked, and the heal is refused as "not a regular file".
func TestLockFileDevice(t *testing.T) {
	needRoot(t)
	s := newStage(t, `format: jsonl, lock: {flock: "{file}.lock"}`)
	f := filepath.Join(s.tree, "s.jsonl")
	write(t, f, torn, 0o644, attackerUID)
	if err := syscall.Mknod(f+".lock", syscall.S_IFCHR|0o666, int(unixMkdev(1, 3))); err != nil {
		t.Skip("mknod:", err) // a container without CAP_MKNOD
	}
	r := sm(t, nil, "heal", "-config", s.policy)
	if r.code != 1 || !strings.Contains(r.stdout, "not a regular file") {
		t.Errorf("heal: exit %d, want 1 (the lock is not a regular file)\n%s%s", r.code, r.stdout, r.stderr)
	}
	if b, _ := os.ReadFile(f); string(b) != torn {
		t.Errorf("healed under a device as its lock: %q", b)
	}
}

// unixMkdev is makedev(3) for Linux.
func unixMkdev(major, minor uint32) uint64 {
	return uint64(major&0xfff)<<8 | uint64(minor&0xff) | uint64(minor&^0xff)<<12 | uint64(major&^0xfff)<<32
}

// The rule's root, in the attacker's home, is a symlink the attacker made into the victim's
// tree before the policy was loaded: root refuses the root (rule.path_missing with the
// reason) and never reads, quarantines or writes the victim's files. A root-owned link (the
// operator's) keeps working.
func TestRuleRootLinkedIntoAnotherUsersTree(t *testing.T) {
	needRoot(t)
	s := newStage(t, "")
	os.Remove(s.tree)
	os.Symlink(filepath.Join(s.victim, "projects"), s.tree)
	os.Lchown(s.tree, attackerUID, attackerUID)
	before := snap(t, s.victim, s.rootOnly)
	for _, args := range [][]string{{"check"}, {"heal"}} {
		r := sm(t, nil, append(args, "-config", s.policy)...)
		if !strings.Contains(r.stderr+r.stdout, "owned by uid 65534") {
			t.Errorf("%v: exit %d, the refused root is not said\n%s%s", args, r.code, r.stdout, r.stderr)
		}
	}
	unchanged(t, before, s.victim, s.rootOnly)
	if p := stateHolds(t, s.state, "victim"); p != "" {
		t.Errorf("the victim's bytes are in the state dir: %s", p)
	}
	// The same link made by root (the operator's) is followed.
	os.Lchown(s.tree, 0, 0)
	r := sm(t, nil, "heal", "-json", "-config", s.policy)
	if r.code != 0 || !strings.Contains(r.stdout, "v.jsonl") {
		t.Errorf("heal through root's link: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	var st syscall.Stat_t
	syscall.Stat(filepath.Join(s.victim, "projects", "v.jsonl"), &st)
	if st.Uid != victimUID {
		t.Errorf("the victim's healed session belongs to uid %d", st.Uid)
	}
}
