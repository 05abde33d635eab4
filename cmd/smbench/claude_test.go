package main

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestClaudeSizes(t *testing.T) {
	for _, c := range []struct {
		files int
		total int64
	}{{5000, 2e9}, {200, 40e6}} {
		sizes := claudeSizes(c.files, c.total, 1)
		if len(sizes) != c.files {
			t.Fatalf("%d sizes for %d files", len(sizes), c.files)
		}
		var sum, largest int64
		small := 0
		for _, s := range sizes {
			sum += s
			largest = max(largest, s)
			if s < c.total/int64(c.files) {
				small++
			}
		}
		if sum < c.total*99/100 || sum > c.total*101/100 {
			t.Errorf("%d files: %d bytes, want about %d", c.files, sum, c.total)
		}
		if small < c.files*3/4 {
			t.Errorf("%d files: only %d under the mean size: most should be small", c.files, small)
		}
		if c.files == 5000 && largest <= 100e6 {
			t.Errorf("the largest of 2 GB is %d bytes, want over 100 MB", largest)
		}
	}
}

func TestClaudeSession(t *testing.T) {
	p := newClaudePools(3)
	s := newClaudeSession(p, 7, "/home/user/src/demo proj")
	if got := claudeSlug("/home/user/src/demo proj"); got != "-home-user-src-demo-proj" {
		t.Errorf("slug %q", got)
	}
	data := s.fill(nil, 256<<10)
	path := filepath.Join("/x", s.id+".jsonl")
	if err := claudeCheck(data, path); err != nil {
		t.Fatal(err)
	}
	if err := jsonvLines(data); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{`"type":"queue-operation"`, `"type":"tool_use"`, `"type":"tool_result"`, `"type":"last-prompt"`, `"parentUuid":null`, `\n`, `\"`} {
		if !bytes.Contains(data, []byte(want)) {
			t.Errorf("no %s in the transcript", want)
		}
	}
	// A batch of exactly 1 KiB of whole records continues the chain.
	batch := s.exactBatch(1024)
	if len(batch) != 1024 || batch[len(batch)-1] != '\n' || bytes.Count(batch, []byte("\n")) != 2 {
		t.Fatalf("batch of %d bytes, %d records", len(batch), bytes.Count(batch, []byte("\n")))
	}
	data = append(data, batch...)
	if err := claudeCheck(data, path); err != nil {
		t.Fatalf("after the batch: %v", err)
	}
	// take and peek: records one by one, whole, in chain order.
	next := append([]byte(nil), s.peek()...)
	got := s.take(7)
	if !bytes.HasPrefix(got, next) || bytes.Count(got, []byte("\n")) != 7 {
		t.Fatalf("take(7): %d records", bytes.Count(got, []byte("\n")))
	}
	data = append(data, got...)
	data = append(data, s.take(30)...)
	if err := claudeCheck(data, path); err != nil {
		t.Fatalf("after take: %v", err)
	}
	// The checker rejects what the profile calls damage.
	for name, bad := range map[string][]byte{
		"torn":     data[:len(data)-10],
		"nul":      append(append([]byte(nil), data...), make([]byte, 64)...),
		"dangling": bytes.Replace(data, []byte(`"parentUuid":"`), []byte(`"parentUuid":"0`), 1),
		"foreign":  bytes.ReplaceAll(data, []byte(s.id), []byte(strings.Repeat("0", 36))),
		"no chain": []byte(`{"type":"mode","mode":"normal","sessionId":"` + s.id + "\"}\n"),
	} {
		if claudeCheck(bad, path) == nil {
			t.Errorf("%s: accepted", name)
		}
	}
}

func TestClaudeTree(t *testing.T) {
	root := t.TempDir()
	spec := claudeTree{files: 60, total: 6e6, seed: 5}
	st, err := spec.gen(root)
	if err != nil {
		t.Fatal(err)
	}
	var files int
	var total int64
	slugs := map[string]bool{}
	err = filepath.WalkDir(root, func(p string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		files++
		data, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		total += int64(len(data))
		slugs[filepath.Base(filepath.Dir(p))] = true
		if err := claudeCheck(data, p); err != nil {
			t.Errorf("%s: %v", p, err)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if files != st.Files || total != st.Bytes || len(slugs) != st.Slugs || st.Slugs < 3 {
		t.Fatalf("walked %d files, %d bytes, %d slugs; stats %+v", files, total, len(slugs), st)
	}
	if total < spec.total {
		t.Errorf("%d bytes, asked for %d", total, spec.total)
	}
}

// TestClaudeQuick runs the claude workload in -quick mode through the real binary (built
// from this module) and checks that every figure is there.
func TestClaudeQuick(t *testing.T) {
	if testing.Short() {
		t.Skip("builds sessionmedic and runs the daemon")
	}
	var stdout, stderr bytes.Buffer
	code := run(t.Context(), []string{"-quick", "-only", "claude", "-json"}, &stdout, &stderr)
	if code != 0 {
		t.Fatalf("exit %d\n%s\n%s", code, stdout.String(), stderr.String())
	}
	var res Result
	if err := json.Unmarshal(stdout.Bytes(), &res); err != nil {
		t.Fatalf("%v:\n%s", err, stdout.String())
	}
	want := map[string][]string{
		"first scan of":   {"wall_s", "peak_rss_bytes", "files"},
		"idle CPU":        {"idle_cpu_s", "window_s", "first_scan_s", "last_good_files", "last_good_bytes"},
		"RSS watching":    {"rss_bytes", "hwm_bytes"},
		"re-validation":   {"incremental_cpu_s", "full_cpu_s"},
		"damage-to-heale": {"p50_s", "p99_s", "max_s", "heals"},
	}
	// Two latency rows: the small live transcripts, then the long ones.
	if len(res.Rows) != len(want)+1 {
		t.Fatalf("%d rows, want %d:\n%s", len(res.Rows), len(want)+1, stdout.String())
	}
	for _, r := range res.Rows {
		if r.Workload != "claude" || r.Met == metError {
			t.Errorf("row %+v", r)
		}
		found := false
		for goal, metrics := range want {
			if !strings.Contains(r.Goal, goal) {
				continue
			}
			found = true
			for _, m := range metrics {
				if _, ok := r.Metrics[m]; !ok {
					t.Errorf("%s: no metric %s: %v", r.Goal, m, r.Metrics)
				}
			}
		}
		if !found {
			t.Errorf("unexpected row %q", r.Goal)
		}
		if strings.Contains(r.Goal, "re-validation") && (r.RatioValue == nil || *r.RatioValue <= 1 || r.Target != "≥ 1000×") {
			t.Errorf("append row: %+v", r)
		}
		if strings.Contains(r.Goal, "damage-to-healed") && r.Metrics["heals"] < 1 {
			t.Errorf("no damage was healed: %s", r.Note)
		}
	}
}
