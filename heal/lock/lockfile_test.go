package lock

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"
)

func TestLockFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "custom.lock")
	h, err := LockFile(context.Background(), path, Options{Stale: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	if got, want := readFile(t, path), strconv.Itoa(os.Getpid())+"\n"; got != want {
		t.Fatalf("body %q, want %q", got, want)
	}
	if _, err := LockFile(context.Background(), path, Options{Stale: time.Minute}); !errors.Is(err, ErrBusy) {
		t.Fatalf("second acquire: %v, want ErrBusy", err)
	}
	if err := h.Release(); err != nil {
		t.Fatal(err)
	}
	if exists(path) {
		t.Fatal("lock file left after Release")
	}
	if err := h.Release(); err != nil {
		t.Fatalf("second Release: %v", err)
	}
}

func TestLockFileStale(t *testing.T) {
	path := filepath.Join(t.TempDir(), "custom.lock")
	writeFile(t, path, "12345\n")
	old := time.Now().Add(-time.Hour)
	if err := os.Chtimes(path, old, old); err != nil {
		t.Fatal(err)
	}
	// Stale 0: never stale.
	if _, err := LockFile(context.Background(), path, Options{}); !errors.Is(err, ErrBusy) {
		t.Fatalf("Stale 0: %v, want ErrBusy", err)
	}
	// Younger than Stale: busy.
	if _, err := LockFile(context.Background(), path, Options{Stale: 2 * time.Hour}); !errors.Is(err, ErrBusy) {
		t.Fatalf("young: %v, want ErrBusy", err)
	}
	h, err := LockFile(context.Background(), path, Options{Stale: time.Minute})
	if err != nil {
		t.Fatalf("stale: %v, want broken", err)
	}
	if readFile(t, path) == "12345\n" {
		t.Fatal("stale lock not replaced")
	}
	if err := h.Release(); err != nil {
		t.Fatal(err)
	}
}

func TestLockFileReleaseLeavesForeign(t *testing.T) {
	path := filepath.Join(t.TempDir(), "custom.lock")
	h, err := LockFile(context.Background(), path, Options{})
	if err != nil {
		t.Fatal(err)
	}
	// Someone broke ours and created their own.
	os.Remove(path)
	writeFile(t, path, "999999\n")
	if err := h.Release(); !errors.Is(err, ErrLost) {
		t.Fatalf("Release: %v, want ErrLost", err)
	}
	if !exists(path) {
		t.Fatal("foreign lock removed")
	}
}

// Cancelling the context ends polling promptly for every protocol.
func TestContextCancelStopsPolling(t *testing.T) {
	dir := t.TempDir()
	flockPath := filepath.Join(dir, "f.lock")
	startHelper(t, "flock-hold", flockPath, "locked")

	f := newOVFixture(t)
	writeFile(t, filepath.Join(f.sid, ".path.ovlock"), liveToken('T'))

	ocPath := filepath.Join(dir, "sessions.json.lock")
	pid, st := liveChild(t)
	writeFile(t, ocPath, ocBody(pid, time.Now(), st))

	lfPath := filepath.Join(dir, "custom.lock")
	writeFile(t, lfPath, "1\n")

	long := Options{Wait: time.Minute}
	for name, fn := range map[string]func(context.Context) (Held, error){
		"flock":      func(ctx context.Context) (Held, error) { return Flock(ctx, flockPath, true, long) },
		"openviking": func(ctx context.Context) (Held, error) { return OpenViking(ctx, f.sid, "", long) },
		"openclaw":   func(ctx context.Context) (Held, error) { return OpenClaw(ctx, ocPath, false, long) },
		"lockfile":   func(ctx context.Context) (Held, error) { return LockFile(ctx, lfPath, long) },
	} {
		t.Run(name, func(t *testing.T) {
			ctx, cancel := context.WithCancel(context.Background())
			done := make(chan error, 1)
			go func() {
				_, err := fn(ctx)
				done <- err
			}()
			time.Sleep(30 * time.Millisecond)
			cancel()
			select {
			case err := <-done:
				if !errors.Is(err, context.Canceled) {
					t.Fatalf("got %v, want context.Canceled", err)
				}
			case <-time.After(10 * time.Second):
				t.Fatal("polling did not stop after cancel")
			}
			// An already cancelled context does not even try.
			if _, err := fn(ctx); !errors.Is(err, context.Canceled) {
				t.Fatalf("cancelled ctx: %v", err)
			}
		})
	}
}
