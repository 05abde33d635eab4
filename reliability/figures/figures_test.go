package figures

import (
	"encoding/json"
	"os"
	"path/filepath"
	"sync"
	"testing"
)

// Suites writing at once each keep their figures, and a suite written twice keeps its last.
func TestWriteKeepsEverySuite(t *testing.T) {
	out := filepath.Join(t.TempDir(), "figures.json")
	t.Setenv("RELIABILITY_OUT", out)
	var wg sync.WaitGroup
	for _, s := range []string{"crash", "faults", "race", "hostile"} {
		wg.Go(func() {
			if err := Write(s, map[string]any{"suite": s, "violations": 0}); err != nil {
				t.Error(err)
			}
		})
	}
	wg.Wait()
	if err := Write("race", map[string]any{"suite": "race", "violations": 1}); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	var all map[string]struct {
		Suite      string `json:"suite"`
		Violations int    `json:"violations"`
	}
	if err := json.Unmarshal(b, &all); err != nil {
		t.Fatalf("%v in %s", err, b)
	}
	if len(all) != 4 || all["crash"].Suite != "crash" || all["hostile"].Suite != "hostile" || all["race"].Violations != 1 {
		t.Fatalf("figures: %s", b)
	}
}

// A directory gets one file per suite; no RELIABILITY_OUT, nothing at all.
func TestWriteToADirectory(t *testing.T) {
	dir := t.TempDir()
	t.Setenv("RELIABILITY_OUT", dir)
	if err := Write("crash", map[string]int{"runs": 3}); err != nil {
		t.Fatal(err)
	}
	if b, err := os.ReadFile(filepath.Join(dir, "crash.json")); err != nil || string(b) != "{\n  \"runs\": 3\n}\n" {
		t.Fatalf("%q %v", b, err)
	}
	t.Setenv("RELIABILITY_OUT", "")
	if err := Write("faults", 1); err != nil {
		t.Fatal(err)
	}
	if ents, _ := os.ReadDir(dir); len(ents) != 1 {
		t.Fatalf("%d files", len(ents))
	}
}
