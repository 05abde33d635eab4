package main

import (
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// reloadMetric is the value line of sessionmedic_config_last_reload_successful at addr.
func reloadMetric(addr string) string {
	_, body := httpGet("http://" + addr + "/metrics")
	for _, l := range strings.Split(body, "\n") {
		if strings.HasPrefix(l, "sessionmedic_config_last_reload_successful ") {
			return l
		}
	}
	return ""
}

// TestDaemonReloadRebindsHTTP: SIGHUP moves the endpoint to the new http.listen; a new
// address that cannot be bound leaves the old one serving; http.pprof turns on /debug/pprof/.
func TestDaemonReloadRebindsHTTP(t *testing.T) {
	home := t.TempDir()
	policyFile := filepath.Join(home, "policy.yaml")
	write := func(http string) {
		os.WriteFile(policyFile, []byte(fmt.Sprintf("version: 1\nstate_dir: %s\nhttp: %s\nrules:\n  - {name: j, format: jsonl, paths: [%s]}\n",
			filepath.Join(home, "state"), http, t.TempDir())), 0o644)
	}
	a1, a2 := freePort(t), freePort(t)
	write(fmt.Sprintf("{listen: %q}", a1))
	d := startDaemon(t, home, "-config", policyFile)
	eventually(t, 10*time.Second, "/readyz", func() bool { c, _ := httpGet("http://" + a1 + "/readyz"); return c == 200 })
	if c, _ := httpGet("http://" + a1 + "/debug/pprof/"); c != 404 {
		t.Fatalf("/debug/pprof/ by default: %d, want 404", c)
	}

	write(fmt.Sprintf("{listen: %q, pprof: true}", a2))
	d.cmd.Process.Signal(syscall.SIGHUP)
	eventually(t, 10*time.Second, "the new port", func() bool { c, _ := httpGet("http://" + a2 + "/healthz"); return c == 200 })
	eventually(t, 5*time.Second, "the old port to close", func() bool { c, _ := httpGet("http://" + a1 + "/healthz"); return c == 0 })
	if c, _ := httpGet("http://" + a2 + "/debug/pprof/"); c != 200 {
		t.Fatalf("/debug/pprof/ with http.pprof: true: %d", c)
	}
	if l := reloadMetric(a2); l != "sessionmedic_config_last_reload_successful 1" {
		t.Fatalf("after the move: %q", l)
	}

	busy, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer busy.Close()
	write(fmt.Sprintf("{listen: %q}", busy.Addr().String()))
	d.cmd.Process.Signal(syscall.SIGHUP)
	eventually(t, 10*time.Second, "http.error", func() bool { return len(d.events("http.error")) == 1 })
	if e := d.events("http.error")[0]; e["level"] != "WARN" || e["key"] != "http.listen" || e["err"] == nil {
		t.Fatalf("http.error: %v", e)
	}
	eventually(t, 10*time.Second, "policy.reloaded", func() bool { return len(d.events("policy.reloaded")) == 2 })
	if c, _ := httpGet("http://" + a2 + "/healthz"); c != 200 {
		t.Fatalf("the old port stopped answering: %d", c)
	}
	if l := reloadMetric(a2); l != "sessionmedic_config_last_reload_successful 0" {
		t.Fatalf("after a failed bind: %q", l)
	}
	if c, _ := httpGet("http://" + a2 + "/debug/pprof/"); c != 404 {
		t.Fatalf("/debug/pprof/ after a reload without http.pprof: %d, want 404", c)
	}
}

// TestDaemonWatchConfig: with -watch-config, a write of the policy file reloads it, and so
// does a Kubernetes ConfigMap update (a swap of the ..data symlink); a bad edit keeps the old
// policy and logs policy.invalid.
func TestDaemonWatchConfig(t *testing.T) {
	if _, errOut, code := sm(t, t.TempDir(), "run", "-watch-config"); code != exitUsage || !strings.Contains(errOut, "-watch-config needs -config") {
		t.Fatalf("-watch-config without -config: exit %d, %q", code, errOut)
	}
	for _, layout := range []string{"plain", "kubernetes"} {
		t.Run(layout, func(t *testing.T) {
			home, dir := t.TempDir(), t.TempDir()
			text := func(addr string) string {
				return fmt.Sprintf("version: 1\nstate_dir: %s\nhttp: {listen: %q}\nrules:\n  - {name: j, format: jsonl, paths: [%s]}\n",
					filepath.Join(home, "state"), addr, filepath.Join(home, "sessions"))
			}
			policyFile := filepath.Join(dir, "policy.yaml")
			write := func(s string) { os.WriteFile(policyFile, []byte(s), 0o644) }
			a1, a2 := freePort(t), freePort(t)
			if layout == "kubernetes" {
				n := 0
				write = func(s string) {
					n++
					ts := filepath.Join(dir, fmt.Sprintf("..2026_11_23_x%d", n))
					os.Mkdir(ts, 0o755)
					os.WriteFile(filepath.Join(ts, "policy.yaml"), []byte(s), 0o644)
					os.Symlink(filepath.Base(ts), filepath.Join(dir, "..data_tmp"))
					if err := os.Rename(filepath.Join(dir, "..data_tmp"), filepath.Join(dir, "..data")); err != nil {
						t.Fatal(err)
					}
				}
				write(text(a1))
				os.Symlink("..data/policy.yaml", policyFile)
			} else {
				write(text(a1))
			}
			d := startDaemon(t, home, "-config", policyFile, "-watch-config")
			eventually(t, 10*time.Second, "/readyz", func() bool { c, _ := httpGet("http://" + a1 + "/readyz"); return c == 200 })
			write(text(a2))
			eventually(t, 10*time.Second, "the new port", func() bool { c, _ := httpGet("http://" + a2 + "/healthz"); return c == 200 })
			write(strings.Replace(text(a1), "rules:", "rulez:", 1))
			eventually(t, 10*time.Second, "policy.invalid", func() bool { return len(d.events("policy.invalid")) == 1 })
			if c, _ := httpGet("http://" + a2 + "/healthz"); c != 200 || len(d.events("policy.reloaded")) != 1 {
				t.Fatalf("after a bad edit: /healthz %d, %d reloads", c, len(d.events("policy.reloaded")))
			}
			d.cmd.Process.Signal(syscall.SIGTERM)
			select {
			case err := <-d.done:
				if err != nil {
					t.Fatalf("exit after SIGTERM: %v", err)
				}
			case <-time.After(10 * time.Second):
				t.Fatal("no clean exit")
			}
		})
	}
}

// TestDaemonWatchConfigSymlinked: with -watch-config and a policy path that is a symlink in
// one directory to a file in another, the target's edits reload: written in place (truncated
// and written) and replaced as sed -i does (a temp beside it renamed over it). Pointed at a
// file in a third directory, the link reloads, and so does an in-place edit of that file; an
// edit of the old target, no longer the policy, does not.
func TestDaemonWatchConfigSymlinked(t *testing.T) {
	home := t.TempDir()
	a, b, c := t.TempDir(), t.TempDir(), t.TempDir()
	addr := freePort(t)
	text := func(n int) []byte {
		return fmt.Appendf(nil, "# edit %d\nversion: 1\nstate_dir: %s\nhttp: {listen: %q}\nrules:\n  - {name: j, format: jsonl, paths: [%s]}\n",
			n, filepath.Join(home, "state"), addr, filepath.Join(home, "sessions"))
	}
	inPlace := func(p string, n int) {
		t.Helper()
		f, err := os.OpenFile(p, os.O_WRONLY|os.O_TRUNC, 0)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := f.Write(text(n)); err != nil {
			t.Fatal(err)
		}
		if err := f.Close(); err != nil {
			t.Fatal(err)
		}
	}
	bFile, cFile, link := filepath.Join(b, "policy.yaml"), filepath.Join(c, "policy.yaml"), filepath.Join(a, "policy.yaml")
	if err := os.WriteFile(bFile, text(0), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(bFile, link); err != nil {
		t.Fatal(err)
	}
	d := startDaemon(t, home, "-config", link, "-watch-config")
	eventually(t, 10*time.Second, "/readyz", func() bool { c, _ := httpGet("http://" + addr + "/readyz"); return c == 200 })
	reloads := func(n int, after string) {
		t.Helper()
		eventually(t, 20*time.Second, fmt.Sprintf("policy.reloaded after %s", after), func() bool { return len(d.events("policy.reloaded")) >= n })
		if got := len(d.events("policy.reloaded")); got != n {
			t.Fatalf("after %s: %d reloads, want %d", after, got, n)
		}
	}

	inPlace(bFile, 1)
	reloads(1, "an in-place write of the target")

	tmp := filepath.Join(b, "sedAbC123")
	if err := os.WriteFile(tmp, text(2), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(tmp, bFile); err != nil {
		t.Fatal(err)
	}
	reloads(2, "a sed -i style replace of the target")

	if err := os.WriteFile(cFile, text(3), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(cFile, link+".new"); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(link+".new", link); err != nil {
		t.Fatal(err)
	}
	reloads(3, "the link pointed at a file in another directory")

	inPlace(cFile, 4)
	reloads(4, "an in-place write of the new target")

	// The old target is not the policy any more: its edits change nothing (a bounded wait,
	// six times the debounce).
	inPlace(bFile, 5)
	time.Sleep(3 * time.Second)
	if got := len(d.events("policy.reloaded")); got != 4 {
		t.Fatalf("an edit of the old target: %d reloads, want 4", got)
	}
	if n := len(d.events("policy.invalid")); n != 0 {
		t.Fatalf("policy.invalid: %v", d.events("policy.invalid"))
	}
}
