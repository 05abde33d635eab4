//go:build linux

package security

import (
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"syscall"
	"testing"
)

// The attacker acts as uid 65534 from a child process: this test binary, started again with
// attackerEnv set to the action.
const attackerEnv = "SECURITY_ATTACKER"

// attack runs in the child: "swap DIR LINKTARGET N" swaps DIR, N times, between the real
// directory (kept as DIR.real) and a symlink to LINKTARGET, and leaves the real one in place.
func attack() int {
	args := os.Args[len(os.Args)-4:]
	switch os.Getenv(attackerEnv) {
	case "write":
		os.WriteFile(args[1], []byte(args[2]), 0o644)
		return 0
	case "swap":
		dir, target := args[1], args[2]
		n, _ := strconv.Atoi(args[3])
		real := dir + ".real"
		for range n {
			os.Rename(dir, real)
			os.Symlink(target, dir)
			os.Remove(dir)
			os.Rename(real, dir)
		}
		return 0
	}
	return 2
}

// startAttacker starts an action as uid 65534; wait waits for its end.
func startAttacker(t *testing.T, action string, args ...string) (wait func()) {
	t.Helper()
	cmd := exec.Command(os.Args[0], append([]string{"-test.run=^$", "--", action}, args...)...)
	cmd.Env = append(os.Environ(), attackerEnv+"="+action)
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: attacker, Pdeathsig: syscall.SIGKILL}
	// The test binary must be reachable by the attacker's uid.
	exe, _ := filepath.Abs(os.Args[0])
	for d := filepath.Dir(exe); d != "/"; d = filepath.Dir(d) {
		if fi, err := os.Stat(d); err == nil && fi.Mode().Perm()&0o001 == 0 {
			os.Chmod(d, fi.Mode().Perm()|0o011)
		}
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	return func() { cmd.Wait() }
}
