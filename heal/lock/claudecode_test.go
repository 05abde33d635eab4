package lock

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

const claudeSID = "7c2e1b4a-9d3f-4e8a-b6c1-2f5a8d9e0b13"

// claudeCfg is a config dir with an empty registry.
func claudeCfg(t *testing.T) string {
	t.Helper()
	cfg := t.TempDir()
	if err := os.Mkdir(filepath.Join(cfg, "sessions"), 0o700); err != nil {
		t.Fatal(err)
	}
	return cfg
}

// claudeEntryBody is a registry entry as Claude writes one (compact, no trailing newline).
func claudeEntryBody(pid int, sid, procStart, domain string) string {
	b := `{"pid":` + strconv.Itoa(pid) + `,"sessionId":"` + sid + `","cwd":"/tmp/demo/proj","startedAt":1795383639980`
	if procStart != "" {
		b += `,"procStart":"` + procStart + `"`
	}
	b += `,"version":"2.1.330","kind":"interactive"`
	if domain != "" {
		b += `,"pidDomain":` + strconv.Quote(domain)
	}
	return b + `,"status":"idle"}`
}

func putEntry(t *testing.T, cfg string, pid int, body string) string {
	t.Helper()
	p := filepath.Join(cfg, "sessions", strconv.Itoa(pid)+".json")
	if err := os.WriteFile(p, []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

func onlyLinux(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("process start times and pid domains are Linux's")
	}
}

func TestClaudeNoRegistryNoEntry(t *testing.T) {
	live, _, err := ClaudeSessionLive(t.TempDir(), claudeSID)
	if err != nil || live {
		t.Fatalf("no registry: live=%v err=%v", live, err)
	}
	cfg := claudeCfg(t)
	putEntry(t, cfg, os.Getpid(), claudeEntryBody(os.Getpid(), "another-session", "", ""))
	if err := ClaudeCode(context.Background(), cfg, claudeSID, Options{}); err != nil {
		t.Fatalf("an entry of another session: %v", err)
	}
}

func TestClaudeLiveEntries(t *testing.T) {
	onlyLinux(t)
	pid, start := liveChild(t)
	st := strconv.FormatUint(start, 10)
	ours := PIDDomain()
	if ours == "" {
		t.Skip("no pid domain here (no /etc/machine-id)")
	}
	for name, tc := range map[string]struct {
		body string
		live bool
	}{
		"running, same start, our domain":   {claudeEntryBody(pid, claudeSID, st, ours), true},
		"running, no domain recorded":       {claudeEntryBody(pid, claudeSID, st, ""), true},
		"running, no start recorded":        {claudeEntryBody(pid, claudeSID, "", ours), true},
		"pid reused (another start time)":   {claudeEntryBody(pid, claudeSID, strconv.FormatUint(start+7, 10), ours), false},
		"another pid domain":                {claudeEntryBody(pid, claudeSID, strconv.FormatUint(start+7, 10), "linux:0123456789abcdef0123456789abcdef:pid:[4026531836]"), true},
		"another session":                   {claudeEntryBody(pid, "another", st, ours), false},
		"rewritten in place, old tail left": {claudeEntryBody(pid, claudeSID, st, ours) + `ld","statusUpdatedAt":1}`, true},
		"cut short, names the session":      {claudeEntryBody(pid, claudeSID, st, ours)[:90], true},
		"cut short before the session id":   {claudeEntryBody(pid, claudeSID, st, ours)[:20], false},
	} {
		t.Run(name, func(t *testing.T) {
			cfg := claudeCfg(t)
			p := putEntry(t, cfg, pid, tc.body)
			fi, _ := os.Stat(p)
			live, holder, err := ClaudeSessionLive(cfg, claudeSID)
			if err != nil || live != tc.live {
				t.Fatalf("live=%v (%s) err=%v, want %v", live, holder, err, tc.live)
			}
			if b, _ := os.ReadFile(p); string(b) != tc.body {
				t.Error("the entry was changed")
			}
			if fi2, _ := os.Stat(p); !fi2.ModTime().Equal(fi.ModTime()) {
				t.Error("the entry was touched")
			}
		})
	}
}

func TestClaudeDeadAndZombieProcesses(t *testing.T) {
	onlyLinux(t)
	cfg := claudeCfg(t)
	// A pid above the kernel's pid_max never runs.
	b, err := os.ReadFile("/proc/sys/kernel/pid_max")
	if err != nil {
		t.Skip(err)
	}
	max, _ := strconv.Atoi(strings.TrimSpace(string(b)))
	putEntry(t, cfg, max+1, claudeEntryBody(max+1, claudeSID, "1", PIDDomain()))
	if live, holder, err := ClaudeSessionLive(cfg, claudeSID); live || err != nil {
		t.Fatalf("dead pid: live (%s) err=%v", holder, err)
	}

	cmd := helperCmd("exit", "")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer cmd.Wait()
	zpid := cmd.Process.Pid
	zst, _ := procStartTime(zpid)
	deadline := time.Now().Add(10 * time.Second)
	for !procZombie(zpid) {
		if time.Now().After(deadline) {
			t.Fatal("child never became a zombie")
		}
		time.Sleep(5 * time.Millisecond)
	}
	putEntry(t, cfg, zpid, claudeEntryBody(zpid, claudeSID, strconv.FormatUint(zst, 10), PIDDomain()))
	if live, holder, err := ClaudeSessionLive(cfg, claudeSID); live || err != nil {
		t.Fatalf("zombie: live (%s) err=%v", holder, err)
	}
}

func TestClaudeCodeBusyWaitsAndHonoursContext(t *testing.T) {
	cfg := claudeCfg(t)
	start, _ := procStartTime(os.Getpid())
	putEntry(t, cfg, os.Getpid(), claudeEntryBody(os.Getpid(), claudeSID, strconv.FormatUint(start, 10), PIDDomain()))
	t0 := time.Now()
	err := ClaudeCode(context.Background(), cfg, claudeSID, Options{Wait: 150 * time.Millisecond, Poll: 20 * time.Millisecond})
	if !errors.Is(err, ErrBusy) {
		t.Fatalf("our own live entry: %v, want ErrBusy", err)
	}
	if d := time.Since(t0); d < 150*time.Millisecond {
		t.Errorf("busy after %v, before the wait was over", d)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	if err := ClaudeCode(ctx, cfg, claudeSID, Options{Wait: 10 * time.Second}); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("cancelled wait: %v", err)
	}
	// The entry goes away while we wait (the process exited): no longer busy.
	go func() {
		time.Sleep(60 * time.Millisecond)
		os.Remove(filepath.Join(cfg, "sessions", strconv.Itoa(os.Getpid())+".json"))
	}()
	if err := ClaudeCode(context.Background(), cfg, claudeSID, Options{Wait: 5 * time.Second, Poll: 10 * time.Millisecond}); err != nil {
		t.Fatalf("after the entry went away: %v", err)
	}
}

// Names of the registry that are not regular files are not entries: a link is not followed,
// a FIFO is not opened for reading (it would block), a directory is not read.
func TestClaudeRegistryIgnoresNonEntries(t *testing.T) {
	cfg := claudeCfg(t)
	sessions := filepath.Join(cfg, "sessions")
	target := filepath.Join(t.TempDir(), "elsewhere.json")
	start, _ := procStartTime(os.Getpid())
	os.WriteFile(target, []byte(claudeEntryBody(os.Getpid(), claudeSID, strconv.FormatUint(start, 10), PIDDomain())), 0o600)
	if err := os.Symlink(target, filepath.Join(sessions, "1.json")); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Mkfifo(filepath.Join(sessions, "2.json"), 0o600); err != nil {
		t.Fatal(err)
	}
	os.Mkdir(filepath.Join(sessions, "3.json"), 0o700)
	os.WriteFile(filepath.Join(sessions, ".fleetview-heartbeat"), nil, 0o600)
	done := make(chan struct{})
	go func() {
		defer close(done)
		if live, holder, err := ClaudeSessionLive(cfg, claudeSID); live || err != nil {
			t.Errorf("non-entries: live (%s) err=%v", holder, err)
		}
	}()
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		t.Fatal("reading the registry blocked")
	}
}

// A registry entry of a huge size is read bounded: a session id beyond the first 64 KiB is
// not seen.
func TestClaudeEntryReadBounded(t *testing.T) {
	cfg := claudeCfg(t)
	body := `{"pad":"` + strings.Repeat("x", maxClaudeEntry) + `","sessionId":"` + claudeSID + `","pid":1}`
	putEntry(t, cfg, 1, body)
	if live, holder, err := ClaudeSessionLive(cfg, claudeSID); live || err != nil {
		t.Fatalf("oversized entry: live (%s) err=%v", holder, err)
	}
}
