package main

import (
	"encoding/json"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"syscall"
	"testing"
	"time"
)

// stateDirPolicy writes a policy over one healthy session with the given state_dir.
func stateDirPolicy(t *testing.T, stateDir string, extra string) string {
	t.Helper()
	dir := t.TempDir()
	sessions := filepath.Join(dir, "sessions")
	os.MkdirAll(sessions, 0o755)
	os.WriteFile(filepath.Join(sessions, "s.jsonl"), []byte("{\"a\":1}\n"), 0o644)
	p := filepath.Join(dir, "policy.yaml")
	os.WriteFile(p, []byte(fmt.Sprintf("version: 1\nstate_dir: %s\n%srules:\n  - {name: j, format: jsonl, paths: [%s]}\n", stateDir, extra, sessions)), 0o644)
	return p
}

// every command that uses the state directory, with what it needs of it.
var stateDirCommands = [][]string{
	{"check"}, {"heal"}, {"heal", "-dry-run"}, {"run", "-log-format", "text"},
	{"quarantine", "list"}, {"quarantine", "show", "x"}, {"quarantine", "restore", "x"},
}

// readsOnly: a command of stateDirCommands that writes nothing in the state dir, and so
// needs none (a missing one holds nothing).
func readsOnly(args []string) bool {
	return args[0] == "check" || args[1] == "-dry-run" || args[1] == "list" || args[1] == "show"
}

// TestUnusableStateDir: a state_dir that cannot be used is a configuration error of one line,
// before any file is looked at. One that cannot be created is so only for the commands that
// write there: the others use no state.
func TestUnusableStateDir(t *testing.T) {
	home := t.TempDir()
	file := filepath.Join(t.TempDir(), "a-file")
	os.WriteFile(file, []byte("x"), 0o644)
	for _, tc := range []struct {
		stateDir, why string
		missing       bool // does not exist: only a command writing there fails
	}{
		{filepath.Join(file, "state"), file + " is not a directory", true},
		{filepath.Join(file, "deeper", "state"), file + " is not a directory", true},
		{file, "not a directory", false},
	} {
		policyFile := stateDirPolicy(t, tc.stateDir, "")
		for _, args := range stateDirCommands {
			args := append(append([]string(nil), args...), "-config", policyFile)
			start := time.Now()
			out, errOut, code := sm(t, home, args...)
			want := fmt.Sprintf("sessionmedic: state_dir %s: %s\n", tc.stateDir, tc.why)
			if tc.missing && readsOnly(args) {
				if code != exitOK && !(code == exitUsage && errOut == "sessionmedic: no quarantine entry \"x\"\n") {
					t.Errorf("%v: exit %d, stdout %q, stderr %q; want it to work without a state dir", args, code, out, errOut)
				}
				continue
			}
			if code != exitUsage || errOut != want || out != "" {
				t.Errorf("%v: exit %d, stdout %q, stderr %q; want exit 2 and %q", args, code, out, errOut, want)
			}
			if d := time.Since(start); d > 5*time.Second {
				t.Errorf("%v took %v", args, d)
			}
		}
	}
}

// TestStateDirWithoutPermission runs the commands as a user who may not write where the
// state directory is (as nobody when the tests run as root, for whom permission bits do not
// count).
func TestStateDirWithoutPermission(t *testing.T) {
	base, err := os.MkdirTemp("", "sessionmedic-perm")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.Chmod(filepath.Join(base, "ro"), 0o755); os.RemoveAll(base) })
	os.Chmod(base, 0o755)
	bin := filepath.Join(base, "sessionmedic")
	b, err := os.ReadFile(binary)
	if err != nil {
		t.Fatal(err)
	}
	os.WriteFile(bin, b, 0o755)
	ro := filepath.Join(base, "ro")
	os.MkdirAll(filepath.Join(ro, "existing"), 0o755)
	sessions := filepath.Join(base, "sessions")
	os.MkdirAll(sessions, 0o755)
	os.WriteFile(filepath.Join(sessions, "s.jsonl"), []byte("{\"a\":1}\n"), 0o644)
	os.Chmod(ro, 0o555)
	var cred *syscall.Credential
	if os.Geteuid() == 0 {
		cred = &syscall.Credential{Uid: 65534, Gid: 65534}
	}
	for _, tc := range []struct {
		stateDir     string
		write, check string
	}{
		// Missing and cannot be created: the commands that write nothing there need none.
		{filepath.Join(ro, "state"), "cannot be created: permission denied", ""},
		// Not its own: every command refuses it before anything else (the process can
		// neither trust nor write it).
		{filepath.Join(ro, "existing"), "not used: " + filepath.Join(ro, "existing") + " is owned by uid 0, not by this process's uid 65534; " + untrustedHint,
			"not used: " + filepath.Join(ro, "existing") + " is owned by uid 0, not by this process's uid 65534; " + untrustedHint},
	} {
		if cred == nil && strings.Contains(tc.check, "not used") {
			// Not root: the process is the directory's owner and trusts it, but cannot write it.
			tc.write, tc.check = "cannot be written: permission denied", ""
		}
		policyFile := filepath.Join(base, "policy.yaml")
		os.WriteFile(policyFile, []byte(fmt.Sprintf("version: 1\nstate_dir: %s\nrules:\n  - {name: j, format: jsonl, paths: [%s]}\n", tc.stateDir, sessions)), 0o644)
		for _, args := range stateDirCommands {
			args := append(append([]string(nil), args...), "-config", policyFile)
			cmd := exec.Command(bin, args...)
			cmd.Env = []string{"HOME=" + base, "PATH=" + os.Getenv("PATH")}
			cmd.SysProcAttr = &syscall.SysProcAttr{Credential: cred}
			var o, e strings.Builder
			cmd.Stdout, cmd.Stderr = &o, &e
			err := cmd.Run()
			code := 0
			if ee, ok := err.(*exec.ExitError); ok {
				code = ee.ExitCode()
			} else if err != nil {
				t.Skipf("cannot run as another user: %v", err)
			}
			why := tc.write
			if readsOnly(args) {
				why = tc.check
			}
			if why == "" { // readable: these commands need no more
				if code == exitUsage && !strings.Contains(e.String(), "no quarantine entry") {
					t.Errorf("%v: exit 2: %s", args, e.String())
				}
				continue
			}
			want := fmt.Sprintf("sessionmedic: state_dir %s: %s\n", tc.stateDir, why)
			if code != exitUsage || e.String() != want || o.String() != "" {
				t.Errorf("%v: exit %d, stdout %q, stderr %q; want exit 2 and %q", args, code, o.String(), e.String(), want)
			}
		}
	}
}

// fatalLine runs `run` expecting it not to start, and returns its one JSON stderr line.
func fatalLine(t *testing.T, home string, wantCode int, args ...string) map[string]any {
	t.Helper()
	out, errOut, code := sm(t, home, append([]string{"run"}, args...)...)
	var m map[string]any
	if code != wantCode || out != "" || strings.Count(errOut, "\n") != 1 || json.Unmarshal([]byte(errOut), &m) != nil {
		t.Fatalf("run %v: exit %d (want %d), stdout %q, stderr %q: not one JSON line", args, code, wantCode, out, errOut)
	}
	if m["msg"] != "sessionmedic.fatal" || m["level"] != "ERROR" || m["time"] == nil {
		t.Errorf("run %v: %v is not a sessionmedic.fatal line", args, m)
	}
	return m
}

// TestFatalErrorsInTheLogFormat: when the log is JSON, an error that keeps `run` from
// starting is one sessionmedic.fatal line of it; as text it stays one plain line.
func TestFatalErrorsInTheLogFormat(t *testing.T) {
	home := t.TempDir()
	file := filepath.Join(t.TempDir(), "a-file")
	os.WriteFile(file, []byte("x"), 0o644)

	bad := stateDirPolicy(t, filepath.Join(file, "state"), "")
	m := fatalLine(t, home, exitUsage, "-log-format", "json", "-config", bad)
	if want := "state_dir " + filepath.Join(file, "state") + ": " + file + " is not a directory"; m["err"] != want {
		t.Errorf("err %q, want %q", m["err"], want)
	}
	// The policy's own log.format says json.
	bad = stateDirPolicy(t, filepath.Join(file, "state"), "log: {format: json}\n")
	fatalLine(t, home, exitUsage, "-config", bad)

	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	inUse := stateDirPolicy(t, filepath.Join(t.TempDir(), "state"), fmt.Sprintf("http: {listen: %q}\n", l.Addr().String()))
	m = fatalLine(t, home, exitUsage, "-log-format", "json", "-config", inUse)
	if want := "http listen " + l.Addr().String() + ": "; !strings.HasPrefix(fmt.Sprint(m["err"]), want) ||
		!strings.HasSuffix(fmt.Sprint(m["err"]), "address already in use") {
		t.Errorf("err %q, want %s...address already in use", m["err"], want)
	}
	_, errOut, code := sm(t, home, "run", "-log-format", "text", "-config", inUse)
	if code != exitUsage || !strings.HasPrefix(errOut, "sessionmedic: http listen ") || strings.Count(errOut, "\n") != 1 {
		t.Errorf("as text: exit %d, stderr %q", code, errOut)
	}

	// A policy that does not load cannot say its format: the flag does.
	fifo := filepath.Join(t.TempDir(), "p.fifo")
	syscall.Mkfifo(fifo, 0o600)
	m = fatalLine(t, home, exitUsage, "-log-format", "json", "-config", fifo)
	if want := "read policy: " + fifo + ": not a regular file (a named pipe)"; m["err"] != want {
		t.Errorf("err %q, want %q", m["err"], want)
	}
}

// TestStateDirProbeLeavesNoName: proving state_dir writable creates no name in it, so a
// crash or a power cut in the middle leaves no probe behind (Linux: an O_TMPFILE probe).
func TestStateDirProbeLeavesNoName(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "state")
	var names []string
	stop := make(chan struct{})
	done := make(chan struct{})
	go func() {
		defer close(done)
		for {
			select {
			case <-stop:
				return
			default:
			}
			if ents, err := os.ReadDir(dir); err == nil {
				for _, e := range ents {
					names = append(names, e.Name())
				}
			}
		}
	}()
	for range 200 {
		if err := checkStateDir(dir, true); err != nil {
			t.Fatal(err)
		}
	}
	close(stop)
	<-done
	if runtime.GOOS == "linux" && len(names) > 0 {
		t.Fatalf("the probe showed names in state_dir: %v", names[:min(len(names), 3)])
	}
	if ents, _ := os.ReadDir(dir); len(ents) != 0 {
		t.Fatalf("state_dir holds %d names after the probes", len(ents))
	}
}

// TestUntrustedStateDir: a state dir that another uid owns, that anyone else can write, or
// that holds a symlink is refused by every command (exit 2, one line naming what is wrong)
// before anything is read from it or written to it: its manifests, copies and journal
// entries would otherwise be an attacker's instructions.
func TestUntrustedStateDir(t *testing.T) {
	root := os.Geteuid() == 0
	for _, tc := range []struct {
		name   string
		setup  func(t *testing.T, state string) // state exists, owned by us, mode 0700
		offend func(state string) string        // the path the line must name
		why    string
		asRoot bool
	}{
		{"group-writable", func(t *testing.T, s string) { os.Chmod(s, 0o770) }, func(s string) string { return s }, "is writable by group or others (mode 0770)", false},
		{"symlinked sub-directory", func(t *testing.T, s string) { os.Symlink(t.TempDir(), filepath.Join(s, "last-good")) }, func(s string) string { return filepath.Join(s, "last-good") }, "is a symlink", false},
		{"world-writable entry", func(t *testing.T, s string) {
			d := filepath.Join(s, "quarantine", "2026-01-01")
			os.MkdirAll(d, 0o700)
			os.Chmod(d, 0o777)
		}, func(s string) string { return filepath.Join(s, "quarantine", "2026-01-01") }, "is writable by group or others (mode 0777)", false},
		{"FIFO", func(t *testing.T, s string) { syscall.Mkfifo(filepath.Join(s, "lock"), 0o600) }, func(s string) string { return filepath.Join(s, "lock") }, "is not a regular file or a directory", false},
		{"owned by another uid", func(t *testing.T, s string) { os.Chown(s, 65534, 65534) }, func(s string) string { return s }, "is owned by uid 65534, not by this process's uid 0", true},
		{"forged manifest of another uid", func(t *testing.T, s string) {
			d := filepath.Join(s, "quarantine", "2026-01-01", "20260101T000000Z-00000000")
			os.MkdirAll(d, 0o700)
			m := filepath.Join(d, "manifest.json")
			os.WriteFile(m, []byte(`{"id":"20260101T000000Z-00000000","path":"/etc/x"}`), 0o600)
			os.Chown(m, 65534, 65534)
		}, func(s string) string {
			return filepath.Join(s, "quarantine", "2026-01-01", "20260101T000000Z-00000000", "manifest.json")
		}, "is owned by uid 65534, not by this process's uid 0", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if tc.asRoot && !root {
				t.Skip("needs root to give a file another owner")
			}
			state := filepath.Join(t.TempDir(), "state")
			os.Mkdir(state, 0o700)
			tc.setup(t, state)
			policyFile := stateDirPolicy(t, state, "")
			for _, args := range stateDirCommands {
				args := append(append([]string(nil), args...), "-config", policyFile)
				out, errOut, code := sm(t, t.TempDir(), args...)
				want := fmt.Sprintf("sessionmedic: state_dir %s: not used: %s %s; %s\n", state, tc.offend(state), tc.why, untrustedHint)
				if code != exitUsage || errOut != want || out != "" {
					t.Errorf("%v: exit %d, stdout %q, stderr %q; want exit 2 and %q", args, code, out, errOut, want)
				}
			}
		})
	}
}

// TestUntrustedStateDirParent: a state dir below a directory another user can write is
// refused before anything is created in it.
func TestUntrustedStateDirParent(t *testing.T) {
	parent := filepath.Join(t.TempDir(), "shared")
	os.Mkdir(parent, 0o777)
	os.Chmod(parent, 0o777)
	state := filepath.Join(parent, "state")
	out, errOut, code := sm(t, t.TempDir(), "heal", "-config", stateDirPolicy(t, state, ""))
	want := fmt.Sprintf("sessionmedic: state_dir %s: not used: %s (a directory above state_dir) is writable by group or others (mode 0777); %s\n", state, parent, untrustedHint)
	if code != exitUsage || errOut != want || out != "" {
		t.Errorf("exit %d, stdout %q, stderr %q; want exit 2 and %q", code, out, errOut, want)
	}
	if _, err := os.Lstat(state); !os.IsNotExist(err) {
		t.Errorf("the state dir was created below an untrusted directory: %v", err)
	}
}

// TestStateDirOnAWorldWritableMount: a Kubernetes emptyDir is the root of a mount with mode
// 0777. A process that is not root may keep its state dir below one (only the pod's
// containers mount it); root never does.
func TestStateDirOnAWorldWritableMount(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root to mount a tmpfs and to run as another user")
	}
	base, err := os.MkdirTemp("", "sessionmedic-mount")
	if err != nil {
		t.Fatal(err)
	}
	defer os.RemoveAll(base)
	os.Chmod(base, 0o755)
	mnt := filepath.Join(base, "volume")
	os.Mkdir(mnt, 0o755)
	if out, err := exec.Command("mount", "-t", "tmpfs", "-o", "mode=0777,size=4m", "tmpfs", mnt).CombinedOutput(); err != nil {
		t.Skipf("cannot mount a tmpfs here: %v %s", err, out)
	}
	defer exec.Command("umount", mnt).Run()
	bin := filepath.Join(base, "sessionmedic")
	b, _ := os.ReadFile(binary)
	os.WriteFile(bin, b, 0o755)
	sessions := filepath.Join(base, "sessions")
	os.Mkdir(sessions, 0o777)
	os.WriteFile(filepath.Join(sessions, "s.jsonl"), []byte("{\"a\":1}\n"), 0o666)
	state := filepath.Join(mnt, "state")
	policyFile := filepath.Join(base, "policy.yaml")
	os.WriteFile(policyFile, []byte(fmt.Sprintf("version: 1\nstate_dir: %s\nrules:\n  - {name: j, format: jsonl, paths: [%s]}\n", state, sessions)), 0o644)
	run := func(cred *syscall.Credential) (string, int) {
		cmd := exec.Command(bin, "heal", "-config", policyFile)
		cmd.Env = []string{"HOME=" + base, "PATH=" + os.Getenv("PATH")}
		cmd.SysProcAttr = &syscall.SysProcAttr{Credential: cred}
		var e strings.Builder
		cmd.Stderr = &e
		err := cmd.Run()
		if ee, ok := err.(*exec.ExitError); ok {
			return e.String(), ee.ExitCode()
		} else if err != nil {
			t.Skipf("cannot run: %v", err)
		}
		return e.String(), 0
	}
	if errOut, code := run(nil); code != exitUsage || !strings.Contains(errOut, mnt+" (a directory above state_dir) is writable by group or others") {
		t.Errorf("as root: exit %d %q; want the world-writable mount refused", code, errOut)
	}
	if errOut, code := run(&syscall.Credential{Uid: 65534, Gid: 65534}); code != 0 {
		t.Errorf("as a user, below a mount root of mode 0777: exit %d %q; want it used", code, errOut)
	}
}

// asUser prepares a base directory that a user permission bits stop can work in: the test's
// own uid when it is not root, else nobody (uid 65534; root reads and creates anywhere). It
// returns base, holding a copy of the binary, and a runner of that copy as that user with
// the given HOME (and no XDG_STATE_HOME: the state dir is the default one below HOME).
func asUser(t *testing.T) (base string, run func(home string, args ...string) (stdout, stderr string, code int)) {
	t.Helper()
	base, err := os.MkdirTemp("", "sessionmedic-user")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		filepath.WalkDir(base, func(p string, d os.DirEntry, err error) error {
			os.Chmod(p, 0o755)
			return nil
		})
		os.RemoveAll(base)
	})
	os.Chmod(base, 0o755)
	bin := filepath.Join(base, "sessionmedic")
	b, err := os.ReadFile(binary)
	if err != nil {
		t.Fatal(err)
	}
	os.WriteFile(bin, b, 0o755)
	var cred *syscall.Credential
	if os.Geteuid() == 0 {
		cred = &syscall.Credential{Uid: 65534, Gid: 65534}
	}
	return base, func(home string, args ...string) (string, string, int) {
		t.Helper()
		cmd := exec.Command(bin, args...)
		cmd.Env = []string{"HOME=" + home, "PATH=" + os.Getenv("PATH")}
		cmd.SysProcAttr = &syscall.SysProcAttr{Credential: cred}
		var o, e strings.Builder
		cmd.Stdout, cmd.Stderr = &o, &e
		err := cmd.Run()
		if ee, ok := err.(*exec.ExitError); ok {
			return o.String(), e.String(), ee.ExitCode()
		} else if err != nil {
			t.Skipf("cannot run as another user: %v", err)
		}
		return o.String(), e.String(), 0
	}
}

// TestReadOnlyCommandsNeedNoStateDir: check writes nothing, so a user whose state dir does
// not exist and cannot be created (a HOME it may not write) still checks: no state dir means
// no last-good copy and no quarantine entry. The same holds for the other commands that
// only read (heal -dry-run, quarantine list and show); heal, which writes there, says it
// cannot (exit 2).
func TestReadOnlyCommandsNeedNoStateDir(t *testing.T) {
	base, run := asUser(t)
	home := filepath.Join(base, "home")
	os.Mkdir(home, 0o555)
	sessions := filepath.Join(base, "sessions")
	os.Mkdir(sessions, 0o755)
	os.WriteFile(filepath.Join(sessions, "ok.jsonl"), []byte("{\"a\":1}\n"), 0o644)
	state := filepath.Join(home, ".local", "state", "sessionmedic")

	out, errOut, code := run(home, "check", sessions)
	if code != 0 || errOut != "" || !strings.Contains(out, "healthy") || !strings.Contains(out, "1 files: 1 healthy") {
		t.Fatalf("check: exit %d, want 0\nstdout:\n%s\nstderr:\n%s", code, out, errOut)
	}
	os.WriteFile(filepath.Join(sessions, "torn.jsonl"), []byte("{\"a\":1}\n{\"a\""), 0o644)
	out, errOut, code = run(home, "check", "-json", sessions)
	if r := parseReports(t, out)["torn.jsonl"]; code != 1 || r.Kind != "truncated" {
		t.Errorf("check of damage: exit %d, want 1 and truncated\nstdout:\n%s\nstderr:\n%s", code, out, errOut)
	}
	out, errOut, code = run(home, "heal", "-dry-run", sessions)
	if code != 1 || !strings.Contains(out, "would-heal") {
		t.Errorf("heal -dry-run: exit %d, want 1\nstdout:\n%s\nstderr:\n%s", code, out, errOut)
	}
	if out, errOut, code = run(home, "quarantine", "list"); code != 0 || out != "" || errOut != "" {
		t.Errorf("quarantine list: exit %d, want 0 and nothing\nstdout:\n%s\nstderr:\n%s", code, out, errOut)
	}
	if _, errOut, code = run(home, "quarantine", "show", "x"); code != 2 || !strings.Contains(errOut, `no quarantine entry "x"`) {
		t.Errorf("quarantine show: exit %d\n%s", code, errOut)
	}
	want := "sessionmedic: state_dir " + state + ": cannot be created: permission denied\n"
	if out, errOut, code = run(home, "heal", sessions); code != 2 || errOut != want || out != "" {
		t.Errorf("heal: exit %d, stderr %q; want 2 and %q", code, errOut, want)
	}
	if _, err := os.Lstat(filepath.Join(home, ".local")); !os.IsNotExist(err) {
		t.Errorf("something was created in HOME: %v", err)
	}
}
