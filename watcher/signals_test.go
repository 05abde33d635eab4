package watcher

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/fsnotify/fsnotify"
)

func TestOverflowRescansEveryRoot(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		base := t.TempDir()
		roots := []string{filepath.Join(base, "one"), filepath.Join(base, "two"), filepath.Join(base, "missing")}
		for _, r := range roots[:2] {
			writeFile(t, filepath.Join(r, "x.json"), "{}")
		}
		h, src := fakeRun(t, Options{Roots: roots})
		defer h.stop()

		src.errors <- fsnotify.ErrEventOverflow
		synctest.Wait()
		if got := h.gotRescans(); !slices.Equal(got, roots) {
			t.Fatalf("rescans %q, want %q", got, roots)
		}
		if errs := h.gotErrors(); len(errs) != 0 {
			t.Fatalf("an overflow is not an error to log: %v", errs)
		}
	})
}

func TestSourceErrorIsReportedAndRescans(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		root := t.TempDir()
		h, src := fakeRun(t, Options{Roots: []string{root}})
		defer h.stop()

		boom := errors.New("read inotify: boom")
		src.errors <- boom
		synctest.Wait()
		if errs := h.gotErrors(); len(errs) != 1 || !errors.Is(errs[0], boom) {
			t.Fatalf("errors %v, want %v", errs, boom)
		}
		if got := h.gotRescans(); !slices.Equal(got, []string{root}) {
			t.Fatalf("rescans %q", got)
		}
	})
}

// Errors nobody reads are bounded: duplicates are dropped, and past the bound new ones too.
func TestErrorsAreBounded(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		root := t.TempDir()
		src := newFakeSource()
		w, err := New(Options{Roots: []string{root}, Source: src})
		if err != nil {
			t.Fatal(err)
		}
		done := make(chan error)
		ctx, cancel := context.WithCancel(context.Background())
		go func() { done <- w.Run(ctx) }()
		<-w.Ready()

		for range 5 {
			src.errors <- errors.New("same")
		}
		for i := range 2 * maxErrors {
			src.errors <- fmt.Errorf("error %d", i)
		}
		synctest.Wait()
		var got []string
	drain:
		for {
			synctest.Wait()
			select {
			case err := <-w.Errors():
				got = append(got, err.Error())
			default:
				break drain
			}
		}
		if len(got) != maxErrors-1 {
			t.Errorf("%d errors waited, want %d", len(got), maxErrors-1)
		}
		if n := countOf(got, "watcher: same"); n != 1 {
			t.Errorf("duplicate kept %d times", n)
		}
		src.errors <- errors.New("later")
		synctest.Wait()
		if err := <-w.Errors(); !strings.Contains(err.Error(), "errors dropped") {
			t.Errorf("first error after the drops: %q", err)
		}
		cancel()
		if err := <-done; err != nil {
			t.Fatal(err)
		}
	})
}

func TestNewRejectsRelativeRoots(t *testing.T) {
	if _, err := New(Options{Roots: []string{"sessions"}}); err == nil {
		t.Fatal("a relative root was accepted")
	}
}

func TestRunTwice(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h, _ := fakeRun(t, Options{Roots: []string{t.TempDir()}})
		defer h.stop()
		if err := h.w.Run(t.Context()); err == nil {
			t.Fatal("a second Run was accepted")
		}
		time.Sleep(time.Second)
	})
}

func countOf(list []string, s string) int {
	n := 0
	for _, x := range list {
		if x == s {
			n++
		}
	}
	return n
}
