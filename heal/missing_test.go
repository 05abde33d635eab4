package heal

import (
	"bytes"
	"os"
	"path/filepath"
	"runtime"
	"testing"
)

// A missing file is restored from a backup larger than a file held whole without holding it:
// the backup judged from its file and copied from it, byte for byte, and what the restore
// allocates is a small part of the backup's size (held, it was read whole and parsed).
func TestMissingFileRestoredFromABigBackupIsNotHeld(t *testing.T) {
	const oc = "state/agents/main/sessions/"
	root := filepath.Join(t.TempDir(), "05")
	copyTree(t, filepath.Join(samples, "openclaw/05-missing-newest-bak-corrupt"), root)
	bak := filepath.Join(root, oc, "sessions.json.bak.1795247923574")
	doc := read(t, bak)
	big := append(bytes.Repeat([]byte("\n"), 3*bigFile), doc...) // valid: whitespace before the value
	os.Chmod(bak, 0o644)
	if err := os.WriteFile(bak, big, 0o644); err != nil {
		t.Fatal(err)
	}
	e := testEngine(t, "openclaw", root)
	steps := 0
	e.onStep = func(step, _ string) {
		if step == "missing-from-files" {
			steps++
		}
	}
	targets, errs := e.Targets(nil, nil)
	if len(errs) > 0 {
		t.Fatal(errs)
	}
	var tg *Target
	for i := range targets {
		if targets[i].Missing {
			tg = &targets[i]
		}
	}
	if tg == nil {
		t.Fatal("the missing sessions.json is no target")
	}
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	r := e.Heal(t.Context(), *tg, false)
	runtime.ReadMemStats(&after)
	if r.Action != ActionHealed || r.Strategy != "backup" || steps != 1 {
		t.Fatalf("%+v (planned from the files %d times)", r, steps)
	}
	if got := read(t, tg.Path); !bytes.Equal(got, big) {
		t.Fatalf("restored %d bytes, not the backup's %d", len(got), len(big))
	}
	alloc := after.TotalAlloc - before.TotalAlloc
	t.Logf("allocated %d bytes", alloc)
	if alloc > uint64(len(big))/3 {
		t.Errorf("the restore allocated %d bytes for a %d-byte backup", alloc, len(big))
	}
}
