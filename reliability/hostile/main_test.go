//go:build linux

// Package hostile feeds sessionmedic what an attacker, a broken disk or a careless operator
// leaves in a watched directory: symlinks (and directories) swapped in between inspection and
// repair, FIFOs, sockets and device nodes, directories that vanish mid-scan, unreadable files,
// gigabyte files, a 100 MB line, 100,000-deep nesting, invalid UTF-8, NUL-filled files, names
// with newlines and non-UTF-8 bytes, a full state (or session) filesystem, two rules over the
// same files, and a one-shot heal beside a running daemon.
//
// Linux only: it mounts tmpfs, makes Linux device nodes, reads /proc and ties each child's
// life to its own (Pdeathsig).
//
//	go test -race ./reliability/hostile -count=1 -v          # CI (the 1 GiB files included)
//	go test -race ./reliability/hostile -count=1 -v -long    # also heal the huge files and run the daemon over them
//
// Every run of the real binary (built in TestMain) is checked for: no panic (exit code never
// 3, no "panic"/"goroutine " on stderr), no hang (each run has a deadline), one clear
// verdict or skip reason per file in -json output, bounded memory (peak RSS from getrusage,
// taken by a small spawner process so that the test process's own size does not count) and
// nothing written that should not be (every file outside the state directory is snapshotted
// before and after: bytes, inode, mtime, mode). The swaps run in process through Engine.Step
// (and daemon.Options.Step), under the race detector.
//
// With RELIABILITY_OUT set, the figures (cases, RSS, durations) are stored as JSON under the
// key "hostile" of the object in that file (or in hostile.json when it is a directory).
package hostile

import (
	"errors"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"sort"
	"strconv"
	"sync"
	"syscall"
	"testing"

	"github.com/sessionmedic/sessionmedic/reliability/figures"
)

var long = flag.Bool("long", false, "also heal the gigabyte files and run the daemon over them")

var (
	binary      string // built with -race when the tests are
	plainBinary string // never with -race: memory figures are measured on it
)

func TestMain(m *testing.M) {
	if os.Getenv(spawnEnv) != "" {
		os.Exit(spawn())
	}
	flag.Parse()
	dir, err := os.MkdirTemp("", "sessionmedic-hostile-bin")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
	os.Chmod(dir, 0o755) // the unreadable-file case runs the binary as another user
	const pkg = "github.com/sessionmedic/sessionmedic/cmd/sessionmedic"
	plainBinary = filepath.Join(dir, "sessionmedic-plain")
	builds := [][]string{{"build", "-o", plainBinary, pkg}}
	binary = plainBinary
	if raceEnabled {
		binary = filepath.Join(dir, "sessionmedic-race")
		builds = append(builds, []string{"build", "-race", "-o", binary, pkg})
	}
	for _, args := range builds {
		if out, err := exec.Command("go", args...).CombinedOutput(); err != nil {
			fmt.Fprintf(os.Stderr, "building sessionmedic: %v\n%s", err, out)
			os.RemoveAll(dir)
			os.Exit(2)
		}
	}
	code := m.Run()
	writeFigures()
	os.RemoveAll(dir)
	os.Exit(code)
}

// spawnEnv makes this test binary a spawner: it runs its arguments as a child (as the user
// in SESSIONMEDIC_HOSTILE_UID, when set), waits, and writes the child's getrusage peak RSS
// (KiB) to the file named by the variable. The binary under test is not started straight
// from the test process because Linux counts the address space a vfork child execs from
// (the test process, possibly large) into the child's ru_maxrss; the spawner is small.
const spawnEnv = "SESSIONMEDIC_HOSTILE_SPAWN"

func spawn() int {
	runtime.LockOSThread() // Pdeathsig is tied to the thread that started the child
	cmd := exec.Command(os.Args[1], os.Args[2:]...)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = os.Stdin, os.Stdout, os.Stderr
	cmd.Env = os.Environ()
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if uid := os.Getenv("SESSIONMEDIC_HOSTILE_UID"); uid != "" {
		n, _ := strconv.Atoi(uid)
		cmd.SysProcAttr.Credential = &syscall.Credential{Uid: uint32(n), Gid: uint32(n)}
	}
	err := cmd.Run()
	if cmd.ProcessState != nil {
		if ru, ok := cmd.ProcessState.SysUsage().(*syscall.Rusage); ok {
			os.WriteFile(os.Getenv(spawnEnv), []byte(strconv.FormatInt(ru.Maxrss, 10)), 0o644)
		}
	}
	var ee *exec.ExitError
	switch {
	case err == nil:
		return 0
	case errors.As(err, &ee):
		if st, ok := ee.Sys().(syscall.WaitStatus); ok && st.Signaled() {
			return 128 + int(st.Signal())
		}
		return ee.ExitCode()
	}
	fmt.Fprintln(os.Stderr, "spawn:", err)
	return 125
}

// caseFigures collects one line per case for RELIABILITY_OUT.
var (
	figMu       sync.Mutex
	caseFigures = map[string]any{}
)

func figure(name string, v any) {
	figMu.Lock()
	defer figMu.Unlock()
	caseFigures[name] = v
}

func writeFigures() {
	figMu.Lock()
	defer figMu.Unlock()
	keys := make([]string, 0, len(caseFigures))
	for k := range caseFigures {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	cases := make([]map[string]any, 0, len(keys))
	for _, k := range keys {
		cases = append(cases, map[string]any{"case": k, "figure": caseFigures[k]})
	}
	if err := figures.Write("hostile", map[string]any{"race": raceEnabled, "cases": cases}); err != nil {
		fmt.Fprintln(os.Stderr, "RELIABILITY_OUT:", err)
	}
}
