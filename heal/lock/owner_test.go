package lock

import (
	"context"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"
)

// takers runs each protocol that creates a lock file in dir, naming the file it creates.
var takers = []struct {
	name string
	file string
	take func(dir string) (Held, error)
}{
	{"lockfile", "s.json.lock", func(d string) (Held, error) {
		return LockFile(context.Background(), filepath.Join(d, "s.json.lock"), Options{Stale: time.Minute})
	}},
	{"flock", "s.json.lock", func(d string) (Held, error) {
		return Flock(context.Background(), filepath.Join(d, "s.json.lock"), false, Options{})
	}},
	{"flock-recheck", "s.json.lock", func(d string) (Held, error) {
		return Flock(context.Background(), filepath.Join(d, "s.json.lock"), true, Options{})
	}},
	{"openclaw", "s.jsonl.lock", func(d string) (Held, error) {
		return OpenClaw(context.Background(), filepath.Join(d, "s.jsonl.lock"), true, Options{Stale: time.Minute})
	}},
	{"codex", "thread-writer-locks/019a0000-0000-7000-8000-000000000000.lock", func(d string) (Held, error) {
		os.Mkdir(filepath.Join(d, "thread-writer-locks"), 0o755)
		os.Chown(filepath.Join(d, "thread-writer-locks"), 65534, 65534)
		return Codex(context.Background(), d, "019a0000-0000-7000-8000-000000000000", Options{})
	}},
}

// TestLockFilesBelongToTheTree: run as root in a directory another user owns, every lock
// file a protocol creates belongs to that user (the app running as them must open it after
// us), never to root.
func TestLockFilesBelongToTheTree(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root to give the directory another owner")
	}
	for _, tc := range takers {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			os.Chown(dir, 65534, 65534)
			h, err := tc.take(dir)
			if err != nil {
				t.Fatal(err)
			}
			var st syscall.Stat_t
			err = syscall.Lstat(filepath.Join(dir, tc.file), &st)
			h.Release()
			if err != nil {
				t.Fatalf("no lock file while the lock is held: %v", err)
			}
			if st.Uid != 65534 || st.Gid != 65534 {
				t.Fatalf("%s belongs to %d:%d, not to its directory's owner 65534:65534", tc.file, st.Uid, st.Gid)
			}
			// A token protocol removes its file on release: it was checked while held.
		})
	}
}

// TestLockFileSymlinkNeverFollowed: a lock file name that is a symlink (planted by the
// tree's user towards a file of someone else) is refused; nothing is created, truncated or
// written at its target.
func TestLockFileSymlinkNeverFollowed(t *testing.T) {
	for _, tc := range takers {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			victimDir := t.TempDir()
			victim := filepath.Join(victimDir, "victim")
			os.WriteFile(victim, []byte("secret\n"), 0o600)
			absent := filepath.Join(victimDir, "absent")
			for _, target := range []string{victim, absent} {
				link := filepath.Join(dir, tc.file)
				os.MkdirAll(filepath.Dir(link), 0o755)
				os.Remove(link)
				if err := os.Symlink(target, link); err != nil {
					t.Fatal(err)
				}
				h, err := tc.take(dir)
				if err == nil {
					h.Release()
					t.Errorf("took a lock through a symlink to %s", target)
				}
				if b, _ := os.ReadFile(victim); string(b) != "secret\n" {
					t.Fatalf("the victim was changed: %q", b)
				}
				if _, err := os.Lstat(absent); !os.IsNotExist(err) {
					t.Fatalf("a file was created at the symlink's target: %v", err)
				}
			}
		})
	}
}
