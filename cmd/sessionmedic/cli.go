package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"path/filepath"
	"runtime/debug"
	"strings"
	"syscall"
	"time"

	"github.com/sessionmedic/sessionmedic/policy"
	"golang.org/x/sys/unix"
)

// Exit codes (DESIGN §3).
const (
	exitOK       = 0
	exitDamage   = 1
	exitUsage    = 2
	exitInternal = 3
)

// stepHook, when set (crashpoints build tag), is called at each step of the heal protocol.
var stepHook func(step, path string)

const usage = `usage:
  sessionmedic run        [-config FILE [-watch-config]] [-log-format auto|text|json] [-log-level debug|info|warn|error]
  sessionmedic check      [-config FILE] [-preset NAME] [-json] [PATH ...]
  sessionmedic heal       [-config FILE] [-preset NAME] [-dry-run] [-json] [PATH ...]
  sessionmedic quarantine list|show ID|restore ID [-preset P PATH...] [-config FILE] [-json]
  sessionmedic policy     [-config FILE]
  sessionmedic demo       [-keep DIR]
  sessionmedic version
`

// graceFor bounds the stop of a command after its first signal: the daemon lets its
// inspections in flight finish (DESIGN: it stops within 10 s); a one-shot command ends within
// a second, whatever it is doing: a heal still in progress then is cut as by a crash, which
// its journal resolves at the next start.
func graceFor(args []string) time.Duration {
	if len(args) > 0 && (args[0] == "run" || args[0] == "demo") {
		return 10 * time.Second
	}
	return time.Second
}

// interrupted is the cause of a command's context ending on SIGINT or SIGTERM. A command cut
// short by it exits 128 + the signal's number (130, 143), as a shell reports a process the
// signal killed; `run` stops cleanly instead and exits 0.
type interrupted struct{ sig syscall.Signal }

func (i interrupted) Error() string { return "interrupted by " + unix.SignalName(i.sig) }

// Is makes an interruption a cancellation for code that only knows context.Canceled.
func (interrupted) Is(target error) bool { return target == context.Canceled }

func (i interrupted) code() int { return 128 + int(i.sig) }

// signalContext returns a context cancelled, with an interrupted cause, by the first SIGINT
// or SIGTERM. signal.NotifyContext would do, but its cause does not carry the signal, and the
// exit code does. Whatever the command is doing, a second signal, or grace after the first,
// exits at once: the heal protocol's journal covers a heal cut short.
func signalContext(parent context.Context, stderr io.Writer, grace time.Duration) (context.Context, func()) {
	ctx, cancel := context.WithCancelCause(parent)
	sigs := make(chan os.Signal, 2)
	signal.Notify(sigs, syscall.SIGINT, syscall.SIGTERM)
	done := make(chan struct{})
	go func() {
		var first interrupted
		var deadline <-chan time.Time
		for {
			select {
			case s := <-sigs:
				sig := s.(syscall.Signal)
				if deadline != nil {
					fmt.Fprintf(stderr, "sessionmedic: second signal (%s), exiting now\n", unix.SignalName(sig))
					os.Exit(interrupted{sig}.code())
				}
				first = interrupted{sig}
				cancel(first)
				deadline = time.After(grace)
			case <-deadline:
				fmt.Fprintf(stderr, "sessionmedic: not stopped %v after %s, exiting now\n", grace, unix.SignalName(first.sig))
				os.Exit(first.code())
			case <-done:
				return
			}
		}
	}()
	return ctx, func() {
		signal.Stop(sigs)
		close(done)
		cancel(nil)
	}
}

// usageError is a mistake in the command line: exit 2.
type usageError struct{ msg string }

func (e usageError) Error() string { return e.msg }

// argError is an argument naming nothing there (a PATH, a quarantine ID): exit 2 with its
// one line, without the usage.
type argError struct{ error }

func (e argError) Unwrap() error { return e.error }

// helpRequested: -h or -help on a command; its usage goes to stdout, exit 0.
type helpRequested struct{ fs *flag.FlagSet }

func (helpRequested) Error() string { return "help requested" }

// printHelp writes a command's line of the usage and its flags.
func printHelp(w io.Writer, fs *flag.FlagSet) {
	fmt.Fprintln(w, "usage:")
	for _, line := range strings.Split(usage, "\n") {
		if f := strings.Fields(line); len(f) > 1 && f[1] == fs.Name() {
			fmt.Fprintln(w, line)
		}
	}
	if hasFlags(fs) {
		fmt.Fprintln(w, "\nflags:")
		fs.SetOutput(w)
		fs.PrintDefaults()
	}
}

func hasFlags(fs *flag.FlagSet) bool {
	n := 0
	fs.VisitAll(func(*flag.Flag) { n++ })
	return n > 0
}

// run is the whole program; main only wires the process to it.
func run(ctx context.Context, args []string, stdout, stderr io.Writer) (code int) {
	defer func() {
		if p := recover(); p != nil {
			fmt.Fprintf(stderr, "sessionmedic: internal error: %v\n", p)
			if os.Getenv("SESSIONMEDIC_DEBUG") != "" {
				stderr.Write(debug.Stack())
			}
			code = exitInternal
		}
	}()
	if len(args) == 0 {
		fmt.Fprint(stderr, usage)
		return exitUsage
	}
	var err error
	switch args[0] {
	case "run":
		code, err = cmdRun(ctx, args[1:], stdout, stderr)
	case "check":
		code, err = cmdScan(ctx, args[1:], stdout, stderr, false)
	case "heal":
		code, err = cmdScan(ctx, args[1:], stdout, stderr, true)
	case "quarantine":
		code, err = cmdQuarantine(ctx, args[1:], stdout, stderr)
	case "policy":
		code, err = cmdPolicy(args[1:], stdout, stderr)
	case "demo":
		code, err = cmdDemo(ctx, args[1:], stdout, stderr)
	case "version", "-version", "--version":
		code, err = cmdVersion(args[1:], stdout)
	case "help", "-h", "-help", "--help":
		fmt.Fprint(stdout, usage)
		return exitOK
	default:
		err = usageError{fmt.Sprintf("unknown command %q", args[0])}
	}
	if err != nil {
		var le loggedError
		if errors.As(err, &le) {
			return le.code // already in the log
		}
		var hr helpRequested
		if errors.As(err, &hr) {
			printHelp(stdout, hr.fs)
			return exitOK
		}
		// A policy's errors are one a line, each FILE:LINE: FIELD: MESSAGE.
		for _, line := range strings.Split(err.Error(), "\n") {
			fmt.Fprintf(stderr, "sessionmedic: %s\n", escapeText(line))
		}
		var ue usageError
		var pe *policy.Error
		var ie interrupted
		switch {
		case errors.As(err, &ie):
			return ie.code()
		case errors.As(err, &ue):
			fmt.Fprint(stderr, usage)
			return exitUsage
		case errors.As(err, &pe), errors.As(err, new(configError)), errors.As(err, new(argError)):
			return exitUsage
		case code != exitOK:
			return code
		}
		return exitInternal
	}
	return code
}

// configError: the policy file could not be read, or what it names cannot be used (an
// unusable state_dir, an address in use). Like a bad policy, exit 2.
type configError struct{ error }

func (e configError) Unwrap() error { return e.error }

// loggedError is a fatal error already written to the log (as sessionmedic.fatal): run only
// turns it into its exit code.
type loggedError struct {
	error
	code int
}

// parseInterleaved parses flags that may stand before or after the positional arguments.
func parseInterleaved(fs *flag.FlagSet, args []string) ([]string, error) {
	var pos []string
	for {
		if err := fs.Parse(args); errors.Is(err, flag.ErrHelp) {
			return nil, helpRequested{fs}
		} else if err != nil {
			return nil, usageError{err.Error()}
		}
		args = fs.Args()
		if len(args) == 0 {
			return pos, emptyValue(fs)
		}
		pos = append(pos, args[0])
		args = args[1:]
	}
}

// emptyValue refuses a flag given an empty value (-preset ""): every flag that takes a value
// needs one, and an empty one would be taken as not given.
func emptyValue(fs *flag.FlagSet) error {
	var err error
	fs.Visit(func(f *flag.Flag) {
		if b, ok := f.Value.(interface{ IsBoolFlag() bool }); err == nil && f.Value.String() == "" && !(ok && b.IsBoolFlag()) {
			err = usageError{fmt.Sprintf("flag -%s: empty value", f.Name)}
		}
	})
	return err
}

// common flags of the file commands.
type common struct {
	config, preset string
	json           bool
}

func (c *common) register(fs *flag.FlagSet) {
	fs.StringVar(&c.config, "config", "", "policy `file` (default: the embedded default policy)")
	fs.StringVar(&c.preset, "preset", "", "app `preset` for PATH arguments no rule covers")
	fs.BoolVar(&c.json, "json", false, "print one JSON object per file")
}

// loadPolicy loads -config, or the embedded default restricted to locations that exist.
func loadPolicy(file string, stderr io.Writer, quiet bool) (*policy.Config, error) {
	if file != "" {
		cfg, err := policy.Load(file)
		var pe *policy.Error
		if err != nil && !errors.As(err, &pe) {
			return nil, configError{err}
		}
		if err != nil {
			return nil, err
		}
		return cfg, nil
	}
	env := policy.SystemEnv()
	cfg, skipped := policy.Default(env).Existing(env)
	if !quiet && len(skipped) > 0 {
		fmt.Fprintf(stderr, "sessionmedic: embedded default policy; skipped default locations that do not exist: %s\n", strings.Join(skipped, ", "))
	}
	return cfg, nil
}

// withPreset puts a rule of the named preset over the PATH arguments first in the policy.
func withPreset(cfg *policy.Config, preset string, paths []string) (*policy.Config, error) {
	if preset == "" {
		return cfg, nil
	}
	r, ok := policy.PresetRule(preset, policy.SystemEnv())
	if !ok {
		return nil, usageError{fmt.Sprintf("unknown preset %q (known: %s)", preset, strings.Join(policy.PresetChoices(), ", "))}
	}
	r.Name = preset + "-args"
	r.Paths = nil
	for _, p := range paths {
		abs, err := filepath.Abs(p)
		if err != nil {
			return nil, err
		}
		if fi, err := os.Stat(abs); err == nil && !fi.IsDir() {
			abs = filepath.Dir(abs)
		}
		r.Paths = append(r.Paths, abs)
	}
	c := *cfg
	c.Rules = append([]policy.Rule{r}, cfg.Rules...)
	return &c, nil
}

// autoRule judges a file no rule covers by its extension: plain JSON or JSONL.
func autoRule(format string) *policy.Rule {
	return &policy.Rule{
		Name: "auto-" + format, Format: format, Lock: policy.Lock{Protocol: "none"},
		Strategies: []policy.Strategy{"salvage", "last-good"}, KeepLastGood: true, Mode: "heal",
		Limits: policy.Limits{MaxLoss: 0.5, MaxFileSize: 1 << 30},
	}
}

// The rules of files found by extension: one of each, shared read-only by every target.
var autoJSON, autoJSONL = autoRule("json"), autoRule("jsonl")

// byExtension resolves PATH arguments no rule covers.
func byExtension(p string) *policy.Rule {
	switch filepath.Ext(p) {
	case ".json":
		return autoJSON
	case ".jsonl":
		return autoJSONL
	}
	return nil
}

func newLogger(w io.Writer) *slog.Logger {
	return slog.New(logHandler(w, "auto", nil))
}

func isTerminal(f *os.File) bool {
	fi, err := f.Stat()
	return err == nil && fi.Mode()&os.ModeCharDevice != 0 && os.Getenv("TERM") != "dumb"
}
