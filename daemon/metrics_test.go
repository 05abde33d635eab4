package daemon

import (
	"io"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/fsnotify/fsnotify"
	"github.com/sessionmedic/sessionmedic/heal"
	"github.com/sessionmedic/sessionmedic/heal/format"
	"github.com/sessionmedic/sessionmedic/policy"
	"github.com/sessionmedic/sessionmedic/watcher"
)

// scrape fetches /metrics from the daemon's listener, found in its http.listening line.
func scrape(t *testing.T, logs *logBuf) string {
	t.Helper()
	var ev []map[string]any
	waitFor(t, "http.listening", func() bool { ev = logs.events("http.listening"); return len(ev) > 0 })
	resp, err := http.Get("http://" + ev[0]["addr"].(string) + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// series returns the values of name's series that carry every label of labels (k="v"),
// and whether there was any.
func series(text, name string, labels ...string) (sum float64, found bool) {
	for _, line := range strings.Split(text, "\n") {
		if !strings.HasPrefix(line, name+"{") && !strings.HasPrefix(line, name+" ") {
			continue
		}
		ok := true
		for _, l := range labels {
			ok = ok && strings.Contains(line, l)
		}
		if !ok {
			continue
		}
		v, err := strconv.ParseFloat(line[strings.LastIndexByte(line, ' ')+1:], 64)
		if err == nil {
			sum, found = sum+v, true
		}
	}
	return sum, found
}

// metricsDaemon runs the daemon on cfg (unless o.Load is set) with a listener, the fake watcher source and a debug
// log; it returns once the first scan finished.
func metricsDaemon(t *testing.T, cfg *policy.Config, o Options) (*fakeSource, *logBuf) {
	t.Helper()
	cfg.HTTP.Listen = "127.0.0.1:0"
	src := newFake()
	logs := &logBuf{}
	ready := make(chan struct{})
	if o.Load == nil {
		o.Load = func() (*policy.Config, []string, error) { return cfg, nil, nil }
	}
	o.Log = slog.New(slog.NewJSONHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	o.Ready, o.Notify = ready, func(string) error { return nil }
	o.NewSource = func() (watcher.Source, error) { return src, nil }
	cancel, done := start(t, o)
	t.Cleanup(func() { cancel(); <-done })
	<-ready
	return src, logs
}

func TestDamagedGaugeFollowsTheFiles(t *testing.T) {
	root := t.TempDir()
	a, b := filepath.Join(root, "a.jsonl"), filepath.Join(root, "b.jsonl")
	torn := []byte("{\"a\":1}\n{\"a\"")
	os.WriteFile(a, torn, 0o644)
	cfg := testPolicy(t, root)
	cfg.Rules[0].Mode = policy.ModeObserve // damage no one heals: refused, and left there
	before := time.Now()
	src, logs := metricsDaemon(t, cfg, Options{})
	damaged := func() float64 {
		v, _ := series(scrape(t, logs), "sessionmedic_files_damaged", `rule="j"`)
		return v
	}
	oldest := func() float64 {
		v, ok := series(scrape(t, logs), "sessionmedic_damage_oldest_timestamp_seconds")
		if !ok {
			t.Fatal("no sessionmedic_damage_oldest_timestamp_seconds")
		}
		return v
	}
	text := scrape(t, logs)
	if v, _ := series(text, "sessionmedic_files_damaged", `rule="j"`, `kind="truncated"`); v != 1 {
		t.Fatalf("files_damaged{kind=truncated} = %v after the first scan:\n%s", v, text)
	}
	first := oldest()
	if first < float64(before.Unix()) || first > float64(time.Now().Unix()+1) {
		t.Fatalf("damage_oldest_timestamp_seconds = %v, want about %v", first, before.Unix())
	}

	// A second damaged file: two now, the oldest stays the first one's.
	time.Sleep(20 * time.Millisecond)
	os.WriteFile(b, torn, 0o644)
	src.events <- fsnotify.Event{Name: b, Op: fsnotify.Write}
	waitFor(t, "two damaged files", func() bool { return damaged() == 2 })
	if v := oldest(); v != first {
		t.Fatalf("oldest damage moved from %v to %v with a newer damage", first, v)
	}
	// Judged again, still damaged: counted once, first seen when it was first seen.
	src.errs <- fsnotify.ErrEventOverflow
	waitFor(t, "the rescan", func() bool { return len(logs.events("scan.finished")) >= 2 })
	if v := damaged(); v != 2 {
		t.Fatalf("files_damaged = %v after a rescan, want 2", v)
	}
	if v := oldest(); v != first {
		t.Fatalf("oldest damage moved from %v to %v at a rescan", first, v)
	}

	// a is fixed: one left, and the oldest is b's.
	os.WriteFile(a, []byte("{\"a\":1}\n"), 0o644)
	src.events <- fsnotify.Event{Name: a, Op: fsnotify.Write}
	waitFor(t, "a healthy again", func() bool { return damaged() == 1 })
	if v := oldest(); v <= first {
		t.Fatalf("oldest damage %v after the first damage was fixed, want after %v", v, first)
	}
	// b is deleted: nothing damaged.
	os.Remove(b)
	src.events <- fsnotify.Event{Name: b, Op: fsnotify.Remove}
	waitFor(t, "b gone", func() bool { return damaged() == 0 })
	if v := oldest(); v != 0 {
		t.Fatalf("damage_oldest_timestamp_seconds = %v with nothing damaged", v)
	}

	// A deletion no event told of is found by the next rescan.
	os.WriteFile(a, torn, 0o644)
	src.events <- fsnotify.Event{Name: a, Op: fsnotify.Write}
	waitFor(t, "a damaged again", func() bool { return damaged() == 1 })
	os.Remove(a)
	src.errs <- fsnotify.ErrEventOverflow
	waitFor(t, "a's deletion seen by the rescan", func() bool { return damaged() == 0 && oldest() == 0 })
}

func TestRefusedFileCountsAsDamaged(t *testing.T) {
	root := t.TempDir()
	os.WriteFile(filepath.Join(root, "a.jsonl"), []byte("{\"a\":1}\n{\"a\""), 0o644)
	cfg := testPolicy(t, root)
	cfg.Rules[0].Strategies = nil // no strategy: every damage is refused
	_, logs := metricsDaemon(t, cfg, Options{})
	text := scrape(t, logs)
	if v, _ := series(text, "sessionmedic_files_damaged", `rule="j"`, `kind="truncated"`); v != 1 {
		t.Fatalf("files_damaged = %v for a refused file:\n%s", v, text)
	}
	if v, _ := series(text, "sessionmedic_heals_total", `rule="j"`, `strategy=""`, `result="refused"`); v != 1 {
		t.Fatalf("heals_total{strategy=\"\",result=refused} = %v:\n%s", v, text)
	}
}

func TestCountersStartAtZero(t *testing.T) {
	root := t.TempDir() // no file: no event moves any counter
	cfg := testPolicy(t, root)
	_, logs := metricsDaemon(t, cfg, Options{Version: "v9.9.9"})
	text := scrape(t, logs)
	want := [][]string{
		{"sessionmedic_files_checked_total", `rule="j"`},
		{"sessionmedic_flapping_total", `rule="j"`},
		{"sessionmedic_watch_overflows_total", `rule="j"`},
		{"sessionmedic_files_busy_stuck", `rule="j"`},
		{"sessionmedic_files_damaged_busy", `rule="j"`},
		{"sessionmedic_rule_files", `rule="j"`}, // no file: the rule guards nothing
	}
	// Every series with a kind the rule's format (jsonl) can name, and those only.
	kinds := heal.New(cfg, heal.Options{}).DamageKinds(&cfg.Rules[0])
	for _, kind := range kinds {
		for _, name := range []string{"sessionmedic_damage_total", "sessionmedic_heals_refused_total", "sessionmedic_files_damaged"} {
			want = append(want, []string{name, `rule="j"`, `kind="` + kind + `"`})
		}
	}
	for _, kind := range format.AllKinds() {
		if slices.Contains(kinds, kind) {
			continue
		}
		if _, ok := series(text, "sessionmedic_damage_total", `rule="j"`, `kind="`+kind+`"`); ok {
			t.Errorf("damage_total{rule=j,kind=%s}: a kind no verdict on a jsonl file names", kind)
		}
	}
	if len(kinds) < 3 || slices.Contains(kinds, format.KindSyntax) {
		t.Errorf("the kinds of a jsonl rule: %v", kinds)
	}
	for _, s := range cfg.Rules[0].Strategies {
		for _, res := range []string{"healed", "refused", "busy"} {
			want = append(want, []string{"sessionmedic_heals_total", `rule="j"`, `strategy="` + string(s) + `"`, `result="` + res + `"`})
		}
	}
	for _, w := range want {
		v, ok := series(text, w[0], w[1:]...)
		if !ok || v != 0 {
			t.Errorf("%s%v: %v (present %v), want 0", w[0], w[1:], v, ok)
		}
	}
	if v, ok := series(text, "sessionmedic_damage_oldest_timestamp_seconds"); !ok || v != 0 {
		t.Errorf("damage_oldest_timestamp_seconds = %v (present %v), want 0", v, ok)
	}
	build := `sessionmedic_build_info{goversion="` + runtime.Version() + `",revision="`
	if v, ok := series(text, "sessionmedic_build_info", `version="v9.9.9"`, `goversion="`+runtime.Version()+`"`); !ok || v != 1 || !strings.Contains(text, build) {
		t.Errorf("no build_info with the version and Go's:\n%s", text)
	}
	if t.Failed() {
		t.Log(text)
	}
}

func TestReloadInitialisesCountersAndDropsUncoveredDamage(t *testing.T) {
	root := t.TempDir()
	os.WriteFile(filepath.Join(root, "a.jsonl"), []byte("{\"a\":1}\n{\"a\""), 0o644)
	cfg := testPolicy(t, root)
	cfg.Rules[0].Mode = policy.ModeObserve
	cfg.HTTP.Listen = "127.0.0.1:0"
	var current atomic.Pointer[policy.Config]
	current.Store(cfg)
	reload := make(chan struct{})
	_, logs := metricsDaemon(t, cfg, Options{Reload: reload,
		Load: func() (*policy.Config, []string, error) { return current.Load(), nil, nil }})
	if v, _ := series(scrape(t, logs), "sessionmedic_files_damaged", `rule="j"`); v != 1 {
		t.Fatalf("files_damaged{rule=j} = %v before the reload", v)
	}
	// The new policy's only rule, k, covers another directory: a's damage is no one's now.
	next := cfg.Clone()
	next.Rules[0].Name, next.Rules[0].Paths = "k", []string{t.TempDir()}
	current.Store(next)
	reload <- struct{}{}
	waitFor(t, "the rescan after the reload", func() bool { return len(logs.events("scan.finished")) >= 2 })
	text := scrape(t, logs)
	for _, name := range []string{"sessionmedic_files_checked_total", "sessionmedic_flapping_total", "sessionmedic_watch_overflows_total",
		"sessionmedic_files_damaged", "sessionmedic_files_busy_stuck", "sessionmedic_rule_files"} {
		if v, ok := series(text, name, `rule="k"`); !ok || v != 0 {
			t.Errorf("%s{rule=k} = %v (present %v) after the reload", name, v, ok)
		}
	}
	if _, ok := series(text, "sessionmedic_rule_files", `rule="j"`); ok {
		t.Error("rule_files{rule=j} after the reload dropped rule j")
	}
	if v, _ := series(text, "sessionmedic_files_damaged"); v != 0 {
		t.Errorf("files_damaged = %v for a file no rule covers any more", v)
	}
	if v, _ := series(text, "sessionmedic_damage_oldest_timestamp_seconds"); v != 0 {
		t.Errorf("damage_oldest_timestamp_seconds = %v with nothing damaged", v)
	}
}

// A file whose app holds its lock is busy; its fourth busy verdict in a row is said at
// INFO, once, with the retries so far; the others stay DEBUG.
func TestLongBusyFileIsSaidAtInfo(t *testing.T) {
	root := t.TempDir()
	p := filepath.Join(root, "s.jsonl")
	os.WriteFile(p, []byte("{\"a\":1}\n"), 0o644)
	yaml := "version: 1\nstate_dir: " + filepath.Join(t.TempDir(), "state") + "\nrules:\n  - name: j\n    format: jsonl\n    paths: [" + root +
		"]\n    settle: 50ms\n    max_wait: 1s\n    lock: {flock: \"{file}.lock\", wait: 10ms}\n"
	cfg, err := policy.Parse("test.yaml", []byte(yaml))
	if err != nil {
		t.Fatal(err)
	}
	lf, err := os.OpenFile(p+".lock", os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	defer lf.Close()
	if err := syscall.Flock(int(lf.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		t.Fatal(err)
	}
	src, logs := metricsDaemon(t, cfg, Options{Backoff: 5 * time.Millisecond})
	os.WriteFile(p, []byte("{\"a\":1}\n{\"a\""), 0o644)
	src.events <- fsnotify.Event{Name: p, Op: fsnotify.Write}
	waitFor(t, "six busy verdicts", func() bool { return len(logs.events("file.busy")) >= 6 })
	syscall.Flock(int(lf.Fd()), syscall.LOCK_UN)
	waitFor(t, "the heal once the lock is free", func() bool { return len(logs.events("file.healed")) == 1 })
	busy := logs.events("file.busy")
	for i, ev := range busy {
		want := "DEBUG"
		if i == 3 {
			want = "INFO"
			if ev["retries"] != float64(3) {
				t.Errorf("the INFO file.busy says retries %v, want 3", ev["retries"])
			}
		}
		if ev["level"] != want || ev["path"] != p || ev["rule"] != "j" {
			t.Errorf("file.busy #%d: %v, want level %s", i+1, ev, want)
		}
	}
}

// A file not judged (an internal error) keeps the damage its last verdict found: what is not
// known is not taken for healed.
func TestNotJudgedKeepsTheDamageKnown(t *testing.T) {
	b := newDamageBook(newMetrics("v", "r"))
	now := time.Now()
	b.verdict("/s/a.jsonl", "j", heal.Report{Verdict: heal.Damaged, Kind: "truncated", Action: heal.ActionRefused}, now)
	b.verdict("/s/a.jsonl", "j", heal.Report{Verdict: heal.Skipped, InternalError: "panic: boom"}, now.Add(time.Second))
	if e, ok := b.files["/s/a.jsonl"]; !ok || e.kind != "truncated" || !e.since.Equal(now) {
		t.Fatalf("after a verdict not judged: %+v (%v)", e, ok)
	}
	b.verdict("/s/a.jsonl", "j", heal.Report{Verdict: heal.Skipped, Detail: "file no longer exists"}, now)
	if _, ok := b.files["/s/a.jsonl"]; ok {
		t.Fatal("a skipped verdict kept the damage")
	}
}
