package watcher

import (
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"
)

// TestMain fails the run if any goroutine of this package or of fsnotify outlives the tests.
func TestMain(m *testing.M) {
	code := m.Run()
	if code == 0 {
		if leaked := ours(5 * time.Second); leaked != "" {
			fmt.Fprintf(os.Stderr, "goroutines left running:\n%s\n", leaked)
			code = 1
		}
	}
	os.Exit(code)
}

// ours waits up to d for every goroutine running watcher or fsnotify code to end, and returns
// the stacks of those that did not.
func ours(d time.Duration) string {
	deadline := time.Now().Add(d)
	for {
		buf := make([]byte, 1<<20)
		buf = buf[:runtime.Stack(buf, true)]
		var left []string
		for g := range strings.SplitSeq(string(buf), "\n\n") {
			if strings.Contains(g, "watcher.(*") || strings.Contains(g, "github.com/fsnotify/fsnotify.") {
				left = append(left, g)
			}
		}
		if len(left) == 0 || time.Now().After(deadline) {
			return strings.Join(left, "\n\n")
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func TestRunLeavesNoGoroutines(t *testing.T) {
	before := runtime.NumGoroutine()
	root := t.TempDir()
	mkdirAll(t, filepath.Join(root, "a"))
	h := realRun(t, Options{Roots: []string{root, filepath.Join(root, "missing", "later")}})
	f := filepath.Join(root, "a", "s.json")
	writeFile(t, f, "{}")
	h.waitPaths(f)
	// Leave work in flight: a path pending and an event nobody will read in time.
	writeFile(t, filepath.Join(root, "a", "pending.json"), "{}")
	h.stop()

	if leaked := ours(5 * time.Second); leaked != "" {
		t.Fatalf("goroutines left running:\n%s", leaked)
	}
	eventually(t, "the goroutine count to come back", func() bool { return runtime.NumGoroutine() <= before })
}
