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
)

// leaseEngine is an engine that plans every file streaming (its tail cuts are made in place
// under a lease), over a JSONL file whose last line is torn, whose app appends without a lock;
// step, when set, is the engine's step hook.
func leaseEngine(t *testing.T, step func(step, path string)) (*Engine, Target, []byte) {
	t.Helper()
	e, root := bigEngineWith(t, 1, Options{QuietCheck: time.Millisecond, Step: step, OpenWriters: func(dev, ino uint64) []int { return nil }})
	good := []byte(strings.Repeat("{\"n\":1}\n", 1000))
	tg := bigTarget(t, e, root, string(good)+"{\"n\":")
	return e, tg, good
}

func inodeOf(p string) uint64 {
	fi, err := os.Stat(p)
	if err != nil {
		return 0
	}
	return fi.Sys().(*syscall.Stat_t).Ino
}

// A torn tail is cut in place under a write lease: the file keeps its inode, the quarantine
// holds the bytes cut, and an app that opens the file to append while the lease is held
// waits, then appends after the cut — nothing it writes is cut off, nothing lands in a
// replaced inode.
func TestTailCutUnderLeaseKeepsAnAppendMadeDuringIt(t *testing.T) {
	var app *exec.Cmd
	var p string
	e, tg, good := leaseEngine(t, func(step, path string) {
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
	p = tg.Path
	before := inodeOf(p)
	r := e.Heal(context.Background(), tg, false)
	if app == nil {
		t.Fatalf("the heal took no lease: %+v", r)
	}
	if err := app.Wait(); err != nil {
		t.Fatal(err)
	}
	if r.Action != ActionHealed || r.QuarantinedBytes != int64(len(`{"n":`)) {
		t.Fatalf("not healed, or not only the tail quarantined: %+v", r)
	}
	want := string(good) + "{\"n\":2}\n"
	if b, _ := os.ReadFile(p); string(b) != want {
		t.Fatalf("after the heal: %d bytes ending %q, want the cut file and the app's append after it", len(b), b[max(0, len(b)-20):])
	}
	if after := inodeOf(p); after != before {
		t.Fatalf("the file was replaced (inode %d -> %d), not cut in place", before, after)
	}
}

// Another descriptor open on the file (an app reading it) refuses the lease: the tail cut is
// then made by the usual replace, and its quarantine entry still holds the tail alone (the
// new file holds the rest).
func TestTailCutWithTheFileOpenIsAReplace(t *testing.T) {
	e, tg, good := leaseEngine(t, nil)
	r0, err := os.Open(tg.Path)
	if err != nil {
		t.Fatal(err)
	}
	defer r0.Close()
	before := inodeOf(tg.Path)
	r := e.Heal(context.Background(), tg, false)
	if r.Action != ActionHealed {
		t.Fatalf("not healed: %+v", r)
	}
	if b, _ := os.ReadFile(tg.Path); string(b) != string(good) {
		t.Fatalf("after the heal: %d bytes, want %d", len(b), len(good))
	}
	if inodeOf(tg.Path) == before {
		t.Fatal("cut in place with another descriptor open: no lease could have been held")
	}
	all, _ := e.Quarantine.List()
	if len(all) != 1 {
		t.Fatalf("%d entries", len(all))
	}
	if q, err := original(t, all[0]); err != nil || string(q) != string(good)+"{\"n\":" {
		t.Fatalf("the entry and the file do not make the original: %v", err)
	}
}

// A file with another name (a file elsewhere linked in) is never cut in place: the cut
// would show through the other name. It is replaced, and the other name keeps its bytes.
func TestTailCutOfAHardLinkedFileIsAReplace(t *testing.T) {
	e, tg, good := leaseEngine(t, nil)
	other := filepath.Join(t.TempDir(), "elsewhere.jsonl")
	if err := os.Link(tg.Path, other); err != nil {
		t.Skip("no hard links here:", err)
	}
	orig, _ := os.ReadFile(other)
	r := e.Heal(context.Background(), Target{Path: tg.Path, Rule: tg.Rule}, false)
	if r.Action != ActionHealed {
		t.Fatalf("not healed: %+v", r)
	}
	if b, _ := os.ReadFile(tg.Path); string(b) != string(good) {
		t.Fatalf("after the heal: %d bytes, want %d", len(b), len(good))
	}
	if b, _ := os.ReadFile(other); string(b) != string(orig) {
		t.Fatal("the file's other name was cut")
	}
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

// A FIFO swapped in for the file right before the cut's open never hangs the heal: the
// opens do not wait for a peer, the identity check refuses what they find, and the heal
// reports the file busy, leaving the FIFO as it is.
func TestTailCutOpensNeverWaitOnAFIFO(t *testing.T) {
	var p string
	swapped := false
	e, tg, _ := leaseEngine(t, nil)
	p = tg.Path
	e.fs.Faults = func(op, path string) error {
		if op == "truncate" && path == p && !swapped {
			swapped = true
			os.Rename(p, p+".aside")
			if err := syscall.Mkfifo(p, 0o600); err != nil {
				t.Error(err)
			}
		}
		return nil
	}
	done := make(chan Report, 1)
	go func() { done <- e.Heal(context.Background(), tg, false) }()
	select {
	case r := <-done:
		if !swapped || r.Verdict != Busy || r.Action == ActionHealed {
			t.Fatalf("swapped %v: %+v", swapped, r)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("the heal hangs on a FIFO swapped in before its open")
	}
	if fi, err := os.Lstat(p); err != nil || fi.Mode()&os.ModeNamedPipe == 0 {
		t.Fatalf("the FIFO was replaced: %v %v", fi, err)
	}
}
