//go:build linux

package hostile

import (
	"bufio"
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// runOpts says how to run the binary.
type runOpts struct {
	timeout time.Duration       // default 60s
	cred    *syscall.Credential // run as another user
	home    string              // HOME (default: a temp dir)
	bin     string              // default: binary
}

// result is one run of the binary.
type result struct {
	args           []string
	code           int
	stdout, stderr string
	maxRSS         int64 // bytes, from getrusage of the child
	dur            time.Duration
	timedOut       bool
}

// sm runs the binary with args and checks that it neither hung nor panicked.
func sm(t *testing.T, o runOpts, args ...string) result {
	t.Helper()
	r := smQuiet(t, o, args...)
	r.sane(t)
	return r
}

// nonLog keeps the lines of stderr that are not JSON log lines.
func nonLog(s string) string {
	var out []string
	for _, l := range strings.Split(s, "\n") {
		if !strings.HasPrefix(l, "{") {
			out = append(out, l)
		}
	}
	return strings.Join(out, "\n")
}

// smQuiet runs the binary with args; the caller judges the result.
func smQuiet(t *testing.T, o runOpts, args ...string) result {
	t.Helper()
	if o.timeout == 0 {
		o.timeout = 60 * time.Second
	}
	if o.home == "" {
		o.home = t.TempDir()
	}
	if o.bin == "" {
		o.bin = binary
	}
	ctx, cancel := context.WithTimeout(context.Background(), o.timeout)
	defer cancel()
	rss := filepath.Join(t.TempDir(), "rss")
	cmd := exec.CommandContext(ctx, os.Args[0], append([]string{o.bin}, args...)...)
	cmd.Env = []string{"HOME=" + o.home, "XDG_STATE_HOME=" + filepath.Join(o.home, "state"), "PATH=" + os.Getenv("PATH"),
		"SESSIONMEDIC_DEBUG=1", spawnEnv + "=" + rss}
	if o.cred != nil {
		cmd.Env = append(cmd.Env, fmt.Sprintf("SESSIONMEDIC_HOSTILE_UID=%d", o.cred.Uid))
	}
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	start := time.Now()
	err := cmd.Run()
	r := result{args: args, stdout: out.String(), stderr: errb.String(), dur: time.Since(start)}
	if ctx.Err() != nil {
		r.timedOut = true
	}
	var ee *exec.ExitError
	switch {
	case err == nil:
	case errors.As(err, &ee):
		r.code = ee.ExitCode()
	default:
		t.Fatalf("run %v: %v", args, err)
	}
	if b, err := os.ReadFile(rss); err == nil {
		kb, _ := strconv.ParseInt(string(b), 10, 64)
		r.maxRSS = kb * 1024
	}
	return r
}

// sane: no hang, no panic, no race report, exit code 0, 1 or 2.
func (r result) sane(t *testing.T) {
	t.Helper()
	if r.timedOut {
		t.Errorf("sessionmedic %s: still running after its deadline (%v): it blocked\nstderr:\n%s", strings.Join(quoteAll(r.args), " "), r.dur.Round(time.Millisecond), tail(r.stderr))
		return
	}
	if r.code == 3 || r.code < 0 || r.code > 2 {
		t.Errorf("sessionmedic %s: exit code %d; stderr (log lines left out):\n%s", strings.Join(quoteAll(r.args), " "), r.code, tail(nonLog(r.stderr)))
	}
	for _, bad := range []string{"panic", "goroutine ", "DATA RACE", "fatal error"} {
		if strings.Contains(r.stderr, bad) {
			t.Errorf("sessionmedic %s: %q on stderr:\n%s", strings.Join(quoteAll(r.args), " "), bad, tail(r.stderr))
		}
	}
}

func quoteAll(args []string) []string {
	out := make([]string, len(args))
	for i, a := range args {
		out[i] = a
		if strings.ContainsAny(a, " \n\t\"") || !isPrintable(a) {
			out[i] = fmt.Sprintf("%q", a)
		}
	}
	return out
}

func isPrintable(s string) bool {
	for _, r := range s {
		if r < 0x20 || r == 0xfffd {
			return false
		}
	}
	return true
}

func tail(s string) string {
	if len(s) > 4000 {
		return "…" + s[len(s)-4000:]
	}
	return s
}

// report is one -json object.
type report struct {
	Path        string `json:"path"`
	PathB64     string `json:"path_b64"` // the exact bytes of a path that is not UTF-8
	Rule        string `json:"rule"`
	Format      string `json:"format"`
	Verdict     string `json:"verdict"`
	Kind        string `json:"kind"`
	Offset      int64  `json:"offset"`
	Detail      string `json:"detail"`
	Action      string `json:"action"`
	Strategy    string `json:"strategy"`
	Quarantine  string `json:"quarantine"`
	Reason      string `json:"reason"`
	LostBytes   int64  `json:"lost_bytes"`
	LostRecords int    `json:"lost_records"`
}

// reports parses -json output: every line one object with a path and a clear verdict, a
// damaged file with its kind, a skipped or busy one with its reason.
func reports(t *testing.T, r result) []report {
	t.Helper()
	var out []report
	sc := bufio.NewScanner(strings.NewReader(r.stdout))
	sc.Buffer(make([]byte, 1<<20), 1<<26)
	for sc.Scan() {
		line := sc.Bytes()
		var rep report
		if err := json.Unmarshal(line, &rep); err != nil {
			t.Errorf("-json output line is not JSON (%v): %q", err, clip(string(line)))
			continue
		}
		if rep.PathB64 != "" {
			b, err := base64.StdEncoding.DecodeString(rep.PathB64)
			if err != nil {
				t.Errorf("path_b64 is not base64: %q", rep.PathB64)
			}
			rep.Path = string(b)
		}
		switch rep.Verdict {
		case "healthy":
		case "damaged":
			if rep.Kind == "" {
				t.Errorf("%q: damaged without a kind: %s", rep.Path, line)
			}
		case "skipped", "busy":
			if rep.Detail == "" && rep.Reason == "" {
				t.Errorf("%q: %s without a reason: %s", rep.Path, rep.Verdict, line)
			}
		default:
			t.Errorf("%q: verdict %q is not healthy, damaged, busy or skipped: %s", rep.Path, rep.Verdict, line)
		}
		if rep.Path == "" {
			t.Errorf("a report without a path: %s", line)
		}
		out = append(out, rep)
	}
	return out
}

func clip(s string) string {
	if len(s) > 400 {
		return s[:200] + " … " + s[len(s)-200:]
	}
	return s
}

// byPath indexes reports, failing on a file reported twice.
func byPath(t *testing.T, reps []report) map[string]report {
	t.Helper()
	m := map[string]report{}
	for _, r := range reps {
		if _, dup := m[r.Path]; dup {
			t.Errorf("%q reported twice", r.Path)
		}
		m[r.Path] = r
	}
	return m
}

// fileState is what a snapshot keeps of one directory entry.
type fileState struct {
	mode  fs.FileMode
	size  int64
	ino   uint64
	mtime int64
	sum   string // regular files: sha256 (sampled for huge files); symlinks: the target
}

// snapshot records every entry below roots without following symlinks; skip names
// directories to leave out (the state directory).
func snapshot(t *testing.T, skip []string, roots ...string) map[string]fileState {
	t.Helper()
	m := map[string]fileState{}
	for _, root := range roots {
		filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
			if err != nil {
				return nil
			}
			for _, s := range skip {
				if p == s {
					return filepath.SkipDir
				}
			}
			fi, err := os.Lstat(p)
			if err != nil {
				return nil
			}
			st := fi.Sys().(*syscall.Stat_t)
			fs := fileState{mode: fi.Mode(), size: fi.Size(), ino: st.Ino, mtime: fi.ModTime().UnixNano()}
			switch {
			case fi.IsDir():
				// A heal renames within a directory: its mtime and size may move.
				fs.mtime, fs.size = 0, 0
			case fi.Mode().IsRegular():
				fs.sum = sumFile(p, fi.Size())
			case fi.Mode()&os.ModeSymlink != 0:
				fs.sum, _ = os.Readlink(p)
			}
			m[p] = fs
			return nil
		})
	}
	return m
}

func sumFile(p string, size int64) string {
	f, err := os.OpenFile(p, os.O_RDONLY|syscall.O_NONBLOCK, 0)
	if err != nil {
		return "unreadable: " + err.Error()
	}
	defer f.Close()
	h := sha256.New()
	if size <= 256<<20 {
		io.Copy(h, f)
	} else {
		// Huge files: the first and last MiB, and one MiB every 64 MiB.
		buf := make([]byte, 1<<20)
		for off := int64(0); off < size; off += 64 << 20 {
			n, _ := f.ReadAt(buf, off)
			h.Write(buf[:n])
		}
		n, _ := f.ReadAt(buf, max(0, size-int64(len(buf))))
		h.Write(buf[:n])
	}
	return hex.EncodeToString(h.Sum(nil))
}

// changed lists what differs between two snapshots, except the paths in allowed.
func changed(before, after map[string]fileState, allowed map[string]bool) []string {
	var out []string
	for p, b := range before {
		a, ok := after[p]
		switch {
		case allowed[p]:
		case !ok:
			out = append(out, fmt.Sprintf("%q disappeared", p))
		case a != b:
			out = append(out, fmt.Sprintf("%q changed: %+v -> %+v", p, b, a))
		}
	}
	for p := range after {
		if _, ok := before[p]; !ok && !allowed[p] {
			out = append(out, fmt.Sprintf("%q appeared", p))
		}
	}
	sort.Strings(out)
	return out
}

// writePolicy writes a policy with the given rules (YAML list items) and returns its path.
func writePolicy(t *testing.T, state, rules string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "policy.yaml")
	if err := os.WriteFile(p, []byte(fmt.Sprintf("version: 1\nstate_dir: %s\nrules:\n%s", state, rules)), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

func mustWrite(t *testing.T, p string, b []byte) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, b, 0o644); err != nil {
		t.Fatal(err)
	}
}

func mib(n int64) string { return fmt.Sprintf("%.1f MiB", float64(n)/(1<<20)) }

// daemon is `sessionmedic run` as a child process, its JSON log collected.
type daemon struct {
	cmd  *exec.Cmd
	mu   sync.Mutex
	raw  bytes.Buffer
	done chan struct{}
	err  error
}

func startDaemon(t *testing.T, policyFile string) *daemon {
	t.Helper()
	d := &daemon{done: make(chan struct{})}
	d.cmd = exec.Command(binary, "run", "-config", policyFile, "-log-format", "json", "-log-level", "debug")
	d.cmd.Env = []string{"HOME=" + t.TempDir(), "PATH=" + os.Getenv("PATH"), "SESSIONMEDIC_DEBUG=1"}
	d.cmd.Stderr = d
	if err := d.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { d.err = d.cmd.Wait(); close(d.done) }()
	t.Cleanup(func() {
		d.cmd.Process.Kill()
		<-d.done
	})
	return d
}

func (d *daemon) Write(p []byte) (int, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.raw.Write(p)
}

// events returns the log lines with msg (all lines when msg is "").
func (d *daemon) events(msg string) []map[string]any {
	d.mu.Lock()
	defer d.mu.Unlock()
	var out []map[string]any
	for _, l := range strings.Split(d.raw.String(), "\n") {
		var m map[string]any
		if json.Unmarshal([]byte(l), &m) == nil && (msg == "" || m["msg"] == msg) {
			out = append(out, m)
		}
	}
	return out
}

func (d *daemon) log() string {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.raw.String()
}

// stop sends SIGTERM and checks a clean exit without a panic.
func (d *daemon) stop(t *testing.T) {
	t.Helper()
	d.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-d.done:
	case <-time.After(15 * time.Second):
		t.Errorf("the daemon did not exit within 15s of SIGTERM\n%s", tail(d.log()))
		return
	}
	if d.err != nil {
		t.Errorf("daemon exit: %v\n%s", d.err, tail(d.log()))
	}
	for _, bad := range []string{"panic", "goroutine ", "DATA RACE", "fatal error"} {
		if strings.Contains(d.log(), bad) {
			t.Errorf("%q in the daemon's output:\n%s", bad, tail(d.log()))
		}
	}
}

// vmHWM reads a running process's peak RSS (bytes).
func vmHWM(pid int) int64 {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0
	}
	for _, l := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(l, "VmHWM:"); ok {
			var kb int64
			fmt.Sscanf(strings.TrimSpace(v), "%d", &kb)
			return kb * 1024
		}
	}
	return 0
}

func eventually(t *testing.T, within time.Duration, what string, cond func() bool) bool {
	t.Helper()
	deadline := time.Now().Add(within)
	for !cond() {
		if time.Now().After(deadline) {
			t.Errorf("timed out after %v waiting for %s", within, what)
			return false
		}
		time.Sleep(10 * time.Millisecond)
	}
	return true
}
