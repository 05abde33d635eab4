package watcher

import (
	"errors"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"testing/synctest"
	"time"
)

func TestWatchLimitMessage(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		root := t.TempDir()
		sub := filepath.Join(root, "sessions")
		writeFile(t, filepath.Join(sub, "a.json"), "{}")
		src := newFakeSource()
		src.addErr[sub] = syscall.ENOSPC
		h := start(t, Options{Roots: []string{root}, Source: src})
		defer h.stop()
		synctest.Wait()

		errs := h.gotErrors()
		if len(errs) != 1 {
			t.Fatalf("errors %v, want one", errs)
		}
		want := "inotify watch limit reached adding " + sub +
			": raise fs.inotify.max_user_watches (sysctl -w fs.inotify.max_user_watches=524288)"
		if errs[0].Error() != want {
			t.Errorf("error\n got %q\nwant %q", errs[0], want)
		}
		if !errors.Is(errs[0], syscall.ENOSPC) {
			t.Error("the error does not unwrap to ENOSPC")
		}
		if got := h.gotRescans(); !slices.Equal(got, []string{root}) {
			t.Errorf("rescans %q, want the root", got)
		}
		if n := h.w.Dirs(); n != 1 {
			t.Errorf("Dirs() = %d, want 1", n)
		}
	})
}

func TestInstanceLimitMessage(t *testing.T) {
	err := explainInit(syscall.EMFILE)
	if !errors.Is(err, syscall.EMFILE) {
		t.Error("the error does not unwrap to EMFILE")
	}
	if want := "raise fs.inotify.max_user_instances"; !strings.Contains(err.Error(), want) {
		t.Errorf("%q does not say %q", err, want)
	}
}

// refusing starts a watcher over root whose source refuses to watch dir (the watch limit)
// until the returned function lifts the refusal; retries every 30 s, settle 1 s.
func refusing(t *testing.T, root, dir string) (*harness, func()) {
	t.Helper()
	src := newFakeSource()
	src.mu.Lock()
	src.addErr[dir] = syscall.ENOSPC
	src.mu.Unlock()
	h := start(t, Options{Roots: []string{root}, Source: src, RetryWatches: 30 * time.Second, Settle: fixed(time.Second, 0)})
	return h, func() {
		src.mu.Lock()
		delete(src.addErr, dir)
		src.mu.Unlock()
	}
}

// A watch refused for the watch limit is tried again: once the operator raises the limit,
// the directory is watched without a restart, and what is in it is reported as changed.
func TestFailedWatchIsRetried(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		root := t.TempDir()
		sub := filepath.Join(root, "sessions")
		deeper := filepath.Join(sub, "deeper")
		writeFile(t, filepath.Join(sub, "a.json"), "{}")
		writeFile(t, filepath.Join(deeper, "b.json"), "{}")
		h, lift := refusing(t, root, sub)
		defer h.stop()
		synctest.Wait()
		if n := h.w.Dirs(); n != 1 {
			t.Fatalf("Dirs() = %d, want 1 (the root; sessions/ was refused)", n)
		}

		// Still at the limit at the first retry: reported again, nothing else.
		time.Sleep(30 * time.Second)
		synctest.Wait()
		if n, errs := h.w.Dirs(), h.gotErrors(); n != 1 || len(errs) != 2 {
			t.Fatalf("after a failed retry: Dirs() = %d, errors %v", n, errs)
		}

		// The limit is raised: the next retry watches the tree and reports its files.
		lift()
		time.Sleep(30 * time.Second)
		synctest.Wait()
		if n := h.w.Dirs(); n != 3 {
			t.Fatalf("Dirs() = %d after the limit was raised, want 3", n)
		}
		time.Sleep(2 * time.Second)
		synctest.Wait()
		want := []string{filepath.Join(sub, "a.json"), filepath.Join(deeper, "b.json")}
		got := h.paths()
		slices.Sort(got)
		if !slices.Equal(got, want) {
			t.Fatalf("events %q, want %q", got, want)
		}
	})
}

// A root whose own watch was refused is tried again too.
func TestFailedRootWatchIsRetried(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		root := t.TempDir()
		writeFile(t, filepath.Join(root, "a.json"), "{}")
		h, lift := refusing(t, root, root)
		defer h.stop()
		synctest.Wait()
		if n := h.w.Dirs(); n != 0 {
			t.Fatalf("Dirs() = %d, want 0", n)
		}
		lift()
		time.Sleep(31 * time.Second)
		synctest.Wait()
		if n := h.w.Dirs(); n != 1 {
			t.Fatalf("Dirs() = %d after the retry, want 1", n)
		}
		if got := h.paths(); !slices.Equal(got, []string{filepath.Join(root, "a.json")}) {
			t.Fatalf("events %q", got)
		}
	})
}

// TestUnreadableDirIsAnErrorNotALoss: a directory that cannot be read is reported as a watch
// error naming it and the permission error, without asking for a rescan (nothing was lost).
func TestUnreadableDirIsAnErrorNotALoss(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		root := t.TempDir()
		sub := filepath.Join(root, "private")
		writeFile(t, filepath.Join(sub, "a.json"), "{}")
		src := newFakeSource()
		src.addErr[sub] = syscall.EACCES
		h := start(t, Options{Roots: []string{root}, Source: src})
		defer h.stop()
		synctest.Wait()

		errs := h.gotErrors()
		if len(errs) != 1 || errs[0].Error() != "watch "+sub+": permission denied" {
			t.Fatalf("errors %v, want the directory's permission error", errs)
		}
		if got := h.gotRescans(); len(got) != 0 {
			t.Errorf("rescans %q, want none", got)
		}
	})
}
