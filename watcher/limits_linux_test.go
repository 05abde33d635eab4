package watcher

import (
	"errors"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"testing/synctest"
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
