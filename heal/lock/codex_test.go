package lock

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

const codexThread = "01a20539-677f-7710-87e4-54a740761238"

// codexHome makes a Codex home with its thread-writer-locks directory.
func codexHome(t *testing.T) (home, dir string) {
	t.Helper()
	home = t.TempDir()
	dir = filepath.Join(home, "thread-writer-locks")
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	return home, dir
}

// holdOFD flocks path through an open file description of its own (as another process
// would), until the test ends or the returned func is called.
func holdOFD(t *testing.T, path string, how int) func() {
	t.Helper()
	fd, err := unix.Open(path, unix.O_RDWR|unix.O_CREAT|unix.O_CLOEXEC, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	if err := unix.Flock(fd, how|unix.LOCK_NB); err != nil {
		t.Fatal(err)
	}
	var once sync.Once
	release := func() {
		once.Do(func() {
			unix.Flock(fd, unix.LOCK_UN)
			unix.Close(fd)
		})
	}
	t.Cleanup(release)
	return release
}

// tryOFD says whether another open file description could flock path LOCK_EX now.
func tryOFD(t *testing.T, path string) bool {
	t.Helper()
	fd, err := unix.Open(path, unix.O_RDWR|unix.O_CLOEXEC, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Close(fd)
	if err := unix.Flock(fd, unix.LOCK_EX|unix.LOCK_NB); err != nil {
		return false
	}
	unix.Flock(fd, unix.LOCK_UN)
	return true
}

func names(t *testing.T, dir string) []string {
	t.Helper()
	ents, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, e := range ents {
		out = append(out, e.Name())
	}
	return out
}

func TestCodexTakesAndReleasesTheThreadLock(t *testing.T) {
	home, dir := codexHome(t)
	thread := filepath.Join(dir, codexThread+".lock")
	h, err := Codex(context.Background(), home, codexThread, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if tryOFD(t, thread) {
		t.Fatal("the thread lock is free while held")
	}
	if !tryOFD(t, filepath.Join(dir, ".coordination.lock")) {
		t.Fatal("the coordination lock is still held after acquire")
	}
	if err := h.Release(); err != nil {
		t.Fatal(err)
	}
	if err := h.Release(); err != nil {
		t.Fatalf("second Release: %v", err)
	}
	if !tryOFD(t, thread) {
		t.Fatal("the thread lock is still held after Release")
	}
	if got, want := names(t, dir), []string{".coordination.lock", codexThread + ".lock"}; !slices.Equal(got, want) {
		t.Fatalf("lock files %v, want %v (nothing unlinked)", got, want)
	}
	for _, n := range names(t, dir) {
		if fi, _ := os.Stat(filepath.Join(dir, n)); fi.Size() != 0 {
			t.Errorf("%s was written to", n)
		}
	}
}

func TestCodexBusyWhileAWriterOrAForkReaderHoldsIt(t *testing.T) {
	for _, c := range []struct {
		name string
		how  int
	}{{"writer", unix.LOCK_EX}, {"fork reader", unix.LOCK_SH}} {
		t.Run(c.name, func(t *testing.T) {
			home, dir := codexHome(t)
			thread := filepath.Join(dir, codexThread+".lock")
			release := holdOFD(t, thread, c.how)
			wait := 150 * time.Millisecond
			start := time.Now()
			h, err := Codex(context.Background(), home, codexThread, Options{Wait: wait, Poll: 10 * time.Millisecond})
			if !errors.Is(err, ErrBusy) {
				t.Fatalf("Codex while held: %v, %v; want ErrBusy", h, err)
			}
			if el := time.Since(start); el < wait {
				t.Fatalf("busy after %s, before the %s wait", el, wait)
			}
			if !tryOFD(t, filepath.Join(dir, ".coordination.lock")) {
				t.Fatal("the coordination lock was left held")
			}
			release()
			h, err = Codex(context.Background(), home, codexThread, Options{})
			if err != nil {
				t.Fatalf("after the holder let go: %v", err)
			}
			h.Release()
			if _, err := os.Stat(thread); err != nil {
				t.Fatalf("lock file unlinked: %v", err)
			}
		})
	}
}

func TestCodexWaitsForTheCoordinationLock(t *testing.T) {
	home, dir := codexHome(t)
	release := holdOFD(t, filepath.Join(dir, ".coordination.lock"), unix.LOCK_EX)
	_, err := Codex(context.Background(), home, codexThread, Options{Wait: 50 * time.Millisecond, Poll: 10 * time.Millisecond})
	if !errors.Is(err, ErrBusy) {
		t.Fatalf("coordination lock held: %v, want ErrBusy", err)
	}
	if _, err := os.Stat(filepath.Join(dir, codexThread+".lock")); !errors.Is(err, os.ErrNotExist) {
		t.Fatal("the thread lock file was opened without the coordination lock")
	}
	go func() {
		time.Sleep(60 * time.Millisecond)
		release()
	}()
	h, err := Codex(context.Background(), home, codexThread, Options{Wait: 2 * time.Second, Poll: 10 * time.Millisecond})
	if err != nil {
		t.Fatalf("after the coordination lock was let go: %v", err)
	}
	h.Release()
}

func TestCodexHonoursTheContext(t *testing.T) {
	home, dir := codexHome(t)
	holdOFD(t, filepath.Join(dir, codexThread+".lock"), unix.LOCK_EX)
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	_, err := Codex(ctx, home, codexThread, Options{Wait: 10 * time.Second})
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("got %v, want the context's error", err)
	}
}

func TestCodexReleaseTakesTheCoordinationLock(t *testing.T) {
	home, dir := codexHome(t)
	thread := filepath.Join(dir, codexThread+".lock")
	h, err := Codex(context.Background(), home, codexThread, Options{Poll: 5 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	release := holdOFD(t, filepath.Join(dir, ".coordination.lock"), unix.LOCK_EX)
	done := make(chan error)
	go func() { done <- h.Release() }()
	select {
	case err := <-done:
		t.Fatalf("Release returned (%v) while the coordination lock was held", err)
	case <-time.After(50 * time.Millisecond):
	}
	if tryOFD(t, thread) {
		t.Fatal("the thread lock was let go before the coordination lock was had")
	}
	release()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if !tryOFD(t, thread) {
		t.Fatal("the thread lock is still held after Release")
	}
}

func TestCodexRefusesABadThreadIDAndSymlinks(t *testing.T) {
	home, dir := codexHome(t)
	if _, err := Codex(context.Background(), home, "../x", Options{}); err == nil || errors.Is(err, ErrBusy) {
		t.Fatalf("bad id: %v", err)
	}
	target := filepath.Join(t.TempDir(), "elsewhere")
	os.Symlink(target, filepath.Join(dir, codexThread+".lock"))
	if _, err := Codex(context.Background(), home, codexThread, Options{}); err == nil || errors.Is(err, ErrBusy) {
		t.Fatalf("symlinked lock file: %v", err)
	}
	if _, err := os.Lstat(target); !errors.Is(err, os.ErrNotExist) {
		t.Fatal("a file was created through the symlink")
	}
	if !tryOFD(t, filepath.Join(dir, ".coordination.lock")) {
		t.Fatal("the coordination lock was left held")
	}
}
