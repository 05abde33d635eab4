package heal

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/sessionmedic/sessionmedic/policy"
)

// leaseEngine is an engine over a JSONL file whose last line is torn (its heal is a tail cut)
// and whose app appends without a lock; step, when set, is the engine's step hook.
func leaseEngine(t *testing.T, step func(step, path string)) (*Engine, string, []byte) {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "sessions")
	os.MkdirAll(dir, 0o755)
	cfg := &policy.Config{Version: 1, StateDir: filepath.Join(t.TempDir(), "state"), Rules: []policy.Rule{{
		Name: "j", Format: "jsonl", Paths: []string{dir}, Lock: policy.Lock{Protocol: "none"},
		Strategies: []policy.Strategy{policy.Salvage}, Limits: policy.Limits{MaxLoss: 0.9}, Mode: "heal",
	}}}
	e := New(cfg, Options{QuietCheck: time.Millisecond, Step: step, OpenWriters: func(dev, ino uint64) []int { return nil }})
	p := filepath.Join(dir, "s.jsonl")
	good := []byte(strings.Repeat("{\"n\":1}\n", 1000))
	if err := os.WriteFile(p, append(append([]byte(nil), good...), "{\"n\":"...), 0o644); err != nil {
		t.Fatal(err)
	}
	return e, p, good
}

func inode(t *testing.T, p string) uint64 {
	t.Helper()
	fi, err := os.Stat(p)
	if err != nil {
		t.Fatal(err)
	}
	return fi.Sys().(*syscall.Stat_t).Ino
}

// A torn tail is cut in place under a write lease: the file keeps its inode, and an app that
// opens it to append while the lease is held waits, then appends after the cut — nothing it
// writes is cut off, nothing lands in a replaced inode.
func TestTailCutUnderLeaseKeepsAnAppendMadeDuringIt(t *testing.T) {
	var app *exec.Cmd
	var p string
	e, p, good := leaseEngine(t, func(step, path string) {
		if step != "leased" || path != p {
			return
		}
		// The app opens the file now: its open must wait for the lease, whose break
		// /proc/locks shows.
		app = exec.Command("sh", "-c", `printf '{"n":2}\n' >> "$0"`, path)
		if err := app.Start(); err != nil {
			t.Error(err)
			return
		}
		if !waitLeaseBreaking(inodeOf(path)) {
			t.Error("the app's open did not wait for the lease (no lease breaking in /proc/locks)")
		}
	})
	before := inode(t, p)
	r := e.Heal(context.Background(), Target{Path: p, Rule: &e.Policy.Rules[0]}, false)
	if app == nil {
		t.Fatalf("the heal took no lease: %+v", r)
	}
	if err := app.Wait(); err != nil {
		t.Fatal(err)
	}
	if r.Action != ActionHealed {
		t.Fatalf("not healed: %+v", r)
	}
	want := string(good) + "{\"n\":2}\n"
	if b, _ := os.ReadFile(p); string(b) != want {
		t.Fatalf("after the heal: %d bytes ending %q, want the cut file and the app's append after it", len(b), b[max(0, len(b)-20):])
	}
	if after := inode(t, p); after != before {
		t.Fatalf("the file was replaced (inode %d -> %d), not cut in place", before, after)
	}
}

// Another descriptor open on the file (an app reading it) refuses the lease: the tail cut
// is then made by the usual replace, as before.
func TestTailCutWithTheFileOpenIsAReplace(t *testing.T) {
	e, p, good := leaseEngine(t, nil)
	r0, err := os.Open(p)
	if err != nil {
		t.Fatal(err)
	}
	defer r0.Close()
	before := inode(t, p)
	r := e.Heal(context.Background(), Target{Path: p, Rule: &e.Policy.Rules[0]}, false)
	if r.Action != ActionHealed {
		t.Fatalf("not healed: %+v", r)
	}
	if b, _ := os.ReadFile(p); string(b) != string(good) {
		t.Fatalf("after the heal: %d bytes, want %d", len(b), len(good))
	}
	if after := inode(t, p); after == before {
		t.Fatal("cut in place with another descriptor open: no lease could have been held")
	}
}

func inodeOf(p string) uint64 {
	fi, err := os.Stat(p)
	if err != nil {
		return 0
	}
	return fi.Sys().(*syscall.Stat_t).Ino
}

// waitLeaseBreaking waits (up to 30 s: an event, not a delay) until /proc/locks shows the
// lease on inode ino breaking.
func waitLeaseBreaking(ino uint64) bool {
	suffix := fmt.Sprintf(":%d ", ino)
	for end := time.Now().Add(30 * time.Second); time.Now().Before(end); time.Sleep(time.Millisecond) {
		b, _ := os.ReadFile("/proc/locks")
		for _, l := range strings.Split(string(b), "\n") {
			if strings.Contains(l, "LEASE") && strings.Contains(l, "BREAK") && strings.Contains(l, suffix) {
				return true
			}
		}
	}
	return false
}
