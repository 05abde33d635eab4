package main

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// proc is the real binary running a one-shot command.
type proc struct {
	cmd    *exec.Cmd
	stderr bytes.Buffer
	done   chan struct{}
	code   int
}

// startSM starts the binary with a private HOME and state dir; stdout goes to out (nil:
// discarded).
func startSM(t *testing.T, home string, out io.Writer, args ...string) *proc {
	t.Helper()
	p := &proc{done: make(chan struct{})}
	p.cmd = exec.Command(binary, args...)
	p.cmd.Env = []string{"HOME=" + home, "XDG_STATE_HOME=" + filepath.Join(home, "state"), "PATH=" + os.Getenv("PATH")}
	p.cmd.Stdout, p.cmd.Stderr = out, &p.stderr
	if err := p.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() {
		err := p.cmd.Wait()
		if ee, ok := err.(*exec.ExitError); ok {
			p.code = ee.ExitCode()
		} else if err != nil {
			p.code = -1
		}
		close(p.done)
	}()
	t.Cleanup(func() {
		p.cmd.Process.Kill()
		<-p.done
	})
	return p
}

// wait waits for the exit, at most within: the generous bound of "ends within a second".
func (p *proc) wait(t *testing.T, within time.Duration) int {
	t.Helper()
	select {
	case <-p.done:
		return p.code
	case <-time.After(within):
		t.Fatalf("%v still running after %v; stderr:\n%s", p.cmd.Args[1:], within, p.stderr.String())
		return 0
	}
}

// TestHostilePolicyFile: a FIFO or /dev/zero as -config is refused at once with one line,
// where the FIFO blocked for ever (even through SIGTERM) and /dev/zero grew without bound.
func TestHostilePolicyFile(t *testing.T) {
	home := t.TempDir()
	fifo := filepath.Join(t.TempDir(), "policy.fifo")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"policy", "-config", fifo}, "sessionmedic: read policy: " + fifo + ": not a regular file (a named pipe)\n"},
		{[]string{"run", "-config", fifo}, "sessionmedic: read policy: " + fifo + ": not a regular file (a named pipe)\n"},
		{[]string{"check", "-config", fifo}, "sessionmedic: read policy: " + fifo + ": not a regular file (a named pipe)\n"},
		{[]string{"policy", "-config", "/dev/zero"}, "sessionmedic: read policy: /dev/zero: not a regular file (a character device)\n"},
		{[]string{"run", "-config", "/dev/zero"}, "sessionmedic: read policy: /dev/zero: not a regular file (a character device)\n"},
	} {
		start := time.Now()
		p := startSM(t, home, nil, tc.args...)
		// Were it still blocked on the FIFO, SIGTERM must end it anyway.
		time.AfterFunc(200*time.Millisecond, func() { p.cmd.Process.Signal(syscall.SIGTERM) })
		code := p.wait(t, 5*time.Second)
		if code != exitUsage || p.stderr.String() != tc.want {
			t.Errorf("%v: exit %d, stderr %q; want exit 2, %q", tc.args, code, p.stderr.String(), tc.want)
		}
		t.Logf("%v: exit %d after %v", tc.args, code, time.Since(start).Round(time.Millisecond))
	}
}

// bigTree writes n small JSONL files, 100 to a directory.
func bigTree(t *testing.T, n int) string {
	t.Helper()
	root := filepath.Join(t.TempDir(), "tree")
	line := []byte(strings.Repeat(`{"role":"user","content":"hello"}`+"\n", 20))
	for i := 0; i < n; i++ {
		dir := filepath.Join(root, fmt.Sprintf("d%03d", i/100))
		if i%100 == 0 {
			os.MkdirAll(dir, 0o755)
		}
		if err := os.WriteFile(filepath.Join(dir, fmt.Sprintf("s%03d.jsonl", i%100)), line, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return root
}

// TestCheckStopsOnSignal interrupts `check` of a big tree. It stops taking files, prints
// what it found so far, and exits 128+signal.
func TestCheckStopsOnSignal(t *testing.T) {
	const files = 20000
	tree := bigTree(t, files)
	home := t.TempDir()

	t.Run("reader keeps up", func(t *testing.T) {
		pr, pw := io.Pipe()
		p := startSM(t, home, pw, "check", "-json", tree)
		go func() { <-p.done; pw.Close() }()
		var mu sync.Mutex
		lines := 0
		first, read := make(chan struct{}), make(chan struct{})
		go func() {
			defer close(read)
			sc := bufio.NewScanner(pr)
			for sc.Scan() {
				mu.Lock()
				if lines++; lines == 1 {
					close(first)
				}
				mu.Unlock()
			}
			io.Copy(io.Discard, pr)
		}()
		select {
		case <-first:
		case <-p.done:
			t.Fatalf("exit %d before any report: %s", p.code, p.stderr.String())
		}
		// Stopped while it inspects, so that the signal lands before the last file.
		p.cmd.Process.Signal(syscall.SIGSTOP)
		p.cmd.Process.Signal(syscall.SIGINT)
		start := time.Now()
		p.cmd.Process.Signal(syscall.SIGCONT)
		code := p.wait(t, 5*time.Second)
		took := time.Since(start)
		if code == 0 {
			t.Skipf("all %d files were checked before the signal", files)
		}
		var done, total int
		msg := p.stderr.String()
		if code != 130 || !strings.HasPrefix(msg, "sessionmedic: interrupted by SIGINT after ") ||
			strings.Count(msg, "\n") != 1 {
			t.Fatalf("exit %d, stderr %q; want 130 and one line", code, msg)
		}
		fmt.Sscanf(msg, "sessionmedic: interrupted by SIGINT after %d of %d files", &done, &total)
		<-read
		mu.Lock()
		defer mu.Unlock()
		if total != files || done >= files || lines != done {
			t.Errorf("%d of %d files reported, %d lines printed: %q", done, total, lines, msg)
		}
		t.Logf("check of %d files: exit %d %v after SIGINT, %d files reported", files, code, took.Round(time.Millisecond), done)
	})

	t.Run("nobody reads its output", func(t *testing.T) {
		// A full pipe blocks the output for ever: the grace after the signal ends it.
		pr, pw, err := os.Pipe()
		if err != nil {
			t.Fatal(err)
		}
		defer pr.Close()
		p := startSM(t, home, pw, "check", "-json", tree)
		pw.Close()
		br := bufio.NewReader(pr)
		if _, err := br.ReadString('\n'); err != nil {
			t.Fatalf("no report: %v; %s", err, p.stderr.String())
		}
		time.Sleep(100 * time.Millisecond)
		p.cmd.Process.Signal(syscall.SIGTERM)
		start := time.Now()
		code := p.wait(t, 5*time.Second)
		took := time.Since(start)
		if code != 143 || !strings.Contains(p.stderr.String(), "after SIGTERM, exiting now") {
			t.Fatalf("exit %d, stderr %q; want 143", code, p.stderr.String())
		}
		t.Logf("check blocked on its output: exit %d %v after SIGTERM", code, took.Round(time.Millisecond))
	})

	t.Run("second signal", func(t *testing.T) {
		pr, pw, err := os.Pipe()
		if err != nil {
			t.Fatal(err)
		}
		defer pr.Close()
		p := startSM(t, home, pw, "check", "-json", tree)
		pw.Close()
		if _, err := bufio.NewReader(pr).ReadString('\n'); err != nil {
			t.Fatalf("no report: %v; %s", err, p.stderr.String())
		}
		time.Sleep(100 * time.Millisecond)
		p.cmd.Process.Signal(syscall.SIGINT)
		time.Sleep(50 * time.Millisecond)
		p.cmd.Process.Signal(syscall.SIGINT)
		code := p.wait(t, 5*time.Second)
		if code != 130 || p.stderr.String() != "sessionmedic: second signal (SIGINT), exiting now\n" {
			t.Fatalf("exit %d, stderr %q", code, p.stderr.String())
		}
	})
}

// TestHealStopsOnSignal interrupts `heal` of a big damaged tree: every file is then either
// healed or left as it was, never half-written, and the journal is empty.
func TestHealStopsOnSignal(t *testing.T) {
	const files = 3000
	tree := bigTree(t, files)
	torn := []byte(strings.Repeat(`{"role":"user","content":"hello"}`+"\n", 20) + `{"role":"us`)
	filepath.Walk(tree, func(p string, fi os.FileInfo, err error) error {
		if err == nil && !fi.IsDir() {
			os.WriteFile(p, torn, 0o644)
		}
		return nil
	})
	home := t.TempDir()
	state := filepath.Join(home, "state")
	policyFile := filepath.Join(home, "policy.yaml")
	os.WriteFile(policyFile, []byte(fmt.Sprintf("version: 1\nstate_dir: %s\nrules:\n  - {name: j, format: jsonl, paths: [%s]}\n", state, tree)), 0o644)
	pr, pw := io.Pipe()
	p := startSM(t, home, pw, "heal", "-config", policyFile, "-json")
	go func() { <-p.done; pw.Close() }()
	first := make(chan struct{})
	go func() {
		br := bufio.NewReader(pr)
		br.ReadString('\n')
		close(first)
		io.Copy(io.Discard, br)
	}()
	select {
	case <-first:
	case <-p.done:
		t.Fatalf("exit %d before any report: %s", p.code, p.stderr.String())
	}
	p.cmd.Process.Signal(syscall.SIGTERM)
	start := time.Now()
	code := p.wait(t, 5*time.Second)
	took := time.Since(start)
	if code == 1 || code == 0 {
		t.Skipf("all %d files were healed before the signal", files)
	}
	// Before the last line: the heals' own log lines (file.healed).
	lines := strings.Split(strings.TrimSuffix(p.stderr.String(), "\n"), "\n")
	last := lines[len(lines)-1]
	if code != 143 || !strings.HasPrefix(last, "sessionmedic: interrupted by SIGTERM after ") {
		t.Fatalf("exit %d, last line of stderr %q; want 143", code, last)
	}
	healed := 0
	filepath.Walk(tree, func(path string, fi os.FileInfo, err error) error {
		if err != nil || fi.IsDir() {
			return nil
		}
		b, _ := os.ReadFile(path)
		switch {
		case bytes.Equal(b, torn):
		case bytes.Equal(b, torn[:bytes.LastIndexByte(torn, '\n')+1]):
			healed++
		default:
			t.Errorf("%s is neither the original nor the healed file: %q", path, b)
		}
		return nil
	})
	if left, _ := filepath.Glob(filepath.Join(state, "journal", "*")); len(left) > 0 {
		t.Errorf("journal entries left: %v", left)
	}
	if healed == 0 || healed == files {
		t.Errorf("%d of %d files healed", healed, files)
	}
	t.Logf("heal of %d files: exit %d %v after SIGTERM, %d healed", files, code, took.Round(time.Millisecond), healed)
}
