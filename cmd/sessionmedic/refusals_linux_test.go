package main

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestDaemonSaysAtStartWhatItCannotHeal: the real daemon, in a mount namespace of its own
// where a sessions directory is a read-only bind mount (as systemd's ProtectHome=read-only
// without ReadWritePaths= makes it) and the state dir a 2 MiB tmpfs, over a tree where
// another directory belongs to a user who may not write it. Before any damage, it says at
// ERROR which directories no heal can write (rule.cannot_heal, files_unhealable), that the
// state dir is too small for the largest file's heal (state.space_low, state_free_bytes
// under state_needed_bytes) and that it refused a last-good copy (state.copy_failed); the
// damage that follows in the read-only directory is refused with what was tried, the write
// that failed, and what to do. It said none of it before: ready, then each heal failed.
func TestDaemonSaysAtStartWhatItCannotHeal(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root: a mount namespace with a read-only bind mount and a tmpfs")
	}
	unshare, err := exec.LookPath("unshare")
	if err != nil {
		t.Skip("needs unshare(1) (util-linux)")
	}
	home := t.TempDir()
	ro := filepath.Join(home, "ro")
	alice := filepath.Join(home, "alice", "sessions")
	big := filepath.Join(home, "big")
	for _, d := range []string{ro, alice, big} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	write := func(p, s string) {
		t.Helper()
		if err := os.WriteFile(p, []byte(s), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write(filepath.Join(ro, "s.jsonl"), "{\"n\":1}\n{\"n\":2}\n")
	write(filepath.Join(alice, "a.jsonl"), "{\"n\":1}\n")
	line := `{"text":"` + strings.Repeat("x", 1<<20) + "\"}\n"
	write(filepath.Join(big, "b.jsonl"), strings.Repeat(line, 3)) // 3 MiB: its heal needs 7 MiB
	for _, p := range []string{filepath.Join(home, "alice"), alice, filepath.Join(alice, "a.jsonl")} {
		if err := os.Chown(p, 1000, 1000); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Chmod(alice, 0o555); err != nil {
		t.Fatal(err)
	}
	state := filepath.Join(t.TempDir(), "state")
	os.MkdirAll(state, 0o700)
	addr := freePort(t)
	policyFile := filepath.Join(t.TempDir(), "policy.yaml")
	write(policyFile, fmt.Sprintf(`version: 1
state_dir: %s
http: {listen: "%s"}
rules:
  - name: j
    paths: [%s]
    format: jsonl
    match: ["*.jsonl"]
    settle: 100ms
`, state, addr, home))

	cmd := exec.Command(unshare, "--mount", "--propagation", "private", "sh", "-c",
		`mount --bind "$1" "$1" && mount -o remount,bind,ro "$1" && mount -t tmpfs -o size=2m,mode=0700 tmpfs "$2" && shift 2 && exec "$@"`,
		"sh", ro, state, binary, "run", "-log-format", "json", "-config", policyFile)
	cmd.Env = []string{"HOME=" + home, "PATH=" + os.Getenv("PATH")}
	d := startDaemonCmd(t, cmd)
	eventually(t, time.Minute, "/readyz", func() bool { c, _ := httpGet("http://" + addr + "/readyz"); return c == 200 })
	// The daemon's lines are read from its stderr on their own goroutine: they may come
	// after /readyz says ready.
	eventually(t, time.Minute, "rule.cannot_heal for both directories", func() bool { return len(d.events("rule.cannot_heal")) >= 2 })

	byDir := map[string]string{}
	for _, e := range d.events("rule.cannot_heal") {
		if e["level"] != "ERROR" || e["rule"] != "j" || e["files"] != 1.0 {
			t.Errorf("rule.cannot_heal: %v", e)
		}
		dir, _ := e["dir"].(string)
		byDir[dir], _ = e["reason"].(string)
	}
	if len(byDir) != 2 {
		t.Fatalf("rule.cannot_heal for %v, want %s and %s", byDir, ro, alice)
	}
	for dir, want := range map[string][]string{
		ro:    {"read-only file system", "ReadWritePaths="},
		alice: {"permission denied", "the tree's owner (uid 1000)", "give its owner write permission"},
	} {
		for _, w := range want {
			if !strings.Contains(byDir[dir], w) {
				t.Errorf("rule.cannot_heal %s: reason %q does not say %q", dir, byDir[dir], w)
			}
		}
	}
	eventually(t, time.Minute, "state.space_low", func() bool { return len(d.events("state.space_low")) == 1 })
	low := d.events("state.space_low")[0]
	if low["level"] != "ERROR" || low["largest"] != filepath.Join(big, "b.jsonl") || low["needed_bytes"] != float64(2*len(line)*3+1<<20) {
		t.Errorf("state.space_low: %v", low)
	}
	eventually(t, time.Minute, "state.copy_failed", func() bool { return len(d.events("state.copy_failed")) == 1 })
	if e := d.events("state.copy_failed")[0]; e["path"] != filepath.Join(big, "b.jsonl") || !strings.Contains(fmt.Sprint(e["err"]), "no space left") {
		t.Errorf("state.copy_failed: %v", e)
	}
	for _, want := range []string{`sessionmedic_files_unhealable{rule="j"} 2`, `sessionmedic_last_good_failures_total{rule="j"} 1`} {
		eventually(t, 10*time.Second, want, func() bool { return len(metricLines(addr, want)) == 1 })
	}
	gauge := func(name string) float64 {
		l := metricLines(addr, name+" ")
		if len(l) != 1 {
			t.Fatalf("%s: %q", name, l)
		}
		v, err := strconv.ParseFloat(strings.Fields(l[0])[1], 64)
		if err != nil {
			t.Fatal(err)
		}
		return v
	}
	if free, need := gauge("sessionmedic_state_free_bytes"), gauge("sessionmedic_state_needed_bytes"); free <= 0 || free >= need {
		t.Errorf("state_free_bytes %v, state_needed_bytes %v", free, need)
	}

	// The damage comes (written outside the daemon's namespace, where the directory is the
	// app's to write): refused, saying what was tried and what to do.
	f, err := os.OpenFile(filepath.Join(ro, "s.jsonl"), os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		t.Fatal(err)
	}
	f.WriteString(`{"n":`)
	f.Close()
	eventually(t, time.Minute, "file.heal_refused", func() bool { return len(d.events("file.heal_refused")) == 1 })
	e := d.events("file.heal_refused")[0]
	tried, _ := e["tried"].([]any)
	if len(tried) == 0 || !strings.Contains(fmt.Sprint(tried), "chosen, not written") || !strings.Contains(fmt.Sprint(e["reason"]), "ReadWritePaths=") {
		t.Errorf("file.heal_refused: %v", e)
	}
}

// TestPolicySaysFilesOfAnotherOwner: sessionmedic run as a service user (uid 1000) over a
// directory it may write (its group's) holding another user's files cannot give a healed
// file its owner back: `policy` says so before any damage (rule.cannot_heal).
func TestPolicySaysFilesOfAnotherOwner(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root to make the files of two other users")
	}
	home := t.TempDir()
	for p := home; p != "/" && p != os.TempDir(); p = filepath.Dir(p) {
		os.Chmod(p, 0o755) // the service user reaches the tree
	}
	dir := filepath.Join(home, "shared")
	os.MkdirAll(dir, 0o775)
	f := filepath.Join(dir, "a.jsonl")
	os.WriteFile(f, []byte("{\"n\":1}\n"), 0o664)
	for _, p := range []string{dir, f} {
		if err := os.Chown(p, 1001, 1000); err != nil {
			t.Fatal(err)
		}
	}
	os.Chmod(dir, 0o775)
	policyFile := filepath.Join(home, "policy.yaml")
	os.WriteFile(policyFile, []byte(fmt.Sprintf("version: 1\nstate_dir: %s\nrules:\n  - name: j\n    paths: [%s]\n    format: jsonl\n", filepath.Join(home, "state"), dir)), 0o644)
	bin := filepath.Join(home, "sessionmedic") // one the service user may run
	b, err := os.ReadFile(binary)
	if err != nil {
		t.Fatal(err)
	}
	os.WriteFile(bin, b, 0o755)
	cmd := exec.Command(bin, "policy", "-config", policyFile)
	cmd.Env = []string{"HOME=" + home, "PATH=" + os.Getenv("PATH"), "SESSIONMEDIC_LOG_FORMAT=json"}
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: 1000, Gid: 1000}}
	var stderr strings.Builder
	cmd.Stderr = &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("policy: %v\n%s", err, stderr.String())
	}
	for _, want := range []string{"rule.cannot_heal", f + " is owned by uid 1001", "sessionmedic runs as uid 1000", "run sessionmedic as the files' owner or as root"} {
		if !strings.Contains(stderr.String(), want) {
			t.Errorf("policy does not say %q:\n%s", want, stderr.String())
		}
	}
}
