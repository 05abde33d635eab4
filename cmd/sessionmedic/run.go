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
	"slices"
	"strings"
	"syscall"
	"time"

	"github.com/lmittmann/tint"
	"github.com/sessionmedic/sessionmedic/daemon"
	"github.com/sessionmedic/sessionmedic/daemon/events"
	"github.com/sessionmedic/sessionmedic/policy"
)

func cmdRun(ctx context.Context, args []string, stdout, stderr io.Writer) (int, error) {
	fs := flag.NewFlagSet("run", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	config := fs.String("config", "", "policy `file` (default: the embedded default policy)")
	format := fs.String("log-format", "", "auto|text|json (default: the policy's log.format)")
	level := fs.String("log-level", "", "debug|info|warn|error (default: the policy's log.level)")
	watch := fs.Bool("watch-config", false, "reload when the -config file changes on disk")
	// early ends run on an error said before its policy is loaded: as a log line where the
	// log would be JSON (earlyJSON: under journald, or as the flag or the policy says), else
	// as a plain line, as every command says its errors.
	early := func(err error, flagFormat string) (int, error) {
		if errors.As(err, new(helpRequested)) || !earlyJSON(flagFormat, *config, err, stderr) {
			return 0, err
		}
		return fatal(slog.New(logHandler(stderr, "json", nil)), err)
	}
	pos, err := parseInterleaved(fs, args)
	if err != nil {
		return early(err, "")
	}
	given := "" // the -log-format flag, once it is known to be one
	if slices.Contains([]string{"auto", "text", "json"}, *format) {
		given = *format
	}
	if len(pos) > 0 {
		return early(usageError{"run takes no arguments"}, given)
	}
	if *watch && *config == "" {
		return early(usageError{"-watch-config needs -config"}, given)
	}
	for _, f := range []struct {
		name, value string
		allowed     []string
	}{
		{"-log-format", *format, []string{"auto", "text", "json"}},
		{"-log-level", *level, []string{"debug", "info", "warn", "error"}},
	} {
		if f.value != "" && !slices.Contains(f.allowed, f.value) {
			return early(usageError{fmt.Sprintf("%s: unknown value %q (want %s)", f.name, f.value, strings.Join(f.allowed, ", "))}, "")
		}
	}
	load := func() (*policy.Config, []string, error) {
		if *config != "" {
			cfg, err := loadPolicy(*config, stderr, true)
			return cfg, nil, err
		}
		env := policy.SystemEnv()
		cfg, skipped := policy.Default(env).Existing(env)
		return cfg, skipped, nil
	}
	cfg, skipped, err := load()
	if err != nil {
		return early(err, *format)
	}
	lv := new(slog.LevelVar)
	f := *format
	if f == "" {
		f = cfg.Log.Format
	}
	log := slog.New(logHandler(stderr, f, lv))
	source := *config
	if source == "" {
		source = policy.DefaultSource
	}
	fixedLevel := *level != ""
	levelVar := lv
	if fixedLevel {
		lv.Set(levelOf(*level))
		levelVar = nil // the flag wins over the policy, on reload too
	}

	if err := checkStateDir(cfg.StateDir, true); err != nil {
		return fatal(log, err)
	}
	lock, err := lockStateDir(cfg.StateDir)
	if err != nil {
		return fatal(log, err)
	}
	defer lock.Close() // held until the daemon has stopped

	// SIGINT and SIGTERM cancel ctx (signalContext); SIGHUP reloads, and so does a change of
	// the policy file with -watch-config.
	reload := make(chan struct{}, 1)
	hup := make(chan os.Signal, 1)
	signal.Notify(hup, syscall.SIGHUP)
	defer signal.Stop(hup)
	hupDone := make(chan struct{})
	defer close(hupDone)
	go func() {
		for {
			select {
			case <-hup:
				select {
				case reload <- struct{}{}:
				default:
				}
			case <-hupDone:
				return
			}
		}
	}()
	// The policy whose state_dir was checked and locked is the one the daemon starts with;
	// later loads are reloads, and the daemon refuses one that moves state_dir.
	first := true
	opts := daemon.Options{
		Load: func() (*policy.Config, []string, error) {
			if first {
				first = false
				return cfg, skipped, nil
			}
			return load()
		},
		Source: source, Log: log, Level: levelVar, Reload: reload, Version: buildVersion(), Revision: currentBuild().Revision,
		Step: stepHook,
	}
	if *watch {
		opts.WatchConfig = *config
	}
	err = daemon.Run(ctx, opts)
	if err != nil {
		return fatal(log, err)
	}
	return exitOK, nil
}

// fatal ends `run` on an error that keeps it from starting. Under a JSON log it is one
// sessionmedic.fatal line of that log (a jq pipeline reading the log still parses it), after
// one policy.invalid line per error of a policy that did not load (its file, line and field
// as keys); otherwise run prints it as a plain line, as for every command.
func fatal(log *slog.Logger, err error) (int, error) {
	code := exitInternal
	var pe *policy.Error
	if errors.As(err, new(configError)) || errors.As(err, &pe) || errors.As(err, new(*daemon.ConfigError)) || errors.As(err, new(usageError)) {
		code = exitUsage
	}
	if _, ok := log.Handler().(*slog.JSONHandler); !ok {
		if errors.As(err, new(usageError)) {
			return 0, err // with the usage
		}
		if code == exitUsage {
			return 0, configError{err}
		}
		return code, err
	}
	logPolicyErrors(log, err)
	log.Error(events.Fatal, "err", err)
	return code, loggedError{err, code}
}

func levelOf(s string) slog.Level {
	var l slog.Level
	_ = l.UnmarshalText([]byte(s))
	return l
}

// logHandler: tint with colour on a terminal, JSON otherwise (or as the format says).
func logHandler(w io.Writer, format string, lv *slog.LevelVar) slog.Handler {
	var level slog.Leveler = slog.LevelInfo
	if lv != nil {
		level = lv
	}
	if format == "auto" || format == "" {
		format = "json"
		if f, ok := w.(*os.File); ok && isTerminal(f) {
			format = "text"
		}
	}
	if format == "text" {
		noColor := true
		if f, ok := w.(*os.File); ok && isTerminal(f) {
			noColor = false
		}
		return tint.NewHandler(w, &tint.Options{Level: level, NoColor: noColor, TimeFormat: time.DateTime, ReplaceAttr: escapeAttrs})
	}
	return slog.NewJSONHandler(w, &slog.HandlerOptions{Level: level})
}
