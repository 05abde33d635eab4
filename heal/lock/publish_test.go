package lock

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
	"testing"
)

// TestCreateExclPublishesWhole: a lock file appears with its whole body or not at all (a power
// cut after an unsynced create could otherwise leave it empty or NUL-filled, which OpenViking's
// lockers cannot parse), and nothing else is left in its directory.
func TestCreateExclPublishesWhole(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, OVPathLockName)
	body := []byte("owner:1700000000000000000:T")
	var announced []string
	faults := func(op, p string) error {
		announced = append(announced, op)
		if _, err := os.Lstat(p); !errors.Is(err, fs.ErrNotExist) {
			t.Errorf("%s announced with %s already there (%v)", op, p, err)
		}
		return nil
	}
	snap, err := createExcl(path, 0o644, body, faults)
	if err != nil {
		t.Fatal(err)
	}
	if got, err := os.ReadFile(path); err != nil || string(got) != string(body) || snap.size != int64(len(body)) {
		t.Fatalf("lock holds %q (%v), snapshot size %d", got, err, snap.size)
	}
	if runtime.GOOS == "linux" && (len(announced) != 1 || announced[0] != "link") {
		t.Errorf("announced %v, want [link]", announced)
	}
	if ents, _ := os.ReadDir(dir); len(ents) != 1 {
		t.Errorf("the directory holds %d names, want the lock alone", len(ents))
	}
	if fi, err := os.Stat(path); err != nil || fi.Mode().Perm()&0o600 != 0o600 {
		t.Errorf("mode %v (%v)", fi.Mode(), err)
	}
	if _, err := createExcl(path, 0o644, []byte("other:1:T"), nil); !errors.Is(err, fs.ErrExist) {
		t.Fatalf("second create: %v, want ErrExist", err)
	}
	if got, _ := os.ReadFile(path); string(got) != string(body) {
		t.Fatalf("the second create changed the lock: %q", got)
	}
	// A fault at the publication fails it and leaves nothing.
	other := filepath.Join(dir, "other.lock")
	boom := errors.New("boom")
	if _, err := createExcl(other, 0o644, body, func(string, string) error { return boom }); runtime.GOOS == "linux" && !errors.Is(err, boom) {
		t.Fatalf("faulted create: %v", err)
	}
	if runtime.GOOS == "linux" {
		if _, err := os.Lstat(other); !errors.Is(err, fs.ErrNotExist) {
			t.Fatalf("a faulted create left %s (%v)", other, err)
		}
	}
}
