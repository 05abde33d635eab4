package daemon

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/fsnotify/fsnotify"
)

// A session file larger than its rule's max_file_size is not judged, so not guarded: the
// daemon says so once (file.not_judged, with the reason and what to do) and counts it in
// files_not_judged while it lasts — it was skipped silently, the scan counting it among the
// files it judged. Judged again when it shrinks under the limit: the gauge falls back; gone,
// it is no longer counted.
func TestFileNotJudgedIsSaid(t *testing.T) {
	root := t.TempDir()
	big, small := filepath.Join(root, "big.jsonl"), filepath.Join(root, "small.jsonl")
	os.WriteFile(big, []byte(`{"a":"`+strings.Repeat("x", 2000)+`"}`+"\n"), 0o644)
	os.WriteFile(small, []byte(`{"a":1}`+"\n"), 0o644)
	cfg := testPolicy(t, root)
	cfg.Rules[0].Limits.MaxFileSize = 1000
	src, logs := metricsDaemon(t, cfg, Options{})
	notJudged := func() float64 {
		v, _ := series(scrape(t, logs), "sessionmedic_files_not_judged", `rule="j"`)
		return v
	}
	if v := notJudged(); v != 1 {
		t.Fatalf("files_not_judged = %v after the first scan, want 1", v)
	}
	if sf := logs.events("scan.finished"); len(sf) != 1 || sf[0]["files"] != 2.0 || sf[0]["not_judged"] != 1.0 {
		t.Fatalf("scan.finished: %v, want 2 files, 1 not judged", sf)
	}
	ev := logs.events("file.not_judged")
	if len(ev) != 1 || ev[0]["path"] != big || ev[0]["level"] != "WARN" || ev[0]["rule"] != "j" ||
		!strings.Contains(ev[0]["reason"].(string), "larger than max_file_size") || !strings.Contains(ev[0]["advice"].(string), "max_file_size") {
		t.Fatalf("file.not_judged lines: %v", ev)
	}
	checked := func() float64 {
		v, _ := series(scrape(t, logs), "sessionmedic_files_checked_total", `rule="j"`)
		return v
	}
	// Judged again, still too large (a rescan, a write): not said again, counted once.
	src.errs <- fsnotify.ErrEventOverflow
	waitFor(t, "the rescan", func() bool { return len(logs.events("scan.finished")) >= 2 })
	n := checked()
	os.WriteFile(big, []byte(`{"a":"`+strings.Repeat("y", 2000)+`"}`+"\n"), 0o644)
	src.events <- fsnotify.Event{Name: big, Op: fsnotify.Write}
	waitFor(t, "the write judged", func() bool { return checked() > n })
	if v := notJudged(); v != 1 {
		t.Fatalf("files_not_judged = %v, want 1", v)
	}
	if n := len(logs.events("file.not_judged")); n != 1 {
		t.Fatalf("file.not_judged said %d times for one file and reason", n)
	}
	// Under the limit: judged, no longer counted.
	os.WriteFile(big, []byte(`{"a":2}`+"\n"), 0o644)
	src.events <- fsnotify.Event{Name: big, Op: fsnotify.Write}
	waitFor(t, "big judged", func() bool { return notJudged() == 0 })
	// Over it again, then deleted: said again, then no longer counted.
	os.WriteFile(big, []byte(`{"a":"`+strings.Repeat("z", 2000)+`"}`+"\n"), 0o644)
	src.events <- fsnotify.Event{Name: big, Op: fsnotify.Write}
	waitFor(t, "big over the limit again", func() bool { return notJudged() == 1 && len(logs.events("file.not_judged")) == 2 })
	os.Remove(big)
	src.events <- fsnotify.Event{Name: big, Op: fsnotify.Remove}
	waitFor(t, "big gone", func() bool { return notJudged() == 0 })
}
