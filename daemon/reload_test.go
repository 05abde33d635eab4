package daemon

import (
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/sessionmedic/sessionmedic/policy"
)

func freeAddr(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().String()
}

// get returns the status of GET url, 0 when nothing answers.
func get(url string) (int, string) {
	c := http.Client{Timeout: 2 * time.Second}
	resp, err := c.Get(url)
	if err != nil {
		return 0, ""
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

func metricLine(addr, name string) string {
	_, body := get("http://" + addr + "/metrics")
	for _, l := range strings.Split(body, "\n") {
		if strings.HasPrefix(l, name+" ") {
			return l
		}
	}
	return ""
}

// TestReloadRebindsHTTP: a reload moves the endpoint to a new http.listen; one it cannot
// bind leaves the old one serving and says so in the log and the reload series; http.pprof
// turns /debug/pprof/ on and off.
func TestReloadRebindsHTTP(t *testing.T) {
	root := t.TempDir()
	base := testPolicy(t, root)
	var mu sync.Mutex
	cur := *base
	cur.HTTP.Listen = freeAddr(t)
	set := func(h policy.HTTP) { mu.Lock(); c := *base; c.HTTP = h; cur = c; mu.Unlock() }
	reload := make(chan struct{})
	var logs logBuf
	ready := make(chan struct{})
	cancel, done := start(t, Options{
		Load: func() (*policy.Config, []string, error) { mu.Lock(); defer mu.Unlock(); c := cur; return &c, nil, nil },
		Log:  slog.New(slog.NewJSONHandler(&logs, nil)), Reload: reload, Ready: ready,
		Notify: func(string) error { return nil },
	})
	defer func() { cancel(); <-done }()
	<-ready
	a1 := cur.HTTP.Listen
	if c, _ := get("http://" + a1 + "/healthz"); c != 200 {
		t.Fatalf("/healthz on %s: %d", a1, c)
	}
	if l := metricLine(a1, "sessionmedic_config_last_reload_successful"); l != "sessionmedic_config_last_reload_successful 1" {
		t.Fatalf("at start: %q", l)
	}
	if l := metricLine(a1, "sessionmedic_config_last_reload_success_timestamp_seconds"); l == "" || strings.HasSuffix(l, " 0") {
		t.Fatalf("at start: %q", l)
	}
	if c, _ := get("http://" + a1 + "/debug/pprof/"); c != 404 {
		t.Fatalf("pprof by default: %d, want 404", c)
	}

	a2 := freeAddr(t)
	set(policy.HTTP{Listen: a2})
	reload <- struct{}{}
	waitFor(t, "the new address", func() bool { c, _ := get("http://" + a2 + "/healthz"); return c == 200 })
	waitFor(t, "the old address to close", func() bool { c, _ := get("http://" + a1 + "/healthz"); return c == 0 })
	if ev := logs.events("http.listening"); len(ev) != 2 || ev[1]["addr"] != a2 {
		t.Fatalf("http.listening: %v", ev)
	}

	// An address in use: the old listener stays, the rest of the policy applies.
	busy, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer busy.Close()
	set(policy.HTTP{Listen: busy.Addr().String(), Pprof: true})
	reload <- struct{}{}
	waitFor(t, "http.error", func() bool { return len(logs.events("http.error")) == 1 })
	ev := logs.events("http.error")[0]
	if ev["level"] != "WARN" || ev["key"] != "http.listen" || ev["addr"] != busy.Addr().String() || !strings.Contains(ev["err"].(string), "in use") {
		t.Fatalf("http.error: %v", ev)
	}
	waitFor(t, "policy.reloaded", func() bool { return len(logs.events("policy.reloaded")) == 2 })
	if c, _ := get("http://" + a2 + "/healthz"); c != 200 {
		t.Fatalf("the old address stopped: %d", c)
	}
	if l := metricLine(a2, "sessionmedic_config_last_reload_successful"); l != "sessionmedic_config_last_reload_successful 0" {
		t.Fatalf("after a failed bind: %q", l)
	}
	if c, _ := get("http://" + a2 + "/debug/pprof/"); c != 200 {
		t.Fatalf("pprof with http.pprof: true: %d", c)
	}

	// The same address again, pprof off: a full success.
	set(policy.HTTP{Listen: a2})
	reload <- struct{}{}
	waitFor(t, "policy.reloaded", func() bool { return len(logs.events("policy.reloaded")) == 3 })
	if l := metricLine(a2, "sessionmedic_config_last_reload_successful"); l != "sessionmedic_config_last_reload_successful 1" {
		t.Fatalf("after a good reload: %q", l)
	}
	if c, _ := get("http://" + a2 + "/debug/pprof/"); c != 404 {
		t.Fatalf("pprof turned off: %d", c)
	}
	if len(logs.events("http.listening")) != 2 {
		t.Fatalf("an unchanged address was bound again: %v", logs.events("http.listening"))
	}
}

// k8sLayout writes policy as a ConfigMap volume holds it: dir/..<ts>/policy.yaml, ..data
// pointing at that, dir/policy.yaml pointing through ..data. It returns the file's path and a
// function that publishes a new version by swapping ..data.
func k8sLayout(t *testing.T, dir, policyText string) (string, func(text string)) {
	t.Helper()
	n := 0
	publish := func(text string) {
		n++
		ts := filepath.Join(dir, "..2026_11_23_x"+strings.Repeat("y", n))
		if err := os.Mkdir(ts, 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(ts, "policy.yaml"), []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
		tmp := filepath.Join(dir, "..data_tmp")
		if err := os.Symlink(filepath.Base(ts), tmp); err != nil {
			t.Fatal(err)
		}
		if err := os.Rename(tmp, filepath.Join(dir, "..data")); err != nil {
			t.Fatal(err)
		}
	}
	publish(policyText)
	p := filepath.Join(dir, "policy.yaml")
	if err := os.Symlink("..data/policy.yaml", p); err != nil {
		t.Fatal(err)
	}
	return p, publish
}

// TestWatchConfig: the policy file's changes reload, written in place or published as
// Kubernetes does, and so do in-place writes of the file a symlinked policy (or a chain of
// links) resolves to in other directories; a bad edit keeps the old policy; a touch that
// changes nothing does not reload.
func TestWatchConfig(t *testing.T) {
	root := t.TempDir()
	state := filepath.Join(t.TempDir(), "state")
	text := func(level string) string {
		return "version: 1\nstate_dir: " + state + "\nlog: {level: " + level + "}\nrules:\n  - {name: j, format: jsonl, paths: [" + root + "], settle: 50ms}\n"
	}
	for _, layout := range []string{"plain", "kubernetes", "symlink", "symlink-chain"} {
		t.Run(layout, func(t *testing.T) {
			dir := t.TempDir()
			p := filepath.Join(dir, "policy.yaml")
			// write truncates and writes in place, through whatever links p resolves through.
			write := func(s string) {
				if err := os.WriteFile(p, []byte(s), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			switch layout {
			case "kubernetes":
				p, write = k8sLayout(t, dir, text("info"))
			case "symlink":
				// dir/policy.yaml -> B/policy.yaml
				target := filepath.Join(t.TempDir(), "policy.yaml")
				if err := os.Symlink(target, p); err != nil {
					t.Fatal(err)
				}
			case "symlink-chain":
				// dir/policy.yaml -> B/current.yaml -> ../C/policy.yaml (a relative link)
				b, c := t.TempDir(), t.TempDir()
				if err := os.Symlink(filepath.Join("..", filepath.Base(c), "policy.yaml"), filepath.Join(b, "current.yaml")); err != nil {
					t.Fatal(err)
				}
				if err := os.Symlink(filepath.Join(b, "current.yaml"), p); err != nil {
					t.Fatal(err)
				}
			}
			if layout != "kubernetes" {
				write(text("info"))
			}
			var logs logBuf
			lv := new(slog.LevelVar)
			ready := make(chan struct{})
			cancel, done := start(t, Options{
				Load: func() (*policy.Config, []string, error) {
					c, err := policy.Load(p)
					return c, nil, err
				},
				Source: p, Log: slog.New(slog.NewJSONHandler(&logs, nil)), Level: lv, Ready: ready,
				Notify: func(string) error { return nil }, WatchConfig: p, WatchDebounce: 100 * time.Millisecond,
			})
			defer func() { cancel(); <-done }()
			<-ready
			write(text("debug"))
			waitFor(t, "policy.reloaded", func() bool { return len(logs.events("policy.reloaded")) == 1 })
			if lv.Level() != slog.LevelDebug {
				t.Fatalf("level %v after the reload", lv.Level())
			}
			write(text("debug")) // the same bytes: no reload
			time.Sleep(400 * time.Millisecond)
			if n := len(logs.events("policy.reloaded")); n != 1 {
				t.Fatalf("%d reloads after rewriting the same policy, want 1", n)
			}
			write(strings.Replace(text("warn"), "rules:", "rulez:", 1))
			waitFor(t, "policy.invalid", func() bool { return len(logs.events("policy.invalid")) == 1 })
			if lv.Level() != slog.LevelDebug || len(logs.events("policy.reloaded")) != 1 {
				t.Fatalf("a bad edit applied: level %v, %d reloads", lv.Level(), len(logs.events("policy.reloaded")))
			}
			write(text("warn"))
			waitFor(t, "the fixed policy", func() bool { return lv.Level() == slog.LevelWarn })
			time.Sleep(400 * time.Millisecond)
			if n, m := len(logs.events("policy.reloaded")), len(logs.events("policy.invalid")); n != 2 || m != 1 {
				t.Fatalf("%d reloads and %d invalid, want 2 and 1", n, m)
			}
		})
	}
}
