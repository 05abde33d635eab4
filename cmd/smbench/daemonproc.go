package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"strconv"
	"sync"
	"syscall"
	"time"
)

// logEvent is one JSON log line of the daemon, stamped when it arrived.
type logEvent struct {
	At     time.Time
	Msg    string
	Level  string
	Fields map[string]any
}

func (e logEvent) str(k string) string {
	s, _ := e.Fields[k].(string)
	return s
}

// daemonProc is a running `sessionmedic run`.
type daemonProc struct {
	cmd    *exec.Cmd
	done   chan struct{} // closed when the log reader finished (the process closed stderr)
	tail   *tailBuffer
	mu     sync.Mutex
	counts map[string]int
	exited chan struct{}
	waitEr error
}

// startDaemon starts the daemon on a policy; onEvent is called from the log reader for every
// event, in order, as soon as its line arrives.
func startDaemon(bin, policyPath string, env []string, onEvent func(logEvent)) (*daemonProc, error) {
	cmd := exec.Command(bin, "run", "-config", policyPath, "-log-format", "json", "-log-level", "info")
	cmd.Env = env
	cmd.Dir = filepath.Dir(policyPath)
	cmd.Stdout = io.Discard
	stderr, err := cmd.StderrPipe()
	if err != nil {
		return nil, err
	}
	d := &daemonProc{cmd: cmd, done: make(chan struct{}), tail: &tailBuffer{}, counts: map[string]int{}, exited: make(chan struct{})}
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	go func() {
		defer close(d.done)
		sc := bufio.NewScanner(stderr)
		sc.Buffer(make([]byte, 64<<10), 4<<20)
		for sc.Scan() {
			at := time.Now()
			line := sc.Bytes()
			var m map[string]any
			if json.Unmarshal(line, &m) != nil {
				d.tail.add(string(line))
				continue
			}
			ev := logEvent{At: at, Fields: m}
			ev.Msg, _ = m["msg"].(string)
			ev.Level, _ = m["level"].(string)
			d.mu.Lock()
			d.counts[ev.Msg]++
			d.mu.Unlock()
			if ev.Level == "ERROR" || ev.Msg == "sessionmedic.stopping" {
				d.tail.add(string(line))
			}
			if onEvent != nil {
				onEvent(ev)
			}
		}
		io.Copy(io.Discard, stderr)
	}()
	go func() {
		<-d.done
		d.waitEr = cmd.Wait()
		close(d.exited)
	}()
	return d, nil
}

func (d *daemonProc) pid() int { return d.cmd.Process.Pid }

func (d *daemonProc) count(msg string) int {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.counts[msg]
}

func (d *daemonProc) totalEvents() int {
	d.mu.Lock()
	defer d.mu.Unlock()
	n := 0
	for _, c := range d.counts {
		n += c
	}
	return n
}

// alive reports whether the process is still running.
func (d *daemonProc) alive() bool {
	select {
	case <-d.exited:
		return false
	default:
		return true
	}
}

// stop sends SIGTERM and waits (bounded), then SIGKILL.
func (d *daemonProc) stop() error {
	if !d.alive() {
		return d.waitEr
	}
	d.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-d.exited:
		return nil
	case <-time.After(15 * time.Second):
	}
	d.cmd.Process.Kill()
	select {
	case <-d.exited:
	case <-time.After(5 * time.Second):
	}
	return errors.New("daemon did not stop within 15 s of SIGTERM; killed")
}

// waitFor polls cond until it is true, the daemon exits, or ctx ends.
func (d *daemonProc) waitFor(ctx context.Context, what string, cond func() bool) error {
	t := time.NewTicker(20 * time.Millisecond)
	defer t.Stop()
	for !cond() {
		select {
		case <-ctx.Done():
			return fmt.Errorf("waiting for %s: %w (daemon log: %s)", what, ctx.Err(), d.tail)
		case <-d.exited:
			return fmt.Errorf("daemon exited while waiting for %s: %v (log: %s)", what, d.waitEr, d.tail)
		case <-t.C:
		}
	}
	return nil
}

// writePolicy writes a policy for the daemon workloads: one json and one jsonl rule over root.
func writePolicy(path, root, stateDir, settle string) error {
	q := strconv.Quote
	extra := ""
	if settle != "" {
		extra = "    settle: " + settle + "\n"
	}
	s := "version: 1\n" +
		"state_dir: " + q(stateDir) + "\n" +
		"log: {format: json, level: info}\n" +
		"rules:\n" +
		"  - name: bench-json\n    paths: [" + q(root) + "]\n    format: json\n" + extra +
		"  - name: bench-jsonl\n    paths: [" + q(root) + "]\n    format: jsonl\n" + extra
	return os.WriteFile(path, []byte(s), 0o644)
}

// resetPeakRSS shrinks this process's memory and resets its high-water mark to what it holds
// now (/proc/self/clear_refs, Linux 4.0+), so that a child spawned next is charged as little of
// it as possible. It returns this process's resident set after the reset.
func resetPeakRSS() int64 {
	runtime.GC()
	debug.FreeOSMemory()
	_ = os.WriteFile("/proc/self/clear_refs", []byte("5"), 0)
	rss, _, _ := procMem(os.Getpid())
	return rss
}
