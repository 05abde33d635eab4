package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// daemonProc is the real binary running `sessionmedic run`.
type daemonProc struct {
	cmd  *exec.Cmd
	mu   sync.Mutex
	logs []map[string]any
	raw  bytes.Buffer
	done chan error
}

func startDaemon(t *testing.T, home string, args ...string) *daemonProc {
	t.Helper()
	cmd := exec.Command(binary, append([]string{"run", "-log-format", "json"}, args...)...)
	cmd.Env = []string{"HOME=" + home, "XDG_STATE_HOME=" + filepath.Join(home, "state"), "PATH=" + os.Getenv("PATH")}
	return startDaemonCmd(t, cmd)
}

// startDaemonCmd is startDaemon of a command that runs the daemon (under a wrapper, such as
// unshare), its JSON log on stderr.
func startDaemonCmd(t *testing.T, cmd *exec.Cmd) *daemonProc {
	t.Helper()
	d := &daemonProc{done: make(chan error, 1), cmd: cmd}
	stderr, _ := d.cmd.StderrPipe()
	if err := d.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() {
		sc := bufio.NewScanner(stderr)
		for sc.Scan() {
			var m map[string]any
			d.mu.Lock()
			d.raw.Write(sc.Bytes())
			d.raw.WriteByte('\n')
			if json.Unmarshal(sc.Bytes(), &m) == nil {
				d.logs = append(d.logs, m)
			}
			d.mu.Unlock()
		}
		d.done <- d.cmd.Wait()
	}()
	t.Cleanup(func() {
		d.cmd.Process.Kill()
		if t.Failed() {
			d.mu.Lock()
			t.Logf("daemon log:\n%s", d.raw.String())
			d.mu.Unlock()
		}
	})
	return d
}

func (d *daemonProc) events(msg string) []map[string]any {
	d.mu.Lock()
	defer d.mu.Unlock()
	var out []map[string]any
	for _, m := range d.logs {
		if m["msg"] == msg {
			out = append(out, m)
		}
	}
	return out
}

func freePort(t *testing.T) string {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().String()
}

func eventually(t *testing.T, within time.Duration, what string, cond func() bool) time.Duration {
	t.Helper()
	start := time.Now()
	for !cond() {
		if time.Since(start) > within {
			t.Fatalf("timed out after %v waiting for %s", within, what)
		}
		time.Sleep(5 * time.Millisecond)
	}
	return time.Since(start)
}

func httpGet(url string) (int, string) {
	resp, err := http.Get(url)
	if err != nil {
		return 0, ""
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// TestDaemonHealsEveryAppLive runs the real daemon over healthy trees of all five apps, then
// damages one file of each the way the app damages it, and waits for each heal.
func TestDaemonHealsEveryAppLive(t *testing.T) {
	home := t.TempDir()
	root := filepath.Join(t.TempDir(), "apps")
	trees := map[string]string{"copaw": "copaw/healthy", "nanobot": "nanobot/healthy_head", "praisonai": "praisonai/healthy",
		"openviking": "openviking/healthy", "openclaw": "openclaw/01-healthy"}
	var rules strings.Builder
	for app, src := range trees {
		copyDir(t, filepath.Join(samples, src), filepath.Join(root, app))
		fmt.Fprintf(&rules, "  - {name: %s, preset: %s, paths: [%s], settle: 200ms, max_wait: 2s}\n", app, app, filepath.Join(root, app))
	}
	addr := freePort(t)
	policyFile := filepath.Join(home, "policy.yaml")
	os.WriteFile(policyFile, []byte(fmt.Sprintf("version: 1\nstate_dir: %s\nhttp: {listen: %q}\nrules:\n%s", filepath.Join(home, "state"), addr, rules.String())), 0o644)
	d := startDaemon(t, home, "-config", policyFile)
	eventually(t, 15*time.Second, "/readyz", func() bool { c, _ := httpGet("http://" + addr + "/readyz"); return c == 200 })
	if c, _ := httpGet("http://" + addr + "/healthz"); c != 200 {
		t.Fatal("/healthz not ok")
	}
	// The daemon's lines are read from its stderr on their own goroutine: they may come
	// after /readyz says ready.
	eventually(t, 15*time.Second, "scan.finished of each rule", func() bool { return len(d.events("scan.finished")) >= 5 })
	if len(d.events("scan.finished")) != 5 {
		t.Fatalf("scan.finished events: %d", len(d.events("scan.finished")))
	}
	for _, e := range d.events("scan.finished") {
		// Durations in the JSON log are Go duration strings, as file.flapping's window.
		if s, ok := e["duration"].(string); !ok || func() error { _, err := time.ParseDuration(s); return err }() != nil {
			t.Errorf("scan.finished duration %#v is not a duration string", e["duration"])
		}
	}

	oc := filepath.Join(root, "openclaw/state/agents/main/sessions")
	nbFile := filepath.Join(root, "nanobot/sessions/1a90ee6c483ef484075bb4aec4e29b33/dGVsZWdyYW06MTIzNDU2Nzg5.jsonl")
	ovFile := filepath.Join(root, "openviking/workspace/viking/default/user/default/sessions/demo-committed/messages.jsonl")
	cases := []struct {
		name, path, strategy string
		damage               func()
	}{
		{"copaw: two writers race", filepath.Join(root, "copaw/sessions/console/default_console--default.json"), "salvage", func() {
			os.WriteFile(filepath.Join(root, "copaw/sessions/console/default_console--default.json"),
				read(t, filepath.Join(samples, "copaw/corrupt_extra_data_race/sessions/console/default_console--default.json")), 0o644)
		}},
		{"nanobot: crash mid-write", nbFile, "last-good", func() {
			os.WriteFile(nbFile, read(t, filepath.Join(samples, "nanobot/corrupt_truncated_midline/dGVsZWdyYW06MTIzNDU2Nzg5.jsonl")), 0o644)
		}},
		{"praisonai: emptied by a crash", filepath.Join(root, "praisonai/sessions/parent-chat.json"), "last-good", func() {
			os.WriteFile(filepath.Join(root, "praisonai/sessions/parent-chat.json"), nil, 0o600)
		}},
		{"openviking: lost clear", ovFile, "reconcile", func() {
			os.WriteFile(ovFile, read(t, filepath.Join(samples, "openviking/lost_clear/workspace/viking/default/user/default/sessions/demo-committed/messages.jsonl")), 0o644)
		}},
		{"openclaw: rotation dies after renaming the store away", filepath.Join(oc, "sessions.json"), "backup", func() {
			os.Rename(filepath.Join(oc, "sessions.json"), filepath.Join(oc, fmt.Sprintf("sessions.json.bak.%d", time.Now().UnixMilli())))
		}},
	}
	for i, c := range cases {
		want := read(t, c.path)
		start := time.Now()
		c.damage()
		eventually(t, 15*time.Second, c.name, func() bool { return len(d.events("file.healed")) > i })
		latency := time.Since(start)
		ev := d.events("file.healed")[i]
		if ev["path"] != c.path || ev["strategy"] != c.strategy {
			t.Fatalf("%s: healed %v with %v, want %s with %s", c.name, ev["path"], ev["strategy"], c.path, c.strategy)
		}
		if got := read(t, c.path); !bytes.Equal(got, want) {
			t.Fatalf("%s: the healed file is not the healthy original", c.name)
		}
		// A restore where the store was renamed away replaces nothing: no quarantine entry.
		if q, _ := ev["quarantine"].(string); c.strategy != "backup" {
			if _, err := os.Stat(filepath.Join(q, "manifest.json")); q == "" || err != nil {
				t.Fatalf("%s: no quarantine entry (%q): %v", c.name, q, err)
			}
		}
		t.Logf("%s: damage to healed in %v (settle 200ms)", c.name, latency.Round(time.Millisecond))
	}
	_, metrics := httpGet("http://" + addr + "/metrics")
	for _, want := range []string{`sessionmedic_heals_total{result="healed",rule="openclaw",strategy="backup"} 1`,
		`sessionmedic_damage_total{kind="stale-live-records",rule="openviking"} 1`, "sessionmedic_watched_directories"} {
		if !strings.Contains(metrics, want) {
			t.Errorf("metrics lack %q", want)
		}
	}
	if n := len(d.events("file.healed")); n != len(cases) {
		t.Errorf("%d file.healed events, want %d (a heal of our own write?)", n, len(cases))
	}

	d.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case err := <-d.done:
		if err != nil {
			t.Fatalf("exit after SIGTERM: %v", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("no clean exit within 10s of SIGTERM")
	}
}

func read(t *testing.T, p string) []byte {
	t.Helper()
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func TestDaemonReloadWithBadPolicyKeepsRunning(t *testing.T) {
	home := t.TempDir()
	dir := t.TempDir()
	p := filepath.Join(dir, "s.jsonl")
	os.WriteFile(p, []byte("{\"a\":1}\n"), 0o644)
	policyFile := filepath.Join(home, "policy.yaml")
	good := fmt.Sprintf("version: 1\nstate_dir: %s\nrules:\n  - {name: j, format: jsonl, paths: [%s], settle: 100ms, max_wait: 1s}\n", filepath.Join(home, "state"), dir)
	os.WriteFile(policyFile, []byte(good), 0o644)
	d := startDaemon(t, home, "-config", policyFile)
	eventually(t, 10*time.Second, "first scan", func() bool { return len(d.events("scan.finished")) == 1 })
	os.WriteFile(policyFile, []byte(good+"    settle: 2x\n"), 0o644)
	d.cmd.Process.Signal(syscall.SIGHUP)
	eventually(t, 10*time.Second, "policy.invalid", func() bool { return len(d.events("policy.invalid")) == 1 })
	if e := d.events("policy.invalid")[0]; !strings.Contains(fmt.Sprint(e["err"]), "policy.yaml:") {
		t.Errorf("policy.invalid does not name file and line: %v", e["err"])
	}
	os.WriteFile(p, []byte("{\"a\":1}\n{\"a\""), 0o644)
	eventually(t, 10*time.Second, "heal under the old policy", func() bool { return len(d.events("file.healed")) == 1 })
	d.cmd.Process.Signal(syscall.SIGINT)
	select {
	case err := <-d.done:
		if err != nil {
			t.Fatalf("exit after SIGINT: %v", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("no clean exit")
	}
}

func TestDaemonStartsWithAMissingRoot(t *testing.T) {
	home := t.TempDir()
	dir := filepath.Join(t.TempDir(), "later", "sessions")
	policyFile := filepath.Join(home, "policy.yaml")
	os.WriteFile(policyFile, []byte(fmt.Sprintf("version: 1\nstate_dir: %s\nrules:\n  - {name: j, format: jsonl, paths: [%s], settle: 100ms, max_wait: 1s}\n", filepath.Join(home, "state"), dir)), 0o644)
	d := startDaemon(t, home, "-config", policyFile)
	eventually(t, 10*time.Second, "first scan", func() bool { return len(d.events("scan.finished")) == 1 })
	os.MkdirAll(dir, 0o755)
	os.WriteFile(filepath.Join(dir, "s.jsonl"), []byte("{\"a\":1}\n{\"a\""), 0o644)
	eventually(t, 10*time.Second, "heal in a root created after start", func() bool { return len(d.events("file.healed")) == 1 })
}

func TestDemo(t *testing.T) {
	out, errOut, code := sm(t, t.TempDir(), "demo")
	if code != 0 || !strings.Contains(out, "summary: 11 of 11 damaged sessions healed") {
		t.Fatalf("demo: exit %d\n%s\n%s", code, out, errOut)
	}
	for _, app := range []string{"copaw", "nanobot", "praisonai", "openviking", "openclaw", "claude-code", "codex", "gemini-cli", "pi", "copilot-cli", "qwen-code"} {
		if !strings.Contains(out, app) {
			t.Errorf("demo output lacks %s", app)
		}
	}
}
