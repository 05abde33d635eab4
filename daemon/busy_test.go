package daemon

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/fsnotify/fsnotify"
	"github.com/sessionmedic/sessionmedic/policy"
)

// heldFlockPolicy is a policy whose rule j takes a flock on "{file}.lock" (waiting 10ms),
// with max_wait; and that lock file of p, flocked by the test until it calls release.
func heldFlockPolicy(t *testing.T, root, p, maxWait string) (cfg *policy.Config, release func()) {
	t.Helper()
	yaml := "version: 1\nstate_dir: " + filepath.Join(t.TempDir(), "state") + "\nrules:\n  - name: j\n    format: jsonl\n    paths: [" + root +
		"]\n    settle: 50ms\n    max_wait: " + maxWait + "\n    lock: {flock: \"{file}.lock\", wait: 10ms}\n"
	cfg, err := policy.Parse("test.yaml", []byte(yaml))
	if err != nil {
		t.Fatal(err)
	}
	lf, err := os.OpenFile(p+".lock", os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { lf.Close() })
	if err := syscall.Flock(int(lf.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		t.Fatal(err)
	}
	return cfg, func() { syscall.Flock(int(lf.Fd()), syscall.LOCK_UN) }
}

// A damaged file its app's lock keeps from its heal is a damaged file: it counts in
// files_damaged (and files_damaged_busy, and damage_oldest_timestamp_seconds) from its first
// busy verdict, and its file.busy lines say the damage and the holder; the heal, once the
// lock is let go, takes them back.
func TestBusyDamagedFileCountsAsDamaged(t *testing.T) {
	root := t.TempDir()
	p := filepath.Join(root, "s.jsonl")
	os.WriteFile(p, []byte("{\"a\":1}\n{\"a\""), 0o644)
	cfg, release := heldFlockPolicy(t, root, p, "1m")
	_, logs := metricsDaemon(t, cfg, Options{})
	waitFor(t, "file.busy", func() bool { return len(logs.events("file.busy")) > 0 })
	text := scrape(t, logs)
	for _, s := range [][]string{
		{"sessionmedic_files_damaged", `rule="j"`, `kind="truncated"`},
		{"sessionmedic_files_damaged_busy", `rule="j"`},
	} {
		if v, _ := series(text, s[0], s[1:]...); v != 1 {
			t.Errorf("%s%v = %v for a damaged file kept busy, want 1:\n%s", s[0], s[1:], v, text)
		}
	}
	if v, _ := series(text, "sessionmedic_damage_oldest_timestamp_seconds"); v == 0 {
		t.Error("damage_oldest_timestamp_seconds = 0 with a damaged file kept busy")
	}
	e := logs.events("file.busy")[0]
	if reason, _ := e["reason"].(string); e["kind"] != "truncated" || e["offset"] == nil ||
		!strings.Contains(reason, "lock protocol flock") || !strings.Contains(reason, p+".lock: flock held") {
		t.Errorf("file.busy: %v", e)
	}
	release()
	waitFor(t, "the heal once the lock is free", func() bool { return len(logs.events("file.healed")) == 1 })
	text = scrape(t, logs)
	for _, name := range []string{"sessionmedic_files_damaged", "sessionmedic_files_damaged_busy", "sessionmedic_damage_oldest_timestamp_seconds"} {
		if v, _ := series(text, name); v != 0 {
			t.Errorf("%s = %v once healed, want 0", name, v)
		}
	}
}

// A damaged file whose app holds its lock for longer than the rule's max_wait is said at
// WARN, with the holder and what to do, and again every BusyWarnEvery while it lasts (DEBUG
// in between); it counts once in files_busy_stuck until the lock is let go and the heal
// takes it back.
func TestStuckBusyFileIsSaidAtWarnAgain(t *testing.T) {
	root := t.TempDir()
	p := filepath.Join(root, "s.jsonl")
	os.WriteFile(p, []byte("{\"a\":1}\n"), 0o644)
	cfg, release := heldFlockPolicy(t, root, p, "100ms")
	every := 700 * time.Millisecond
	src, logs := metricsDaemon(t, cfg, Options{Backoff: 20 * time.Millisecond, BusyWarnEvery: every})
	os.WriteFile(p, []byte("{\"a\":1}\n{\"a\""), 0o644)
	src.events <- fsnotify.Event{Name: p, Op: fsnotify.Write}

	atLevel := func(level string) []map[string]any {
		var out []map[string]any
		for _, e := range logs.events("file.busy") {
			if e["level"] == level {
				out = append(out, e)
			}
		}
		return out
	}
	waitFor(t, "three file.busy at WARN", func() bool { return len(atLevel("WARN")) >= 3 })
	if v, _ := series(scrape(t, logs), "sessionmedic_files_busy_stuck", `rule="j"`); v != 1 {
		t.Errorf("files_busy_stuck{rule=j} = %v while the file is stuck busy, want 1", v)
	}
	warns := atLevel("WARN")
	var last time.Time
	for i, e := range warns {
		at, err := time.Parse(time.RFC3339Nano, e["time"].(string))
		if err != nil {
			t.Fatal(err)
		}
		if i > 0 && at.Sub(last) < every {
			t.Errorf("file.busy at WARN #%d %v after the one before, want %v or more", i+1, at.Sub(last), every)
		}
		last = at
		reason, _ := e["reason"].(string)
		_, err = time.ParseDuration(fmt.Sprint(e["busy_for"]))
		if !strings.Contains(reason, "lock protocol flock") || !strings.Contains(reason, p+".lock: flock held") ||
			e["kind"] != "truncated" || e["advice"] == nil || err != nil {
			t.Errorf("file.busy at WARN #%d: %v", i+1, e)
		}
	}
	if len(atLevel("DEBUG")) < len(warns) {
		t.Errorf("%d file.busy at DEBUG for %d at WARN: the retries between are not quiet", len(atLevel("DEBUG")), len(warns))
	}
	if n := len(atLevel("INFO")); n != 0 {
		t.Errorf("%d file.busy at INFO after the WARN: said once loudly is enough", n)
	}

	release()
	waitFor(t, "the heal once the lock is free", func() bool { return len(logs.events("file.healed")) == 1 })
	if v, _ := series(scrape(t, logs), "sessionmedic_files_busy_stuck"); v != 0 {
		t.Errorf("files_busy_stuck = %v once healed, want 0", v)
	}
}
