//go:build linux

package security

import (
	"bufio"
	"context"
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

// daemon is `sessionmedic run` as root, its JSON log lines collected.
type daemon struct {
	cmd  *exec.Cmd
	mu   sync.Mutex
	log  []map[string]any
	seen chan struct{}
}

func startDaemon(t *testing.T, policy string) *daemon {
	t.Helper()
	d := &daemon{seen: make(chan struct{}, 1)}
	d.cmd = exec.Command(binary, "run", "-config", policy)
	d.cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	stderr, _ := d.cmd.StderrPipe()
	if err := d.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() {
		sc := bufio.NewScanner(stderr)
		sc.Buffer(nil, 1<<20)
		for sc.Scan() {
			var m map[string]any
			if json.Unmarshal(sc.Bytes(), &m) == nil {
				d.mu.Lock()
				d.log = append(d.log, m)
				d.mu.Unlock()
				select {
				case d.seen <- struct{}{}:
				default:
				}
			}
		}
	}()
	t.Cleanup(func() { d.cmd.Process.Signal(syscall.SIGTERM); d.cmd.Wait() })
	return d
}

// wait waits for a log line with msg (and the fields of want), up to a minute.
func (d *daemon) wait(t *testing.T, msg string) map[string]any {
	t.Helper()
	deadline := time.After(time.Minute)
	for {
		d.mu.Lock()
		for _, m := range d.log {
			if m["msg"] == msg {
				d.mu.Unlock()
				return m
			}
		}
		d.mu.Unlock()
		select {
		case <-d.seen:
		case <-time.After(100 * time.Millisecond):
		case <-deadline:
			t.Fatalf("no %s line within a minute", msg)
		}
	}
}

func freePort(t *testing.T) string {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().String()
}

func openFDs(pid int) int {
	ents, _ := os.ReadDir(fmt.Sprintf("/proc/%d/fd", pid))
	return len(ents)
}

// Anyone who reaches the metrics port opens 500 connections and sends nothing: the daemon's
// descriptors stay bounded, /metrics still answers, and a damaged file is still healed.
func TestIdleConnectionsCannotExhaustTheDaemon(t *testing.T) {
	needRoot(t)
	s := newStage(t, "")
	addr := freePort(t)
	b, _ := os.ReadFile(s.policy)
	write(t, s.policy, strings.Replace(string(b), "rules:", fmt.Sprintf("http: {listen: %q}\nrules:", addr), 1), 0o644, 0)
	d := startDaemon(t, s.policy)
	d.wait(t, "http.listening")
	d.wait(t, "scan.finished")
	base := openFDs(d.cmd.Process.Pid)
	var conns []net.Conn
	for range 500 {
		c, err := net.Dial("tcp", addr)
		if err != nil {
			break
		}
		conns = append(conns, c)
	}
	defer func() {
		for _, c := range conns {
			c.Close()
		}
	}()
	resp, err := (&http.Client{Timeout: 30 * time.Second}).Get("http://" + addr + "/metrics")
	if err != nil {
		t.Fatalf("/metrics under a flood of idle connections: %v", err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if !strings.Contains(string(body), "sessionmedic_files_checked_total") {
		t.Fatalf("/metrics: %.200s", body)
	}
	if n := openFDs(d.cmd.Process.Pid); n > base+70 {
		t.Errorf("%d descriptors open with 500 idle connections (%d before): not bounded", n, base)
	}
	write(t, filepath.Join(s.tree, "late.jsonl"), torn, 0o644, attackerUID)
	d.wait(t, "file.healed")
}

// The attacker makes many directories: the daemon watches at most watch_budget of them, says
// so once per directory, and finds the files of the others by its rescans.
func TestDirectoryFloodStaysWithinTheWatchBudget(t *testing.T) {
	needRoot(t)
	s := newStage(t, "")
	b, _ := os.ReadFile(s.policy)
	addr := freePort(t)
	write(t, s.policy, strings.Replace(string(b), "rules:", fmt.Sprintf("watch_budget: 8\nhttp: {listen: %q}\nrules:", addr), 1), 0o644, 0)
	for i := range 40 {
		mkdir(t, filepath.Join(s.tree, fmt.Sprintf("d%02d", i)), 0o755, attackerUID)
	}
	write(t, filepath.Join(s.tree, "d39", "s.jsonl"), torn, 0o644, attackerUID)
	d := startDaemon(t, s.policy)
	ev := d.wait(t, "watch.budget_exhausted")
	if ev["budget"] != float64(8) {
		t.Errorf("watch.budget_exhausted: %v", ev)
	}
	d.wait(t, "file.healed")
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, "GET", "http://"+addr+"/metrics", nil)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	for _, l := range strings.Split(string(body), "\n") {
		var n float64
		if _, err := fmt.Sscanf(l, "sessionmedic_watched_directories %g", &n); err == nil && n > 8 {
			t.Errorf("%g directories watched, budget 8", n)
		}
	}
}
