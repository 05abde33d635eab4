package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestOneDaemonPerStateDir: a second `run` on the same state_dir exits 2 at once, naming the
// first one's pid; once the first is killed (even with SIGKILL) the next one starts.
func TestOneDaemonPerStateDir(t *testing.T) {
	home := t.TempDir()
	state := filepath.Join(home, "state")
	policyFile := stateDirPolicy(t, state, "")
	first := startDaemon(t, home, "-config", policyFile)
	eventually(t, 10*time.Second, "the first daemon ready", func() bool { return len(first.events("scan.finished")) == 1 })
	pid := first.cmd.Process.Pid
	if b, _ := os.ReadFile(filepath.Join(state, "lock")); strings.TrimSpace(string(b)) != strconv.Itoa(pid) {
		t.Errorf("state_dir/lock holds %q, want the pid %d", b, pid)
	}

	start := time.Now()
	m := fatalLine(t, home, exitUsage, "-log-format", "json", "-config", policyFile)
	want := fmt.Sprintf("another sessionmedic (pid %d) is running on state_dir %s", pid, state)
	if m["err"] != want {
		t.Errorf("err %q, want %q", m["err"], want)
	}
	_, errOut, code := sm(t, home, "run", "-log-format", "text", "-config", policyFile)
	if code != exitUsage || errOut != "sessionmedic: "+want+"\n" {
		t.Errorf("as text: exit %d, stderr %q", code, errOut)
	}
	t.Logf("the second run refused in %v", time.Since(start).Round(time.Millisecond))

	first.cmd.Process.Signal(syscall.SIGKILL)
	<-first.done
	next := startDaemon(t, home, "-config", policyFile)
	eventually(t, 10*time.Second, "a daemon ready after the first was killed", func() bool { return len(next.events("scan.finished")) == 1 })
	next.cmd.Process.Signal(syscall.SIGTERM)
	sent := time.Now()
	select {
	case err := <-next.done:
		if err != nil {
			t.Fatalf("exit after SIGTERM: %v", err)
		}
		t.Logf("run: exit 0 %v after SIGTERM", time.Since(sent).Round(time.Millisecond))
	case <-time.After(10 * time.Second):
		t.Fatal("no exit within 10s of SIGTERM")
	}
	if st := next.events("sessionmedic.stopping"); len(st) != 1 || st[0]["reason"] != "interrupted by SIGTERM" {
		t.Errorf("sessionmedic.stopping events: %v", st)
	}
}

// TestReloadKeepsStateDir: a reload that moves state_dir is refused (policy.invalid): the
// daemon holds the old one's lock, and the running policy stays.
func TestReloadKeepsStateDir(t *testing.T) {
	home := t.TempDir()
	state := filepath.Join(home, "state")
	dir := t.TempDir()
	p := filepath.Join(dir, "s.jsonl")
	os.WriteFile(p, []byte("{\"a\":1}\n"), 0o644)
	policyFile := filepath.Join(home, "policy.yaml")
	rule := fmt.Sprintf("rules:\n  - {name: j, format: jsonl, paths: [%s], settle: 100ms, max_wait: 1s}\n", dir)
	os.WriteFile(policyFile, []byte("version: 1\nstate_dir: "+state+"\n"+rule), 0o644)
	d := startDaemon(t, home, "-config", policyFile)
	eventually(t, 10*time.Second, "first scan", func() bool { return len(d.events("scan.finished")) == 1 })

	moved := filepath.Join(home, "elsewhere")
	os.WriteFile(policyFile, []byte("version: 1\nstate_dir: "+moved+"\n"+rule), 0o644)
	d.cmd.Process.Signal(syscall.SIGHUP)
	eventually(t, 10*time.Second, "policy.invalid", func() bool { return len(d.events("policy.invalid")) == 1 })
	want := fmt.Sprintf("state_dir changed from %s to %s: a reload keeps the state directory; restart to move it", state, moved)
	if e := d.events("policy.invalid")[0]; e["err"] != want {
		t.Errorf("policy.invalid err %q, want %q", e["err"], want)
	}
	os.WriteFile(p, []byte("{\"a\":1}\n{\"a\""), 0o644)
	eventually(t, 10*time.Second, "heal under the running policy", func() bool { return len(d.events("file.healed")) == 1 })
	if q, _ := d.events("file.healed")[0]["quarantine"].(string); !strings.HasPrefix(q, state+"/") {
		t.Errorf("quarantined in %q, not below the running state_dir %s", q, state)
	}
	if _, err := os.Stat(moved); err == nil {
		t.Errorf("the refused state_dir %s was created", moved)
	}
}
