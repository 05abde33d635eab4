package watcher

import (
	"errors"
	"path/filepath"
	"testing"
	"testing/synctest"
	"time"
)

// TestWatchBudget: past MaxWatches directories, a directory is left unwatched and said once
// (a *BudgetError), its root is rescanned, Unwatched counts it, and it stays unwatched and
// unsaid at the retries while the budget stays used up.
func TestWatchBudget(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		root := t.TempDir()
		for _, d := range []string{"a", "b", "c"} {
			writeFile(t, filepath.Join(root, d, "s.json"), "{}")
		}
		h := start(t, Options{Roots: []string{root}, Source: newFakeSource(), RetryWatches: 30 * time.Second,
			Settle: fixed(time.Second, 0), MaxWatches: 2})
		defer h.stop()
		synctest.Wait()
		if n, u := h.w.Dirs(), h.w.Unwatched(); n != 2 || u != 2 {
			t.Fatalf("Dirs() = %d, Unwatched() = %d; want 2 watched (the root and one), 2 left", n, u)
		}
		errs := h.gotErrors()
		var be *BudgetError
		if len(errs) != 2 || !errors.As(errs[0], &be) || be.Budget != 2 {
			t.Fatalf("errors %v; want one budget error per unwatched directory", errs)
		}
		if len(h.gotRescans()) == 0 {
			t.Fatal("no rescan of the root whose directories went unwatched")
		}
		time.Sleep(30 * time.Second) // a retry, the budget still used up
		synctest.Wait()
		if n, u, e := h.w.Dirs(), h.w.Unwatched(), len(h.gotErrors()); n != 2 || u != 2 || e != 2 {
			t.Fatalf("after a retry: Dirs() %d, Unwatched() %d, %d errors; want 2, 2, 2 (said once)", n, u, e)
		}
	})
}
