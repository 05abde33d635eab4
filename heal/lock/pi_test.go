package lock

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"syscall"
	"testing"
	"time"
)

func TestPiArgv(t *testing.T) {
	for _, c := range []struct {
		argv []string
		want bool
	}{
		{[]string{"pi"}, true}, // the process title pi sets: its arguments are gone
		{[]string{"pi", "", "", ""}, true},
		{[]string{"/usr/local/bin/pi", "--session", "x.jsonl"}, true},
		{[]string{"node", "/usr/local/bin/pi", "-p", "hi"}, true},
		{[]string{"node", "--max-old-space-size=4096", "/usr/local/bin/pi"}, true},
		{[]string{"node", "/opt/app/node_modules/@mariozechner/pi-coding-agent/dist/cli.js", "-p"}, true},
		{[]string{"tsx", "/src/node_modules/@earendil-works/pi-coding-agent/src/cli.ts"}, true},
		{[]string{"bun", "pi"}, true},
		{[]string{"node", "server.js", "pi"}, false},
		{[]string{"vim", "pi"}, false},
		{[]string{"pip", "install"}, false},
		{[]string{"pi-helper"}, false},
		{nil, false},
	} {
		if got := PiArgv(c.argv); got != c.want {
			t.Errorf("PiArgv(%q) = %v, want %v", c.argv, got, c.want)
		}
	}
}

func TestPiNamesSession(t *testing.T) {
	s := AppSession{
		Path: "/h/.pi/agent/sessions/--tmp-p--/2026-11-24T23-24-56-267Z_01a20fe0-6e4b-74a6-a8ea-61958601a7c1.jsonl",
		ID:   "01a20fe0-6e4b-74a6-a8ea-61958601a7c1",
	}
	for _, c := range []struct {
		argv []string
		cwd  string
		want bool
	}{
		{[]string{"pi", "--session", s.Path}, "/", true},
		{[]string{"pi", "--session=" + s.Path}, "/", true},
		{[]string{"pi", "--session", "sessions/--tmp-p--/" + filepath.Base(s.Path)}, "/h/.pi/agent", true},
		{[]string{"pi", "--session", "../x/" + filepath.Base(s.Path)}, "/elsewhere", true}, // the name holds the id
		{[]string{"pi", "--session", "01a20fe0-6e4b"}, "/", true},                          // a partial id
		{[]string{"pi", "--session", s.ID}, "/", true},
		{[]string{"pi", "--session", "01a2"}, "/", false}, // too short to tell
		{[]string{"pi", "--session", "/h/other.jsonl"}, "/", false},
		{[]string{"pi", "-p", "hello"}, "/tmp/p", false},
		{[]string{s.Path}, "/", false}, // argv[0] is the program
	} {
		if got := PiNamesSession(c.argv, c.cwd, s); got != c.want {
			t.Errorf("PiNamesSession(%q, %q) = %v, want %v", c.argv, c.cwd, got, c.want)
		}
	}
}

func TestPiWorksIn(t *testing.T) {
	s := AppSession{Path: "/x.jsonl", Cwd: "/tmp/demo/proj"}
	for _, c := range []struct {
		dir, resolved string
		want          bool
	}{
		{"/tmp/demo/proj", "", true},
		{"/real/proj", "/real/proj", true},
		{"/tmp/demo", "", false},
		{"/tmp/demo/proj/sub", "", false},
		{"", "", false},
	} {
		if got := PiWorksIn(c.dir, s, c.resolved); got != c.want {
			t.Errorf("PiWorksIn(%q, %q) = %v, want %v", c.dir, c.resolved, got, c.want)
		}
	}
	if PiWorksIn("/tmp/demo/proj", AppSession{Path: "/x.jsonl"}, "") {
		t.Error("a session of unknown cwd matched a directory")
	}
}

// procHolds sees this test process holding a file open, and no longer once it is closed.
func TestProcHoldsOwnFile(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("descriptors are read through /proc")
	}
	p := filepath.Join(t.TempDir(), "s.jsonl")
	if err := os.WriteFile(p, []byte("{}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	var st syscall.Stat_t
	if err := syscall.Stat(p, &st); err != nil {
		t.Fatal(err)
	}
	if procHolds(os.Getpid(), uint64(st.Dev), st.Ino) {
		t.Fatal("held before it is opened")
	}
	f, err := os.OpenFile(p, os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	if !procHolds(os.Getpid(), uint64(st.Dev), st.Ino) {
		t.Error("an open descriptor is not seen")
	}
	f.Close()
	if procHolds(os.Getpid(), uint64(st.Dev), st.Ino) {
		t.Error("still held after it is closed")
	}
	if procHolds(-1, uint64(st.Dev), st.Ino) {
		t.Error("a pid that does not exist holds the file")
	}
}

// startPi runs a copy of sleep named pi in dir.
func startPi(t *testing.T, dir string) *exec.Cmd {
	t.Helper()
	src, err := exec.LookPath("sleep")
	if err != nil {
		t.Skip("no sleep binary")
	}
	b, err := os.ReadFile(src)
	if err != nil {
		t.Skip(err)
	}
	bin := filepath.Join(t.TempDir(), "pi")
	if err := os.WriteFile(bin, b, 0o755); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(bin, "60")
	cmd.Dir = dir
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	return cmd
}

func TestPiLiveWithARealProcess(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("liveness needs /proc")
	}
	cwd, other := t.TempDir(), t.TempDir()
	path := filepath.Join(t.TempDir(), "2026-11-24T23-24-56-267Z_01a20fe0-6e4b-74a6-a8ea-61958601a7c1.jsonl")
	s := AppSession{Path: path, ID: "01a20fe0-6e4b-74a6-a8ea-61958601a7c1", Cwd: cwd}
	if live, why := PiLive(s); live {
		t.Fatalf("live before any pi process runs: %s", why)
	}
	cmd := startPi(t, cwd)
	// Wait for the child to have exec'd (its command line is pi's), not for a time.
	deadline := time.Now().Add(10 * time.Second)
	for live, _ := PiLive(s); !live; live, _ = PiLive(s) {
		if time.Now().After(deadline) {
			t.Fatal("a pi process working in the session's cwd is not seen")
		}
		time.Sleep(5 * time.Millisecond)
	}
	if live, why := PiLive(AppSession{Path: path, ID: s.ID, Cwd: other}); live {
		t.Errorf("a session whose cwd no pi process works in is live: %s", why)
	}
	if live, _ := PiLive(AppSession{Path: "relative.jsonl", Cwd: cwd}); live {
		t.Error("a relative path is live")
	}
	err := Pi(context.Background(), s, Options{})
	if !errors.Is(err, ErrBusy) {
		t.Fatalf("live session: %v, want ErrBusy", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := Pi(ctx, s, Options{Wait: time.Second}); !errors.Is(err, context.Canceled) {
		t.Errorf("cancelled: %v", err)
	}
	if err := Pi(context.Background(), AppSession{Path: path, Cwd: other}, Options{}); err != nil {
		t.Errorf("free session: %v", err)
	}

	cmd.Process.Kill()
	cmd.Wait()
	if live, why := PiLive(s); live {
		t.Errorf("still live after the process ended: %s", why)
	}
	if err := Pi(context.Background(), s, Options{}); err != nil {
		t.Errorf("after the process ended: %v", err)
	}
}
