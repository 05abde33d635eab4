package lock

import (
	"context"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// treeOf is every name below dir with its bytes and mtime: what a probe must leave as it is.
func treeOf(t *testing.T, dir string) map[string]string {
	t.Helper()
	out := map[string]string{}
	filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			t.Fatal(err)
		}
		fi, _ := os.Lstat(p)
		b, _ := os.ReadFile(p)
		out[p] = fi.Mode().String() + " " + fi.ModTime().String() + " " + string(b)
		return nil
	})
	return out
}

func sameTree(t *testing.T, what string, before, after map[string]string) {
	t.Helper()
	for p, s := range after {
		if b, ok := before[p]; !ok {
			t.Errorf("%s: the probe created %s", what, p)
		} else if b != s {
			t.Errorf("%s: the probe changed %s", what, p)
		}
	}
	for p := range before {
		if _, ok := after[p]; !ok {
			t.Errorf("%s: the probe removed %s", what, p)
		}
	}
}

// Options.Probe takes the decision each protocol's acquisition would take, and writes
// nothing: a missing lock file is free and not created, a stale token is free and not broken,
// a held flock or a live token is busy, naming it.
func TestProbeJudgesWithoutWriting(t *testing.T) {
	ctx := context.Background()
	probe := Options{Probe: true}
	check := func(what, root string, wantBusy bool, run func() (Held, error)) {
		t.Helper()
		before := treeOf(t, root)
		h, err := run()
		switch {
		case wantBusy && !errors.Is(err, ErrBusy):
			t.Errorf("%s: %v, want busy", what, err)
		case wantBusy:
			var be *BusyError
			if !errors.As(err, &be) || be.Path == "" {
				t.Errorf("%s: %v names no lock", what, err)
			}
		case err != nil:
			t.Errorf("%s: %v, want free", what, err)
		default:
			if err := h.Release(); err != nil {
				t.Errorf("%s: release: %v", what, err)
			}
		}
		sameTree(t, what, before, treeOf(t, root))
	}

	dir := t.TempDir()
	fl := filepath.Join(dir, "s.jsonl.lock")
	check("flock, no lock file", dir, false, func() (Held, error) { return Flock(ctx, fl, false, probe) })
	release := holdFlock(t, fl)
	check("flock held", dir, true, func() (Held, error) { return Flock(ctx, fl, true, probe) })
	release()
	check("flock let go", dir, false, func() (Held, error) { return Flock(ctx, fl, false, probe) })

	lf := filepath.Join(dir, "custom.lock")
	check("lockfile, none", dir, false, func() (Held, error) { return LockFile(ctx, lf, Options{Probe: true, Stale: time.Minute}) })
	writeFile(t, lf, "12345\n")
	check("lockfile, fresh", dir, true, func() (Held, error) { return LockFile(ctx, lf, Options{Probe: true, Stale: time.Minute}) })
	old := time.Now().Add(-time.Hour)
	os.Chtimes(lf, old, old)
	check("lockfile, stale: free, not broken", dir, false, func() (Held, error) { return LockFile(ctx, lf, Options{Probe: true, Stale: time.Minute}) })

	oc := ocDir(t)
	store := filepath.Join(oc, "sessions.json.lock")
	check("openclaw, none", oc, false, func() (Held, error) { return OpenClaw(ctx, store, false, probe) })
	pid, st := liveChild(t)
	writeFile(t, store, ocBody(pid, time.Now(), st))
	check("openclaw, live", oc, true, func() (Held, error) { return OpenClaw(ctx, store, false, probe) })
	writeFile(t, store, ocBody(pid, time.Now(), st+12345))
	check("openclaw, stale (recycled pid): free, not broken", oc, false, func() (Held, error) { return OpenClaw(ctx, store, false, probe) })

	home, locks := codexHome(t)
	check("codex, no lock files", home, false, func() (Held, error) { return Codex(ctx, home, codexThread, probe) })
	release = holdOFD(t, filepath.Join(locks, codexThread+".lock"), unix.LOCK_SH)
	check("codex, a fork reader", home, true, func() (Held, error) { return Codex(ctx, home, codexThread, probe) })
	release()

	sess, opLock := copilotTree(t, true)
	state := filepath.Dir(sess)
	check("copilot, no operation lock file", state, false, func() (Held, error) { return Copilot(ctx, sess, copilotID, probe) })
	release = holdFlock(t, opLock)
	check("copilot, an operation", state, true, func() (Held, error) { return Copilot(ctx, sess, copilotID, probe) })
	release()

	f := newOVFixture(t)
	check("openviking, no token", f.ws, false, func() (Held, error) { return OpenViking(ctx, f.sid, f.viking, probe) })
	writeFile(t, filepath.Join(f.sid, OVPathLockName), liveToken('T'))
	check("openviking, a live token", f.ws, true, func() (Held, error) { return OpenViking(ctx, f.sid, f.viking, probe) })
}

// A flock whose directory does not exist cannot be taken (its file cannot be created): the
// probe fails as the acquisition does, and says it is not busy.
func TestProbeOfAFlockWithoutItsDirectoryFails(t *testing.T) {
	p := filepath.Join(t.TempDir(), "gone", "s.lock")
	_, err := Flock(context.Background(), p, false, Options{})
	_, perr := Flock(context.Background(), p, false, Options{Probe: true})
	if err == nil || perr == nil || errors.Is(perr, ErrBusy) {
		t.Fatalf("acquisition: %v; probe: %v; want both to fail, not busy", err, perr)
	}
}
