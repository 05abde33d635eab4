package lock

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// The test binary re-executes itself as a helper process when this variable
// names a mode; the lock path comes from helperPathEnv.
const (
	helperModeEnv = "SESSIONMEDIC_LOCK_TEST_HELPER"
	helperPathEnv = "SESSIONMEDIC_LOCK_TEST_PATH"
)

func TestMain(m *testing.M) {
	if mode := os.Getenv(helperModeEnv); mode != "" {
		os.Exit(runHelper(mode, os.Getenv(helperPathEnv)))
	}
	os.Exit(m.Run())
}

// runHelper implements the helper modes:
//
//	flock-hold      open path (O_RDWR|O_CREAT|O_TRUNC, as filelock does),
//	                flock(LOCK_EX), print "locked", wait for a line on stdin,
//	                then LOCK_UN, close and print "released".
//	flock-hold-unlink  as flock-hold, but unlink the path before LOCK_UN, as
//	                current tox-dev filelock does on release.
//	flock-try       open path O_RDWR, flock(LOCK_EX|LOCK_NB), print "busy",
//	                "free" or "missing".
//	wait            print "ready" and block until stdin is closed.
//	exit            exit at once.
func runHelper(mode, path string) int {
	switch mode {
	case "flock-hold", "flock-hold-unlink":
		fd, err := unix.Open(path, unix.O_RDWR|unix.O_CREAT|unix.O_TRUNC|unix.O_CLOEXEC, 0o644)
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 2
		}
		if err := unix.Flock(fd, unix.LOCK_EX); err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 2
		}
		fmt.Println("locked")
		_, _ = bufio.NewReader(os.Stdin).ReadString('\n')
		if mode == "flock-hold-unlink" {
			_ = unix.Unlink(path)
		}
		_ = unix.Flock(fd, unix.LOCK_UN)
		_ = unix.Close(fd)
		fmt.Println("released")
		return 0
	case "flock-try":
		fd, err := unix.Open(path, unix.O_RDWR|unix.O_CLOEXEC, 0)
		if err != nil {
			fmt.Println("missing")
			return 0
		}
		if err := unix.Flock(fd, unix.LOCK_EX|unix.LOCK_NB); err != nil {
			fmt.Println("busy")
			return 0
		}
		fmt.Println("free")
		return 0
	case "wait":
		fmt.Println("ready")
		_, _ = io.Copy(io.Discard, os.Stdin)
		return 0
	case "exit":
		return 0
	}
	fmt.Fprintln(os.Stderr, "unknown helper mode", mode)
	return 2
}

// helper is a running helper process.
type helper struct {
	t      *testing.T
	cmd    *exec.Cmd
	stdin  io.WriteCloser
	stdout *bufio.Reader
	waited bool
}

func helperCmd(mode, path string) *exec.Cmd {
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	// GORACE: a -race binary otherwise sleeps 1 s at exit.
	cmd.Env = append(os.Environ(), helperModeEnv+"="+mode, helperPathEnv+"="+path,
		"GORACE=atexit_sleep_ms=0")
	cmd.Stderr = os.Stderr
	return cmd
}

// startHelper starts a helper and waits for its first output line, which
// must be want.
func startHelper(t *testing.T, mode, path, want string) *helper {
	t.Helper()
	cmd := helperCmd(mode, path)
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	h := &helper{t: t, cmd: cmd, stdin: stdin, stdout: bufio.NewReader(out)}
	t.Cleanup(func() {
		if !h.waited {
			_ = h.cmd.Process.Kill()
			_ = h.cmd.Wait()
		}
	})
	if got := h.line(); got != want {
		t.Fatalf("helper %s: got %q, want %q", mode, got, want)
	}
	return h
}

func (h *helper) line() string {
	h.t.Helper()
	type res struct {
		s   string
		err error
	}
	ch := make(chan res, 1)
	go func() {
		s, err := h.stdout.ReadString('\n')
		ch <- res{s, err}
	}()
	select {
	case r := <-ch:
		if r.err != nil && r.s == "" {
			h.t.Fatalf("helper output: %v", r.err)
		}
		return strings.TrimSpace(r.s)
	case <-time.After(10 * time.Second):
		h.t.Fatal("helper did not answer")
		return ""
	}
}

// release tells a flock-hold helper to release, and waits until it did.
func (h *helper) release() {
	h.t.Helper()
	if _, err := io.WriteString(h.stdin, "go\n"); err != nil {
		h.t.Fatal(err)
	}
	if got := h.line(); got != "released" {
		h.t.Fatalf("helper: got %q, want released", got)
	}
	h.wait()
}

// wait closes stdin and reaps the helper.
func (h *helper) wait() {
	h.t.Helper()
	_ = h.stdin.Close()
	if err := h.cmd.Wait(); err != nil {
		h.t.Fatalf("helper: %v", err)
	}
	h.waited = true
}

// tryFlockFromOutside reports what another process sees on path: "busy",
// "free" or "missing".
func tryFlockFromOutside(t *testing.T, path string) string {
	t.Helper()
	out, err := helperCmd("flock-try", path).Output()
	if err != nil {
		t.Fatal(err)
	}
	return strings.TrimSpace(string(out))
}
