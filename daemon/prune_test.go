package daemon

import (
	"os"
	"path/filepath"
	"testing"
	"time"
)

// TestDaemonEnforcesRetention: the daemon prunes the state dir itself. A sparse session
// (4 MiB that occupy a few KiB) damaged by a NUL run is healed, and its quarantine copy,
// which occupies its whole size on disk, is pruned down to quarantine.max_bytes — counted
// in the blocks it occupies — with a state.pruned line and the metrics.
func TestDaemonEnforcesRetention(t *testing.T) {
	dir := t.TempDir()
	sessions := filepath.Join(dir, "sessions")
	os.Mkdir(sessions, 0o755)
	state := filepath.Join(dir, "state")
	yaml := "version: 1\nstate_dir: " + state + "\nquarantine: {max_bytes: 1MiB}\nrules:\n" +
		"  - {name: j, format: jsonl, paths: [" + sessions + "], settle: 50ms, max_wait: 1s}\n"
	logs := startYAML(t, yaml, Options{PruneEvery: 20 * time.Millisecond})
	f := filepath.Join(sessions, "s.jsonl")
	fh, _ := os.Create(f)
	fh.WriteString("{\"a\":1}\n")
	fh.Truncate(4 << 20) // a NUL run, sparse
	fh.Close()
	waitFor(t, "the heal", func() bool { return len(logs.events("file.healed")) == 1 })
	waitFor(t, "state.pruned", func() bool { return len(logs.events("state.pruned")) >= 1 })
	ev := logs.events("state.pruned")[0]
	if ev["quarantine_entries"] != float64(1) || ev["freed_bytes"].(float64) < 4<<20 {
		t.Errorf("state.pruned: %v; want the 4 MiB entry, counted whole", ev)
	}
	days, _ := os.ReadDir(filepath.Join(state, "quarantine"))
	for _, d := range days {
		if ents, _ := os.ReadDir(filepath.Join(state, "quarantine", d.Name())); len(ents) > 0 {
			t.Errorf("quarantine entries left over max_bytes: %v", ents)
		}
	}
	if b, _ := os.ReadFile(f); string(b) != "{\"a\":1}\n" {
		t.Errorf("healed file: %q", b)
	}
}
