package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/sessionmedic/sessionmedic/policy"
)

// selfCPU is this process's user+system CPU time so far (all threads).
func selfCPU() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// childCPU is a finished child's user+system CPU time, including the children it waited for.
func childCPU(ps *os.ProcessState) time.Duration {
	if ps == nil {
		return 0
	}
	return ps.UserTime() + ps.SystemTime()
}

// childMaxRSS is a finished child's peak resident set in bytes, as wait4 reports it. Linux
// folds the high-water mark of the memory the child started with into it: a child that Go
// spawns with vfork semantics starts on its parent's memory, so this is at least the
// parent's peak (see resetPeakRSS).
func childMaxRSS(ps *os.ProcessState) int64 {
	if ps == nil {
		return 0
	}
	if ru, ok := ps.SysUsage().(*syscall.Rusage); ok {
		return ru.Maxrss * 1024 // KiB on Linux
	}
	return 0
}

// clockTicks is USER_HZ, the unit of /proc/<pid>/stat times; 100 on every Linux platform Go
// supports.
const clockTicks = 100

// procCPU is a live process's user+system CPU time from /proc/<pid>/stat.
func procCPU(pid int) (time.Duration, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0, err
	}
	return parseStatCPU(string(b))
}

// parseStatCPU reads utime and stime (fields 14 and 15) of a /proc/<pid>/stat line; the
// command name in parentheses may contain spaces.
func parseStatCPU(s string) (time.Duration, error) {
	i := strings.LastIndexByte(s, ')')
	if i < 0 {
		return 0, errors.New("malformed stat")
	}
	f := strings.Fields(s[i+1:])
	// f[0] is field 3 (state); utime is field 14, stime field 15.
	if len(f) < 13 {
		return 0, errors.New("short stat")
	}
	ut, err1 := strconv.ParseInt(f[11], 10, 64)
	st, err2 := strconv.ParseInt(f[12], 10, 64)
	if err1 != nil || err2 != nil {
		return 0, errors.New("malformed stat times")
	}
	return time.Duration(ut+st) * time.Second / clockTicks, nil
}

// procMem returns VmRSS and VmHWM of a live process, in bytes.
func procMem(pid int) (rss, hwm int64, err error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0, 0, err
	}
	return statusKiB(string(b), "VmRSS:") * 1024, statusKiB(string(b), "VmHWM:") * 1024, nil
}

func statusKiB(s, key string) int64 {
	for _, line := range strings.Split(s, "\n") {
		if rest, ok := strings.CutPrefix(line, key); ok {
			f := strings.Fields(rest)
			if len(f) > 0 {
				n, _ := strconv.ParseInt(f[0], 10, 64)
				return n
			}
		}
	}
	return 0
}

// procSched sums, over a live process's threads, the nanoseconds on CPU (schedstat) and the
// context switches (voluntary + involuntary): how often it woke up.
func procSched(pid int) (cpu time.Duration, switches int64, threads int) {
	tasks, _ := filepath.Glob(fmt.Sprintf("/proc/%d/task/*", pid))
	for _, t := range tasks {
		if b, err := os.ReadFile(filepath.Join(t, "schedstat")); err == nil {
			if f := strings.Fields(string(b)); len(f) > 0 {
				ns, _ := strconv.ParseInt(f[0], 10, 64)
				cpu += time.Duration(ns)
			}
		}
		if b, err := os.ReadFile(filepath.Join(t, "status")); err == nil {
			switches += statusKiB(string(b), "voluntary_ctxt_switches:") + statusKiB(string(b), "nonvoluntary_ctxt_switches:")
		}
		threads++
	}
	return cpu, switches, threads
}

// childEnv is the environment of a sessionmedic child: this process's, without anything that
// would point it at real app data, systemd or a real state directory.
func childEnv(home, stateDir string) []string {
	drop := map[string]bool{
		"HOME": true, "XDG_STATE_HOME": true, "XDG_DATA_HOME": true, "STATE_DIRECTORY": true,
		"NOTIFY_SOCKET": true, "WATCHDOG_USEC": true, "WATCHDOG_PID": true,
		"SESSIONMEDIC_DEBUG": true,
	}
	for _, k := range policy.PresetEnv() {
		drop[k] = true
	}
	var env []string
	for _, kv := range os.Environ() {
		k, _, _ := strings.Cut(kv, "=")
		if !drop[k] {
			env = append(env, kv)
		}
	}
	return append(env, "HOME="+home, "STATE_DIRECTORY="+stateDir, "XDG_STATE_HOME="+stateDir)
}

// countWriter counts bytes and lines written to it and keeps the first 4 KiB.
type countWriter struct {
	mu           sync.Mutex
	bytes, lines int64
	head         []byte
}

func (w *countWriter) text() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return string(w.head)
}

func (w *countWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.bytes += int64(len(p))
	if room := 4<<10 - len(w.head); room > 0 {
		w.head = append(w.head, p[:min(room, len(p))]...)
	}
	for _, c := range p {
		if c == '\n' {
			w.lines++
		}
	}
	return len(p), nil
}

// tailBuffer keeps the last lines written to it, for error messages.
type tailBuffer struct {
	mu    sync.Mutex
	lines []string
	part  string
}

func (t *tailBuffer) Write(p []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	s := t.part + string(p)
	parts := strings.Split(s, "\n")
	t.part = parts[len(parts)-1]
	for _, l := range parts[:len(parts)-1] {
		t.addLocked(l)
	}
	return len(p), nil
}

func (t *tailBuffer) add(l string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.addLocked(l)
}

func (t *tailBuffer) addLocked(l string) {
	t.lines = append(t.lines, l)
	if len(t.lines) > 8 {
		t.lines = t.lines[len(t.lines)-8:]
	}
}

func (t *tailBuffer) String() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	all := append([]string(nil), t.lines...)
	if t.part != "" {
		all = append(all, t.part)
	}
	return strings.Join(all, " | ")
}

// timed is one run of an external command.
type timed struct {
	Wall     time.Duration
	CPU      time.Duration
	MaxRSS   int64
	Code     int
	Stdout   *countWriter
	Stderr   *tailBuffer
	TimedOut bool
}

// runTimed runs a command to completion (or until ctx ends) and measures it.
func runTimed(ctx context.Context, dir string, env []string, name string, args ...string) (timed, error) {
	t, _, err := runSampled(ctx, dir, env, nil, name, args...)
	return t, err
}

// memPeaks are the largest resident set sizes seen by sampling /proc/<pid>/status.
type memPeaks struct {
	HWM, Anon, File int64 // VmHWM (the peak since exec) at the last sample; RssAnon, RssFile peaks
	Samples         int
}

// runSampled is runTimed that also samples the child's memory every interval (when
// interval is not nil).
func runSampled(ctx context.Context, dir string, env []string, interval *time.Duration, name string, args ...string) (timed, memPeaks, error) {
	var peaks memPeaks
	cmd := exec.CommandContext(ctx, name, args...)
	cmd.Dir = dir
	cmd.Env = env
	out, errb := &countWriter{}, &tailBuffer{}
	cmd.Stdout, cmd.Stderr = out, errb
	cmd.WaitDelay = 5 * time.Second
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error {
		// The whole process group: find's jq children too.
		return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
	}
	start := time.Now()
	if err := cmd.Start(); err != nil {
		return timed{Stdout: out, Stderr: errb}, peaks, err
	}
	stopSampling := make(chan struct{})
	sampled := make(chan struct{})
	go func() {
		defer close(sampled)
		if interval == nil {
			return
		}
		tick := time.NewTicker(*interval)
		defer tick.Stop()
		path := fmt.Sprintf("/proc/%d/status", cmd.Process.Pid)
		for {
			if b, err := os.ReadFile(path); err == nil {
				st := string(b)
				peaks.HWM = max(peaks.HWM, statusKiB(st, "VmHWM:")*1024)
				peaks.Anon = max(peaks.Anon, statusKiB(st, "RssAnon:")*1024)
				peaks.File = max(peaks.File, statusKiB(st, "RssFile:")*1024)
				peaks.Samples++
			}
			select {
			case <-stopSampling:
				return
			case <-tick.C:
			}
		}
	}()
	err := cmd.Wait()
	close(stopSampling)
	<-sampled
	t := timed{Wall: time.Since(start), Stdout: out, Stderr: errb, CPU: childCPU(cmd.ProcessState), MaxRSS: childMaxRSS(cmd.ProcessState)}
	if cmd.ProcessState != nil {
		t.Code = cmd.ProcessState.ExitCode()
	}
	if ctx.Err() != nil {
		t.TimedOut = true
		return t, peaks, fmt.Errorf("%s: %w", name, ctx.Err())
	}
	var ee *exec.ExitError
	if err != nil && !errors.As(err, &ee) {
		return t, peaks, err
	}
	return t, peaks, nil
}
