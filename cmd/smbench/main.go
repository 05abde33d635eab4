// Command smbench measures sessionmedic against the tools people use instead (jq, a Python
// json.load loop, encoding/json, jsontext) on generated workloads, and prints one table of
// the ratios the performance goals name.
//
//	go run ./cmd/smbench            # everything (tens of minutes)
//	go run ./cmd/smbench -quick     # small sizes, seconds to a few minutes
//	go run ./cmd/smbench -only validate,append -json
//	go run ./cmd/smbench -only growth   # how cost grows with file size, file count, write rate
//	go run ./cmd/smbench -only healrss  # heal peak RSS by size: 1, 16, 200 MB, CLI and daemon
//	go run ./cmd/smbench -only claude   # Claude Code transcripts under the claude-code preset
//	go run ./cmd/smbench -only apps     # 100–300 MB app transcripts checked and healed, the sidecar's first scan
//	go run ./cmd/smbench -only validate,e2e,small,bigfile   # the validator, end to end, 20,000 small files, memory
//	go run ./cmd/smbench -only docs     # 20,000 session documents of ~7.5 KB: CoPaw, PraisonAI, generic JSON
//
// claude lays out 5,000 transcripts (2 GB; -quick: 200, 40 MB) as ~/.claude/projects/<slug>/
// <uuid>.jsonl in the bench's own home and measures: the first scan (`sessionmedic check` on
// the embedded default policy: wall time, peak RSS); the daemon's idle CPU and RSS over that
// tree after its first scan; re-validation after a 1 KiB append to a 100 MB transcript,
// incremental vs full (target ≥ 1000×); and damage-to-healed latency (p50, p99, max) while a
// Claude-style writer appends 50 records/s in batches to a few live transcripts.
//
// Everything happens in a temp dir, which is removed at the end unless -keep is given.
// The exit status is 0 when every measurement ran (whether or not its target is met), 1 when
// a measurement failed, 2 on a usage error.
package main

import (
	"context"
	"debug/buildinfo"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"runtime"
	"strings"
	"syscall"
	"time"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := run(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}

// workloads in the order they run. growth goes last: it reuses the scan tree when scan ran.
var workloads = []string{"validate", "append", "e2e", "small", "docs", "scan", "idle", "latency", "bigfile", "healrss", "claude", "apps", "sqlite", "growth"}

type options struct {
	json, quick, keep bool
	only              []string
	bin               string
}

func parseFlags(args []string, stderr io.Writer) (options, error) {
	var o options
	fs := flag.NewFlagSet("smbench", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.BoolVar(&o.json, "json", false, "print one JSON document instead of the table")
	fs.BoolVar(&o.quick, "quick", false, "small sizes and short windows (CI smoke: seconds, not minutes)")
	fs.BoolVar(&o.keep, "keep", false, "keep the temp dir")
	only := fs.String("only", "", "run only these workloads, comma-separated: "+strings.Join(workloads, ","))
	fs.StringVar(&o.bin, "bin", "", "the sessionmedic binary (default: build it from this module)")
	fs.Usage = func() {
		fmt.Fprintf(stderr, "usage: smbench [-json] [-quick] [-keep] [-only NAME[,NAME]] [-bin PATH]\n")
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		return o, err
	}
	if fs.NArg() > 0 {
		fs.Usage()
		return o, fmt.Errorf("unexpected arguments: %s", strings.Join(fs.Args(), " "))
	}
	if *only == "" {
		o.only = workloads
		return o, nil
	}
	for _, n := range strings.Split(*only, ",") {
		n = strings.TrimSpace(n)
		if n == "" {
			continue
		}
		known := false
		for _, w := range workloads {
			known = known || w == n
		}
		if !known {
			return o, fmt.Errorf("-only: unknown workload %q (known: %s)", n, strings.Join(workloads, ", "))
		}
		o.only = append(o.only, n)
	}
	if len(o.only) == 0 {
		return o, errors.New("-only: no workload named")
	}
	return o, nil
}

func (o options) selected(name string) bool {
	for _, n := range o.only {
		if n == name {
			return true
		}
	}
	return false
}

// bench is one run: options, the temp dir, the binary, shared workloads.
type bench struct {
	o      options
	tmp    string
	stderr io.Writer
	bin    string
	start  time.Time

	tree      string // the scan tree (shared by scan and idle)
	treeStats treeStats
	treeGen   time.Duration
}

func (b *bench) logf(format string, args ...any) {
	fmt.Fprintf(b.stderr, "smbench %6.1fs  %s\n", time.Since(b.start).Seconds(), fmt.Sprintf(format, args...))
}

// dir makes and returns a directory under the temp dir.
func (b *bench) dir(name string) (string, error) {
	d := filepath.Join(b.tmp, name)
	return d, os.MkdirAll(d, 0o755)
}

// env is a sessionmedic child's environment: home and state inside the temp dir.
func (b *bench) env() []string {
	return childEnv(filepath.Join(b.tmp, "home"), filepath.Join(b.tmp, "state-default"))
}

func run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	o, err := parseFlags(args, stderr)
	if err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0
		}
		fmt.Fprintf(stderr, "smbench: %v\n", err)
		return 2
	}
	started := time.Now()
	tmp, err := os.MkdirTemp("", "smbench-")
	if err != nil {
		fmt.Fprintf(stderr, "smbench: %v\n", err)
		return 1
	}
	if real, err := filepath.EvalSymlinks(tmp); err == nil {
		tmp = real
	}
	b := &bench{o: o, tmp: tmp, stderr: stderr, start: started}
	defer func() {
		if o.keep {
			fmt.Fprintf(stderr, "smbench: kept %s\n", tmp)
			return
		}
		b.logf("removing %s", tmp)
		if err := os.RemoveAll(tmp); err != nil {
			fmt.Fprintf(stderr, "smbench: removing %s: %v\n", tmp, err)
		}
	}()
	for _, d := range []string{"home", "state-default"} {
		if _, err := b.dir(d); err != nil {
			fmt.Fprintf(stderr, "smbench: %v\n", err)
			return 1
		}
	}
	machine := describeMachine()
	mode := "full"
	if o.quick {
		mode = "quick"
	}
	b.logf("%s run of %s in %s; machine: %s", mode, strings.Join(o.only, ","), tmp, machine)

	res := Result{Machine: machine, Quick: o.quick, Started: started.UTC().Format(time.RFC3339)}
	failed := false
	needBin := false
	for _, n := range []string{"e2e", "small", "docs", "scan", "idle", "latency", "bigfile", "healrss", "claude", "apps", "sqlite", "growth"} {
		needBin = needBin || o.selected(n)
	}
	if needBin {
		if b.bin, err = b.binary(ctx); err != nil {
			fmt.Fprintf(stderr, "smbench: %v\n", err)
			return 1
		}
		res.Binary = b.bin
		res.Source = binarySource(b.bin)
		b.logf("sessionmedic binary %s (%s)", b.bin, res.Source)
	}
	for _, name := range workloads {
		if !o.selected(name) {
			continue
		}
		if ctx.Err() != nil {
			break
		}
		t0 := time.Now()
		b.logf("[%s] start", name)
		rows, err := b.runWorkload(ctx, name)
		if err != nil {
			failed = true
			rows = append(rows, Row{Workload: name, Goal: "measurement", Met: metError, Note: err.Error()})
			b.logf("[%s] FAILED: %v", name, err)
		}
		b.logf("[%s] done in %s", name, fmtDur(time.Since(t0).Round(time.Millisecond)))
		res.Rows = append(res.Rows, rows...)
	}
	if ctx.Err() != nil {
		failed = true
		res.Warnings = append(res.Warnings, "interrupted: "+ctx.Err().Error())
	}
	res.Machine.LoadEnd = loadavg()
	res.Seconds = time.Since(started).Seconds()
	if o.json {
		if err := writeJSON(stdout, res); err != nil {
			return 1
		}
	} else {
		fmt.Fprintf(stdout, "sessionmedic benchmark (%s), %s, %.0f s\n", mode, res.Machine, res.Seconds)
		if res.Source != "" {
			fmt.Fprintf(stdout, "sessionmedic built from %s\n", res.Source)
		}
		writeTable(stdout, res.Rows)
		for _, w := range res.Warnings {
			fmt.Fprintf(stdout, "warning: %s\n", w)
		}
	}
	if failed {
		return 1
	}
	return 0
}

// runWorkload runs one workload under its time bound.
func (b *bench) runWorkload(ctx context.Context, name string) ([]Row, error) {
	limit := map[string]time.Duration{
		"validate": 5 * time.Minute, "append": 5 * time.Minute, "e2e": 5 * time.Minute, "small": 5 * time.Minute, "docs": 10 * time.Minute, "scan": 60 * time.Minute,
		"idle": 40 * time.Minute, "latency": 5 * time.Minute, "bigfile": 10 * time.Minute,
		"healrss": 15 * time.Minute, "claude": 20 * time.Minute, "apps": 15 * time.Minute, "sqlite": 15 * time.Minute, "growth": 20 * time.Minute,
	}[name]
	if b.o.quick {
		limit = min(limit, 5*time.Minute)
	}
	ctx, cancel := context.WithTimeout(ctx, limit)
	defer cancel()
	switch name {
	case "validate":
		return b.validate(ctx)
	case "append":
		return b.appendBench(ctx)
	case "e2e":
		return b.e2e(ctx)
	case "small":
		r, err := b.scanSmall(ctx)
		return []Row{r}, err
	case "docs":
		return b.docs(ctx)
	case "scan":
		return b.scan(ctx)
	case "idle":
		return b.idle(ctx)
	case "latency":
		return b.latency(ctx)
	case "bigfile":
		return b.bigfile(ctx)
	case "healrss":
		return b.healrss(ctx)
	case "claude":
		return b.claude(ctx)
	case "apps":
		return b.appsBench(ctx)
	case "sqlite":
		return b.sqliteBench(ctx)
	case "growth":
		return b.growth(ctx)
	}
	return nil, fmt.Errorf("unknown workload %q", name)
}

// binary returns -bin, or builds sessionmedic from the module this command sits in.
func (b *bench) binary(ctx context.Context) (string, error) {
	if b.o.bin != "" {
		p, err := filepath.Abs(b.o.bin)
		if err != nil {
			return "", err
		}
		if fi, err := os.Stat(p); err != nil || fi.IsDir() {
			return "", fmt.Errorf("-bin %s: not a file", b.o.bin)
		}
		return p, nil
	}
	root, err := moduleRoot()
	if err != nil {
		return "", fmt.Errorf("%w (or pass -bin)", err)
	}
	out := filepath.Join(b.tmp, "bin", "sessionmedic")
	b.logf("building %s", out)
	cmd := exec.CommandContext(ctx, goTool(), "build", "-o", out, "github.com/sessionmedic/sessionmedic/cmd/sessionmedic")
	cmd.Dir = root
	if msg, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("go build sessionmedic: %v: %s", err, strings.TrimSpace(string(msg)))
	}
	return out, nil
}

// goTool is the go command: on the PATH, else the one of the toolchain that built this.
func goTool() string {
	if p, err := exec.LookPath("go"); err == nil {
		return p
	}
	return filepath.Join(runtime.GOROOT(), "bin", "go")
}

// moduleRoot walks up from the working directory to this module's go.mod.
func moduleRoot() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		if data, err := os.ReadFile(filepath.Join(dir, "go.mod")); err == nil {
			if strings.Contains(string(data), "module github.com/sessionmedic/sessionmedic\n") {
				return dir, nil
			}
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", errors.New("no go.mod of github.com/sessionmedic/sessionmedic above the working directory")
		}
		dir = parent
	}
}

// binarySource says which source a Go binary was built from (its embedded VCS stamp).
func binarySource(bin string) string {
	bi, err := buildinfo.ReadFile(bin)
	if err != nil {
		return "unknown"
	}
	var rev, modified string
	for _, kv := range bi.Settings {
		switch kv.Key {
		case "vcs.revision":
			rev = kv.Value
		case "vcs.modified":
			modified = kv.Value
		}
	}
	if rev == "" {
		return "the working tree (no VCS stamp), " + bi.GoVersion
	}
	if len(rev) > 12 {
		rev = rev[:12]
	}
	if modified == "true" {
		rev += " with uncommitted changes"
	}
	return "revision " + rev + ", " + bi.GoVersion
}
