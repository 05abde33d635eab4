//go:build linux

// Package security runs the attacks of an unprivileged user (uid 65534) who owns a watched
// tree against the real sessionmedic binary run as root (DESIGN §4 "Trust",
// docs/SECURITY.md). Each test sets the stage as root (a victim, uid 4243, with its own
// tree; a root-only directory; the attacker's tree, owned by 65534), lets the attacker act
// as 65534 where timing matters (a child process with that uid), runs sessionmedic as root,
// and checks that the victim's files are byte-identical with their owner and mode, that
// nothing was created outside the attacker's tree, and that what must be refused is
// refused, with one line that names the path.
//
//	go test ./reliability/security -count=1 -v
//	SECURITY_BINARY=/path/to/sessionmedic go test ./reliability/security -count=1 -v   # attack another build
//
// It needs root (it skips otherwise, saying so), as CI has.
package security

import (
	"bytes"
	"context"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

const (
	attackerUID = 65534
	victimUID   = 4243
)

var binary string

func TestMain(m *testing.M) {
	if os.Getenv(attackerEnv) != "" {
		os.Exit(attack())
	}
	code, built := 0, ""
	if b := os.Getenv("SECURITY_BINARY"); b != "" {
		binary = b // another build to attack (an older release, to see which attacks worked)
	} else if os.Geteuid() == 0 {
		dir, err := os.MkdirTemp("", "sessionmedic-security-bin")
		if err != nil {
			panic(err)
		}
		os.Chmod(dir, 0o755)
		binary = filepath.Join(dir, "sessionmedic")
		if out, err := exec.Command("go", "build", "-o", binary, "../../cmd/sessionmedic").CombinedOutput(); err != nil {
			os.Stderr.Write(out)
			panic(err)
		}
		// Removed before os.Exit, which runs no deferred call: a defer here left a
		// 17 MB binary in the temp dir at every run.
		built = dir
	}
	code = m.Run()
	if built != "" {
		os.RemoveAll(built)
	}
	os.Exit(code)
}

// touchSources opens every Go source of the binary, once, from within a test: go test
// records the files a test opens, so a change to any of them runs the suite again instead of
// reusing a cached pass (the binary is built by a command the test cache does not see).
var touched sync.Once

func touchSources() {
	for _, dir := range []string{"../../cmd/sessionmedic", "../../heal", "../../policy", "../../daemon", "../../watcher", "../../internal"} {
		filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
			if err == nil && !d.IsDir() && strings.HasSuffix(p, ".go") {
				if f, err := os.Open(p); err == nil {
					f.Close()
				}
			}
			return nil
		})
	}
}

// needRoot skips a test that is not run as root.
func needRoot(t *testing.T) {
	t.Helper()
	touched.Do(touchSources)
	if os.Geteuid() != 0 {
		t.Skip("the attacks are run against sessionmedic running as root: run this suite as root")
	}
}

// stage is one attack's machine: base (root's, 0755) holds the attacker's tree, the victim's
// tree, a root-only directory, root's state dir and root's policy.
type stage struct {
	base, tree, victim, rootOnly, state, policy string
}

// newStage lays out a stage. The attacker's tree is a generic JSONL rule's root.
func newStage(t *testing.T, rule string) *stage {
	t.Helper()
	base, err := os.MkdirTemp("", "sessionmedic-security")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(base) })
	os.Chmod(base, 0o755)
	s := &stage{base: base, tree: filepath.Join(base, "attacker"), victim: filepath.Join(base, "victim"),
		rootOnly: filepath.Join(base, "rootonly"), state: filepath.Join(base, "state"), policy: filepath.Join(base, "etc", "policy.yaml")}
	mkdir(t, s.tree, 0o755, attackerUID)
	mkdir(t, s.victim, 0o700, victimUID)
	mkdir(t, filepath.Join(s.victim, "projects"), 0o700, victimUID)
	write(t, filepath.Join(s.victim, "projects", "v.jsonl"), "{\"secret\":\"victim\"}\n{\"torn\"", 0o600, victimUID)
	mkdir(t, s.rootOnly, 0o700, 0)
	write(t, filepath.Join(s.rootOnly, "secret.jsonl"), "{\"secret\":\"root\"}\n", 0o600, 0)
	mkdir(t, filepath.Dir(s.policy), 0o755, 0)
	if rule == "" {
		rule = "format: jsonl"
	}
	write(t, s.policy, fmt.Sprintf("version: 1\nstate_dir: %s\nrules:\n  - {name: attacker, %s, paths: [%s], settle: 50ms, max_wait: 1s}\n",
		s.state, rule, s.tree), 0o644, 0)
	return s
}

func mkdir(t *testing.T, p string, mode os.FileMode, uid int) {
	t.Helper()
	if err := os.MkdirAll(p, mode); err != nil {
		t.Fatal(err)
	}
	os.Chmod(p, mode)
	os.Lchown(p, uid, uid)
}

func write(t *testing.T, p, data string, mode os.FileMode, uid int) {
	t.Helper()
	if err := os.WriteFile(p, []byte(data), mode); err != nil {
		t.Fatal(err)
	}
	os.Chmod(p, mode)
	os.Lchown(p, uid, uid)
}

// result is one run of the binary.
type result struct {
	stdout, stderr string
	code           int
}

// sm runs the binary as root (cred nil) or as cred, within a minute: a run that hangs is a
// failure, not a stuck suite.
func sm(t *testing.T, cred *syscall.Credential, args ...string) result {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, binary, args...)
	cmd.Env = []string{"HOME=/nonexistent", "PATH=" + os.Getenv("PATH")}
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: cred, Pdeathsig: syscall.SIGKILL}
	var o, e bytes.Buffer
	cmd.Stdout, cmd.Stderr = &o, &e
	err := cmd.Run()
	if ctx.Err() != nil {
		t.Fatalf("sessionmedic %v did not finish within a minute", args)
	}
	r := result{o.String(), e.String(), 0}
	if ee, ok := err.(*exec.ExitError); ok {
		r.code = ee.ExitCode()
	} else if err != nil {
		t.Fatal(err)
	}
	if r.code == 3 || strings.Contains(r.stderr, "panic") {
		t.Fatalf("sessionmedic %v: internal error\n%s", args, r.stderr)
	}
	return r
}

// fileState is what must not change of a file the attacker must not reach.
type fileState struct {
	data      string
	mode      fs.FileMode
	uid, gid  uint32
	ino       uint64
	isDir     bool
	linkDest  string
	mtimeNsec int64
}

// snap records every entry below roots.
func snap(t *testing.T, roots ...string) map[string]fileState {
	t.Helper()
	out := map[string]fileState{}
	for _, r := range roots {
		filepath.WalkDir(r, func(p string, d fs.DirEntry, err error) error {
			if err != nil {
				return nil
			}
			var st syscall.Stat_t
			if syscall.Lstat(p, &st) != nil {
				return nil
			}
			s := fileState{mode: fs.FileMode(st.Mode & 0o7777), uid: st.Uid, gid: st.Gid, ino: st.Ino, isDir: d.IsDir(), mtimeNsec: st.Mtim.Nano()}
			if d.Type().IsRegular() {
				b, _ := os.ReadFile(p)
				s.data = string(b)
			}
			if d.Type()&fs.ModeSymlink != 0 {
				s.linkDest, _ = os.Readlink(p)
			}
			out[p] = s
			return nil
		})
	}
	return out
}

// unchanged fails the test for every entry below the roots that changed, appeared or went.
func unchanged(t *testing.T, before map[string]fileState, roots ...string) {
	t.Helper()
	after := snap(t, roots...)
	var diffs []string
	for p, b := range before {
		a, ok := after[p]
		switch {
		case !ok:
			diffs = append(diffs, "removed "+p)
		case a != b:
			diffs = append(diffs, fmt.Sprintf("changed %s: %+v -> %+v", p, b, a))
		}
	}
	for p := range after {
		if _, ok := before[p]; !ok {
			diffs = append(diffs, "created "+p)
		}
	}
	sort.Strings(diffs)
	for _, d := range diffs {
		t.Error(d)
	}
}

// stateHolds reports whether any file in the state dir holds data.
func stateHolds(t *testing.T, state, data string) string {
	t.Helper()
	found := ""
	filepath.WalkDir(state, func(p string, d fs.DirEntry, err error) error {
		if err == nil && d.Type().IsRegular() {
			if b, _ := os.ReadFile(p); strings.Contains(string(b), data) {
				found = p
			}
		}
		return nil
	})
	return found
}

var attacker = &syscall.Credential{Uid: attackerUID, Gid: attackerUID}
