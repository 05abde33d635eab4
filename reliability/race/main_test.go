// Package race runs sessionmedic's daemon over temp trees while writers imitate the apps, each
// in its own style, and checks that no write an app made is ever lost, that no heal lands while
// an app holds its lock, and that every damage injected between writes is healed or reported.
//
//	go test -race ./reliability/race -count=1 -v                      # CI: ~7s of writing per daemon mode
//	go test -race ./reliability/race -count=1 -v -long -timeout 30m   # 3 minutes per mode
//	flags: -duration D (writing time per mode), -modes binary,inproc, -seed N (0: the clock),
//	       -styles copaw,praisonai,nanobot,openviking,agent,claude-code,codex,pi,qwen-code,copilot-cli (the writers)
//
// The daemon runs twice: as the real binary (`sessionmedic run`, built in TestMain, with -race
// when the tests are) and in process (daemon.Run, where the race detector sees it), with a
// 40 ms settle and a 500 ms max_wait. Ten writers (two per style) write for the run:
//
//   - CoPaw: a one-line JSON object rewritten in place (open "w": O_TRUNC, then write), no lock,
//     by a child process (the daemon must see CoPaw's open descriptor as another process's);
//   - PraisonAI: indent-2 JSON, tmpXXXXXXXX.tmp + rename under flock on <file>.lock;
//   - nanobot era D: JSONL, .<name>.<16hex>.tmp + rename under flock on
//     <32hex namespace>/.session-files.lock (unlinked on release, as current filelock does);
//   - OpenViking: messages.jsonl rewritten in place under the O_EXCL token <sid>/.path.ovlock
//     (<uuid4>:<unix_ns>:T), then .meta.json with message_count;
//   - an agent CLI: a JSONL transcript appended through one long-lived O_APPEND descriptor, in
//     a child process (this test binary re-executed) so that the daemon sees the descriptor in
//     /proc as another process's;
//   - Claude Code, Codex, pi, Qwen Code (coding_test.go, agents_test.go): each as its app
//     appends and locks (Codex's thread writer flock; pi and Qwen: none, one record a write);
//   - Copilot CLI: one open(O_APPEND) + write + close a batch, each run (a turn) holding the
//     session's operation flock and its own inuse.<pid>.hold flock, unlinked at its end.
//
// Every write adds a record with a unique id. Before each write, under its lock (and again
// after a "turn" spent holding it), each writer checks that the file is byte for byte (and,
// for in-place writers, inode for inode) what it left there; any difference is counted, and
// every committed record missing from the file is a lost write. Now and then a writer injects
// damage (a torn tail, trailing garbage, a garbage line): half the time it waits for the
// daemon's verdict (file.healed that quarantined exactly the damaged bytes, file.heal_refused
// or file.damaged) and checks the heal restored the bytes before the damage; half the time it
// writes on at once, racing the heal. Lock-holding writers record the spans they held their
// locks (wall clock, comparable with the quarantine manifests' created times): a manifest
// created inside such a span is a heal inside the app's lock. After the writers stop and the
// daemon settles, every file must still be what its app last left there.
//
// The figure (app writes, damages, heals, lost app writes) is printed as one line per mode;
// with RELIABILITY_OUT set, it is also stored as JSON under the key "race" of the object in
// that file (or in race.json when RELIABILITY_OUT is a directory).
package race

import (
	"bufio"
	"encoding/hex"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"syscall"
	"testing"
	"time"
)

var (
	long     = flag.Bool("long", false, "write for minutes per daemon mode instead of seconds")
	duration = flag.Duration("duration", 0, "how long the writers write per daemon mode (default 7s, 3m with -long)")
	modes    = flag.String("modes", "binary,inproc", "daemon modes to run: binary, inproc")
	seed     = flag.Int64("seed", 0, "random seed (0: from the clock; the figure names it)")
	styles   = flag.String("styles", "copaw,praisonai,nanobot,openviking,agent,claude-code,codex,pi,qwen-code,copilot-cli", "app styles that write")
)

var binary string

const helperEnv = "SESSIONMEDIC_RACE_HELPER"

func TestMain(m *testing.M) {
	switch os.Getenv(helperEnv) {
	case "appender":
		os.Exit(appender(os.Getenv("SESSIONMEDIC_RACE_FILE")))
	case "rewriter":
		os.Exit(rewriter())
	}
	flag.Parse()
	dir, err := os.MkdirTemp("", "sessionmedic-race-bin")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
	binary = filepath.Join(dir, "sessionmedic")
	args := []string{"build", "-o", binary}
	if raceEnabled {
		args = append(args, "-race")
	}
	args = append(args, "github.com/sessionmedic/sessionmedic/cmd/sessionmedic")
	build := exec.Command("go", args...)
	if out, err := build.CombinedOutput(); err != nil {
		fmt.Fprintf(os.Stderr, "building sessionmedic: %v\n%s", err, out)
		os.RemoveAll(dir)
		os.Exit(2)
	}
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

// appender is the agent CLI: it opens its transcript once, O_APPEND, and writes every chunk
// it is sent (one hex line on stdin each) through that one descriptor, answering "ok" after
// each write returned. It exits at EOF.
func appender(path string) int {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND|os.O_CREATE|syscall.O_CLOEXEC, 0o644)
	if err != nil {
		fmt.Println("err", err)
		return 1
	}
	defer f.Close()
	in := bufio.NewScanner(os.Stdin)
	in.Buffer(make([]byte, 1<<20), 1<<24)
	out := bufio.NewWriter(os.Stdout)
	for in.Scan() {
		b, err := hex.DecodeString(in.Text())
		if err == nil {
			_, err = f.Write(b)
		}
		if err != nil {
			fmt.Fprintln(out, "err", err)
		} else {
			fmt.Fprintln(out, "ok")
		}
		out.Flush()
	}
	return 0
}

// pendingWait bounds the wait, after the apps stopped, for heals the daemon had to defer. A
// damaged file an agent held open is busy, and retried with a backoff that doubles up to a
// minute (daemon.Options.Backoff): no event says the descriptor closed, so the heal comes at
// the next retry, up to a minute after the close (a wait of 20 s failed once on a quiet
// machine, a racing garbage line in a session its agent had left for the next). The wait
// ends as soon as nothing is pending.
const pendingWait = 75 * time.Second

// rewriter is an app that saves like CoPaw: for each "<hex path> <hex bytes>" line on stdin it
// opens the path with O_TRUNC ("w"), writes the bytes and closes it, answering "ok".
func rewriter() int {
	in := bufio.NewScanner(os.Stdin)
	in.Buffer(make([]byte, 1<<20), 1<<26)
	out := bufio.NewWriter(os.Stdout)
	for in.Scan() {
		hp, hb, _ := strings.Cut(in.Text(), " ")
		p, err := hex.DecodeString(hp)
		var b []byte
		if err == nil {
			b, err = hex.DecodeString(hb)
		}
		var f *os.File
		if err == nil {
			f, err = os.OpenFile(string(p), os.O_WRONLY|os.O_CREATE|os.O_TRUNC|syscall.O_CLOEXEC, 0o644)
		}
		if err == nil {
			_, err = f.Write(b)
			if cerr := f.Close(); err == nil {
				err = cerr
			}
		}
		if err != nil {
			fmt.Fprintln(out, "err", err)
		} else {
			fmt.Fprintln(out, "ok")
		}
		out.Flush()
	}
	return 0
}

func runDuration() time.Duration {
	switch {
	case *duration > 0:
		return *duration
	case *long:
		return 3 * time.Minute
	}
	return 7 * time.Second
}

// procs is GOMAXPROCS, for the figure.
func procs() int { return runtime.GOMAXPROCS(0) }
