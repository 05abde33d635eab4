package lock

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"syscall"
	"testing"

	"golang.org/x/sys/unix"
)

const copilotID = "568f5a60-7fc4-4a49-a663-724cd54a5984"

// copilotTree is <state>/session-state/<id>/ with events.jsonl, and the operation locks'
// directory when ops is set.
func copilotTree(t *testing.T, ops bool) (dir, opLock string) {
	t.Helper()
	state := filepath.Join(t.TempDir(), "session-state")
	dir = filepath.Join(state, copilotID)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	os.WriteFile(filepath.Join(dir, "events.jsonl"), []byte("{}\n"), 0o600)
	if ops {
		os.Mkdir(filepath.Join(state, ".session-operation-locks"), 0o700)
	}
	return dir, filepath.Join(state, ".session-operation-locks", copilotID+".lock")
}

// holdFlock opens (creating) p and flocks it LOCK_EX on a descriptor of its own, as another
// process would; the returned func lets it go.
func holdFlock(t *testing.T, p string) func() {
	t.Helper()
	fd, err := unix.Open(p, unix.O_RDWR|unix.O_CREAT|unix.O_CLOEXEC, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	if err := unix.Flock(fd, unix.LOCK_EX|unix.LOCK_NB); err != nil {
		t.Fatal(err)
	}
	return func() { unix.Flock(fd, unix.LOCK_UN); unix.Close(fd) }
}

func TestCopilotTakesTheOperationLockAndKeepsItsFile(t *testing.T) {
	dir, opLock := copilotTree(t, true)
	h, err := Copilot(context.Background(), dir, copilotID, Options{})
	if err != nil {
		t.Fatal(err)
	}
	fi, err := os.Stat(opLock)
	if err != nil {
		t.Fatalf("the operation lock was not created: %v", err)
	}
	if fi.Mode().Perm() != 0o644 {
		t.Fatalf("operation lock mode %v, want 0644", fi.Mode().Perm())
	}
	// While held, Copilot's own try (LOCK_EX|LOCK_NB on its descriptor) fails.
	fd, _ := unix.Open(opLock, unix.O_WRONLY, 0)
	if err := unix.Flock(fd, unix.LOCK_EX|unix.LOCK_NB); !errors.Is(err, unix.EWOULDBLOCK) {
		t.Fatalf("the operation lock is not held: %v", err)
	}
	if err := h.Release(); err != nil {
		t.Fatal(err)
	}
	if err := unix.Flock(fd, unix.LOCK_EX|unix.LOCK_NB); err != nil {
		t.Fatalf("the operation lock was not let go: %v", err)
	}
	unix.Close(fd)
	if _, err := os.Stat(opLock); err != nil {
		t.Fatalf("the operation lock file was removed: %v", err)
	}
	if h.Release() != nil {
		t.Fatal("a second Release is not nil")
	}
}

func TestCopilotBusyWhileAProcessHoldsTheSessionOrAnOperation(t *testing.T) {
	dir, opLock := copilotTree(t, true)
	// A stale pair (dead process, no flock) is not live.
	os.WriteFile(filepath.Join(dir, "inuse.999999.lock"), []byte("999999\n"), 0o600)
	os.WriteFile(filepath.Join(dir, "inuse.999999.hold"), nil, 0o600)
	if live, why, err := CopilotLive(dir); live || err != nil {
		t.Fatalf("a stale inuse pair is live: %v %q %v", live, why, err)
	}
	h, err := Copilot(context.Background(), dir, copilotID, Options{})
	if err != nil {
		t.Fatalf("stale inuse pair: %v", err)
	}
	h.Release()
	for _, name := range []string{"inuse.4242.hold", "op"} {
		p := filepath.Join(dir, name)
		if name == "op" {
			p = opLock
		}
		release := holdFlock(t, p)
		_, err := Copilot(context.Background(), dir, copilotID, Options{})
		if !errors.Is(err, ErrBusy) {
			t.Fatalf("%s held: %v, want busy", name, err)
		}
		if name != "op" {
			if live, why, _ := CopilotLive(dir); !live || why == "" {
				t.Fatalf("held hold not live: %q", why)
			}
		}
		release()
		h, err := Copilot(context.Background(), dir, copilotID, Options{})
		if err != nil {
			t.Fatalf("%s let go: %v", name, err)
		}
		h.Release()
	}
	// Nothing of Copilot's was created or removed.
	for _, name := range []string{"inuse.999999.lock", "inuse.999999.hold", "inuse.4242.hold"} {
		if _, err := os.Stat(filepath.Join(dir, name)); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
	}
}

func TestCopilotWithoutOperationLocksChecksLivenessOnly(t *testing.T) {
	dir, opLock := copilotTree(t, false)
	h, err := Copilot(context.Background(), dir, copilotID, Options{})
	if err != nil {
		t.Fatal(err)
	}
	h.Release()
	if _, err := os.Stat(filepath.Dir(opLock)); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("the operation locks directory was created: %v", err)
	}
	release := holdFlock(t, filepath.Join(dir, "inuse.7.hold"))
	defer release()
	if _, err := Copilot(context.Background(), dir, copilotID, Options{}); !errors.Is(err, ErrBusy) {
		t.Fatalf("a held session without operation locks: %v, want busy", err)
	}
}

func TestCopilotRefusesSymlinksFIFOsAndBadNames(t *testing.T) {
	dir, opLock := copilotTree(t, true)
	if _, err := Copilot(context.Background(), dir, "not-an-id", Options{}); err == nil {
		t.Fatal("a bad session id was taken")
	}
	// A hold that is a symlink or a FIFO is nothing Copilot made: busy, never opened.
	victim := filepath.Join(t.TempDir(), "victim")
	os.WriteFile(victim, []byte("x"), 0o600)
	os.Symlink(victim, filepath.Join(dir, "inuse.1.hold"))
	if live, _, _ := CopilotLive(dir); !live {
		t.Fatal("a symlinked hold is not live")
	}
	os.Remove(filepath.Join(dir, "inuse.1.hold"))
	if err := syscall.Mkfifo(filepath.Join(dir, "inuse.2.hold"), 0o600); err != nil {
		t.Fatal(err)
	}
	if live, _, _ := CopilotLive(dir); !live {
		t.Fatal("a FIFO hold is not live")
	}
	os.Remove(filepath.Join(dir, "inuse.2.hold"))
	// An operation lock that is a symlink is refused, and the target is not created.
	target := filepath.Join(t.TempDir(), "made")
	os.Symlink(target, opLock)
	if _, err := Copilot(context.Background(), dir, copilotID, Options{}); err == nil || errors.Is(err, ErrBusy) {
		t.Fatalf("a symlinked operation lock: %v, want an error", err)
	}
	if _, err := os.Lstat(target); !errors.Is(err, os.ErrNotExist) {
		t.Fatal("the symlink's target was created")
	}
	os.Remove(opLock)
	// An operation locks directory that is a symlink is refused.
	locks := filepath.Dir(opLock)
	os.Remove(locks)
	os.Symlink(t.TempDir(), locks)
	if _, err := Copilot(context.Background(), dir, copilotID, Options{}); err == nil || errors.Is(err, ErrBusy) {
		t.Fatalf("a symlinked operation locks directory: %v, want an error", err)
	}
}
