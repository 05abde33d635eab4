package lock

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"testing"
	"time"
)

func TestGeminiArgv(t *testing.T) {
	for _, c := range []struct {
		argv []string
		want bool
	}{
		{[]string{"gemini"}, true},
		{[]string{"/usr/local/bin/gemini", "--resume", "x"}, true},
		{[]string{"node", "/usr/local/bin/gemini", "-p", "hi"}, true},
		{[]string{"node", "/usr/lib/node_modules/@google/gemini-cli/dist/index.js"}, true},
		{[]string{"node", "server.js"}, false},
		{[]string{"vim", "gemini.md"}, false},
		{[]string{"gemini-helper"}, false},
		{nil, false},
	} {
		if got := GeminiArgv(c.argv); got != c.want {
			t.Errorf("GeminiArgv(%q) = %v, want %v", c.argv, got, c.want)
		}
	}
}

// startGemini runs a copy of sleep named gemini in dir.
func startGemini(t *testing.T, dir string) *exec.Cmd {
	t.Helper()
	src, err := exec.LookPath("sleep")
	if err != nil {
		t.Skip("no sleep binary")
	}
	b, err := os.ReadFile(src)
	if err != nil {
		t.Skip(err)
	}
	bin := filepath.Join(t.TempDir(), "gemini")
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

func TestGeminiLiveWithARealProcess(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("liveness needs /proc")
	}
	root := t.TempDir()
	other := t.TempDir()
	if GeminiLive(root) {
		t.Fatal("live before any Gemini process runs")
	}
	cmd := startGemini(t, root)
	deadline := time.Now().Add(5 * time.Second)
	for !GeminiLive(root) {
		if time.Now().After(deadline) {
			t.Fatal("a Gemini process working in the root is not seen")
		}
		time.Sleep(10 * time.Millisecond)
	}
	if GeminiLive(other) {
		t.Error("a project the process does not work in is live")
	}
	start := time.Now()
	err := Gemini(context.Background(), root, Options{Wait: 150 * time.Millisecond, Poll: 20 * time.Millisecond})
	if !errors.Is(err, ErrBusy) {
		t.Fatalf("live project: %v, want ErrBusy", err)
	}
	if d := time.Since(start); d < 150*time.Millisecond {
		t.Errorf("gave up after %v, before the wait", d)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := Gemini(ctx, root, Options{Wait: time.Second}); !errors.Is(err, context.Canceled) {
		t.Errorf("cancelled: %v", err)
	}
	if err := Gemini(context.Background(), other, Options{}); err != nil {
		t.Errorf("free project: %v", err)
	}

	cmd.Process.Kill()
	cmd.Wait()
	if GeminiLive(root) {
		t.Error("still live after the process ended")
	}
	if err := Gemini(context.Background(), root, Options{Wait: 100 * time.Millisecond}); err != nil {
		t.Errorf("after the process ended: %v", err)
	}
}

func TestGeminiLiveRejectsRelativeRoots(t *testing.T) {
	if GeminiLive("") || GeminiLive("proj") {
		t.Error("a relative or empty root is never live")
	}
}
