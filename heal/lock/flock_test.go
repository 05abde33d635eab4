package lock

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"
)

func inodeOf(t *testing.T, fi os.FileInfo) uint64 {
	t.Helper()
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		t.Fatal("no stat_t")
	}
	return st.Ino
}

// heldIsPathInode checks that the flock we hold is on the inode at path.
func heldIsPathInode(t *testing.T, h Held, path string) {
	t.Helper()
	fh, ok := h.(*flockHeld)
	if !ok {
		t.Fatalf("held is %T", h)
	}
	var fdSt syscall.Stat_t
	if err := syscall.Fstat(fh.fd, &fdSt); err != nil {
		t.Fatal(err)
	}
	if fdSt.Nlink == 0 {
		t.Fatal("held inode is unlinked")
	}
	pathInfo, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	if fdSt.Ino != inodeOf(t, pathInfo) {
		t.Fatalf("held inode %d, path inode %d", fdSt.Ino, inodeOf(t, pathInfo))
	}
}

func TestFlockBusyWhileAnotherProcessHolds(t *testing.T) {
	for _, recheck := range []bool{false, true} {
		t.Run(map[bool]string{false: "praisonai", true: "nanobot"}[recheck], func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "s.json.lock")
			holder := startHelper(t, "flock-hold", path, "locked")

			wait := 200 * time.Millisecond
			start := time.Now()
			h, err := Flock(context.Background(), path, recheck, Options{Wait: wait})
			if !errors.Is(err, ErrBusy) {
				t.Fatalf("Flock while held: %v, %v; want ErrBusy", h, err)
			}
			if el := time.Since(start); el < wait {
				t.Fatalf("returned ErrBusy after %s, before the %s wait", el, wait)
			}

			holder.release()
			h, err = Flock(context.Background(), path, recheck, Options{})
			if err != nil {
				t.Fatalf("Flock after release: %v", err)
			}
			heldIsPathInode(t, h, path)
			if got := tryFlockFromOutside(t, path); got != "busy" {
				t.Fatalf("another process sees %q while we hold it", got)
			}
			if err := h.Release(); err != nil {
				t.Fatal(err)
			}
			if err := h.Release(); err != nil {
				t.Fatalf("second Release: %v", err)
			}
			if _, err := os.Stat(path); err != nil {
				t.Fatalf("lock file gone after Release: %v", err)
			}
			if got := tryFlockFromOutside(t, path); got != "free" {
				t.Fatalf("after Release another process sees %q", got)
			}
		})
	}
}

func TestFlockWaitsForHolder(t *testing.T) {
	path := filepath.Join(t.TempDir(), "s.json.lock")
	holder := startHelper(t, "flock-hold", path, "locked")
	type res struct {
		h   Held
		err error
	}
	ch := make(chan res, 1)
	go func() {
		h, err := Flock(context.Background(), path, false, Options{Wait: 20 * time.Second, Poll: 10 * time.Millisecond})
		ch <- res{h, err}
	}()
	time.Sleep(50 * time.Millisecond)
	holder.release()
	r := <-ch
	if r.err != nil {
		t.Fatal(r.err)
	}
	defer r.h.Release()
	heldIsPathInode(t, r.h, path)
}

// A nanobot (current filelock) holder unlinks the lock file on release while
// we poll: we must end up holding the inode at the path, and never unlink it.
func TestFlockRecheckHolderUnlinksOnRelease(t *testing.T) {
	path := filepath.Join(t.TempDir(), ".session-files.lock")
	holder := startHelper(t, "flock-hold-unlink", path, "locked")
	type res struct {
		h   Held
		err error
	}
	ch := make(chan res, 1)
	go func() {
		h, err := Flock(context.Background(), path, true, Options{Wait: 20 * time.Second, Poll: 5 * time.Millisecond})
		ch <- res{h, err}
	}()
	time.Sleep(50 * time.Millisecond)
	holder.release()
	r := <-ch
	if r.err != nil {
		t.Fatal(r.err)
	}
	heldIsPathInode(t, r.h, path)
	if got := tryFlockFromOutside(t, path); got != "busy" {
		t.Fatalf("another process sees %q while we hold it", got)
	}
	if err := r.h.Release(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(path); err != nil {
		t.Fatalf("lock file gone after our Release: %v", err)
	}
}

// The race the re-check exists for, made deterministic: between our open and
// our flock, another holder unlinked the file and a new one appeared at the
// path (held by another process). We must not keep the lock on the unlinked
// inode.
func TestFlockRecheckUnlinkedInode(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, ".session-files.lock")
	if err := os.WriteFile(path, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	var holder *helper
	calls := 0
	testHookFlocked = func(p string) {
		calls++
		if calls == 1 {
			// We hold the old inode; it goes away and another process
			// creates and locks a new one at the path.
			if err := os.Remove(p); err != nil {
				t.Error(err)
			}
			holder = startHelper(t, "flock-hold", p, "locked")
		}
	}
	t.Cleanup(func() { testHookFlocked = nil })

	_, err := Flock(context.Background(), path, true, Options{Wait: 150 * time.Millisecond})
	if !errors.Is(err, ErrBusy) {
		t.Fatalf("Flock on an unlinked inode: %v; want ErrBusy (new inode is held)", err)
	}
	if calls != 1 {
		t.Fatalf("hook called %d times, want 1", calls)
	}
	holder.release()
	// The holder did not unlink: the file is there and free.
	h, err := Flock(context.Background(), path, true, Options{})
	if err != nil {
		t.Fatal(err)
	}
	heldIsPathInode(t, h, path)
	if err := h.Release(); err != nil {
		t.Fatal(err)
	}

	// Unlinked with nothing new at the path: we re-create it and lock that.
	calls = 0
	testHookFlocked = func(p string) {
		calls++
		if calls == 1 {
			if err := os.Remove(p); err != nil {
				t.Error(err)
			}
		}
	}
	h, err = Flock(context.Background(), path, true, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if calls != 2 {
		t.Fatalf("hook called %d times, want 2 (one retry)", calls)
	}
	heldIsPathInode(t, h, path)
	if err := h.Release(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(path); err != nil {
		t.Fatalf("lock file gone after Release: %v", err)
	}
}

func TestFlockWithoutRecheckSkipsHook(t *testing.T) {
	path := filepath.Join(t.TempDir(), "s.json.lock")
	testHookFlocked = func(string) { t.Error("recheck ran with recheck=false") }
	t.Cleanup(func() { testHookFlocked = nil })
	h, err := Flock(context.Background(), path, false, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if fi, err := os.Stat(path); err != nil || fi.Mode().Perm()&0o600 != 0o600 {
		t.Fatalf("lock file: %v %v", fi, err)
	}
	if err := h.Release(); err != nil {
		t.Fatal(err)
	}
}

func TestFlockMissingDirIsAnError(t *testing.T) {
	path := filepath.Join(t.TempDir(), "nope", "s.json.lock")
	_, err := Flock(context.Background(), path, false, Options{Wait: time.Second})
	if err == nil || errors.Is(err, ErrBusy) {
		t.Fatalf("got %v, want a plain error", err)
	}
}
