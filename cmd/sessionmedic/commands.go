package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	iofs "io/fs"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/sessionmedic/sessionmedic/daemon/events"
	"github.com/sessionmedic/sessionmedic/heal"
	"github.com/sessionmedic/sessionmedic/heal/state"
	"github.com/sessionmedic/sessionmedic/internal/pathx"
	"github.com/sessionmedic/sessionmedic/internal/workpool"
	"github.com/sessionmedic/sessionmedic/policy"
)

// cmdScan is `check` (write nothing) and `heal` (repair what the policy allows).
func cmdScan(ctx context.Context, args []string, stdout, stderr io.Writer, doHeal bool) (int, error) {
	name := "check"
	if doHeal {
		name = "heal"
	}
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	var c common
	c.register(fs)
	dry := false
	if doHeal {
		fs.BoolVar(&dry, "dry-run", false, "say what would be healed; write nothing")
	}
	paths, err := parseInterleaved(fs, args)
	if err != nil {
		return 0, err
	}
	for _, p := range paths {
		if _, err := os.Lstat(p); errors.Is(err, os.ErrNotExist) {
			return 0, argError{fmt.Errorf("%s: no such file or directory", p)}
		}
	}
	cfg, err := loadPolicy(c.config, stderr, c.json || len(paths) > 0)
	if err != nil {
		return 0, err
	}
	if c.preset != "" && len(paths) == 0 {
		return 0, usageError{"-preset needs PATH arguments"}
	}
	if cfg, err = withPreset(cfg, c.preset, paths); err != nil {
		return 0, err
	}
	writes := doHeal && !dry
	if err := checkStateDir(cfg.StateDir, writes); err != nil {
		return 0, err
	}
	eng := heal.New(cfg, heal.Options{OneShot: true, Step: stepHook}) // each file is inspected once
	log := newLogger(stderr)
	if writes {
		rec, err := eng.Recover()
		if err != nil {
			return 0, fmt.Errorf("journal recovery: %w", err)
		}
		for _, r := range rec {
			log.Warn(events.JournalRecovered, "path", r.Path, "id", r.ID, "outcome", r.Outcome)
		}
	}
	var resolve heal.Resolver
	if len(paths) > 0 {
		resolve = byExtension
	}
	targets, errs, err := walk(ctx, eng, paths, resolve)
	if err != nil {
		return 0, fmt.Errorf("%w while listing the files", err)
	}
	if err := undetected(errs, c.preset); err != nil {
		return 0, err
	}
	targets, errs = unreadableDirs(cfg, targets, errs)
	if len(paths) > 0 {
		// The operator named these: a restore of theirs no longer holds them back.
		for i := range targets {
			targets[i].Override = true
		}
	}
	for _, e := range errs {
		fmt.Fprintf(stderr, "sessionmedic: %s\n", escapeText(e.Error()))
	}
	var cov []events.RootCoverage
	if len(paths) == 0 {
		// What each rule path guards: a path that is missing or holds nothing is said (one
		// that cannot be read is said as a skipped line instead).
		cov = readableCoverage(events.Coverage(cfg, targets), targets)
		events.Announce(log, cov)
		if len(cfg.Rules) == 0 && c.config == "" {
			env := policy.SystemEnv()
			_, lookedAt := policy.Default(env).Existing(env)
			events.AnnounceNothing(log, lookedAt)
		}
	}
	// Reports are written through a buffer, flushed whenever none is waiting: a line per
	// file without a write(2) per file.
	bw := bufio.NewWriterSize(stdout, 64<<10)
	defer bw.Flush()
	enc := json.NewEncoder(bw)
	tw := tabwriter.NewWriter(bw, 0, 4, 2, ' ', 0)
	var counts = map[string]int{}
	code := exitOK
	reports := inspectAll(ctx, eng, targets, doHeal, dry)
	// On a signal, a command that writes nothing stops at once; a heal lets the heals in
	// progress finish (inspectAll starts no new one) and reports them.
	var stop <-chan struct{}
	if !writes {
		stop = ctx.Done()
	}
	done := 0
	for {
		var r heal.Report
		var ok bool
		select {
		case r, ok = <-reports:
		case <-stop:
		}
		if !ok {
			break
		}
		if r.Path == "" {
			continue // not inspected: interrupted
		}
		done++
		counts[string(r.Verdict)]++
		if unreadable(r) {
			counts["unreadable"]++
		} else if r.NotJudged {
			counts["notjudged"]++
		}
		if r.InternalError != "" {
			counts["internal"]++
			if os.Getenv("SESSIONMEDIC_DEBUG") != "" {
				stderr.Write(r.Stack)
			}
		}
		if r.Action == heal.ActionHealed {
			counts["healed"]++
		}
		if unresolved(r, doHeal, dry) {
			code = exitDamage
		}
		events.Report(log, r)
		if c.json {
			if err := enc.Encode(r); err != nil {
				return exitInternal, err
			}
		} else {
			printReport(tw, r)
		}
		if len(reports) == 0 && c.json {
			if err := bw.Flush(); err != nil {
				return exitInternal, err
			}
		}
	}
	if done < len(targets) && ctx.Err() != nil {
		tw.Flush() // the reports so far stand
		return 0, fmt.Errorf("%w after %d of %d files", context.Cause(ctx), done, len(targets))
	}
	if writes {
		if err := eng.Prune(); err != nil {
			fmt.Fprintf(stderr, "sessionmedic: state retention: %v\n", err)
		}
	}
	if !c.json {
		printCoverage(tw, cov)
		tw.Flush()
		fmt.Fprintf(bw, "%d files: %d healthy, %d damaged (%d healed), %d busy, %d skipped",
			len(targets), counts["healthy"], counts["damaged"], counts["healed"], counts["busy"], counts["skipped"])
		if counts["unreadable"] > 0 {
			fmt.Fprintf(bw, " (%d unreadable)", counts["unreadable"])
		}
		if counts["notjudged"] > 0 {
			fmt.Fprintf(bw, " (%d not judged)", counts["notjudged"])
		}
		if counts["internal"] > 0 {
			fmt.Fprintf(bw, " (%d not judged: internal error)", counts["internal"])
		}
		fmt.Fprintln(bw)
	}
	// What is said on stderr below follows the reports: they are written out first.
	if counts["unreadable"]+len(errs)+counts["notjudged"]+counts["internal"] > 0 {
		if err := bw.Flush(); err != nil {
			return exitInternal, err
		}
	}
	// What could not be read is not known to be guarded, and no heal changes that: the
	// operator must (exit 2, over damage found), and is told on stderr as well.
	if n := counts["unreadable"] + len(errs); n > 0 {
		where := "each on a skipped line"
		if len(errs) > 0 {
			where = "each on a skipped line or an error line above"
		}
		fmt.Fprintf(stderr, "sessionmedic: %d unreadable (%s): the sessions there are not checked; "+
			"run as a user who can read them, or give this one read access\n", n, where)
		code = exitUsage
	}
	// A session file not judged (over its rule's max_file_size, not to be judged within the
	// memory bounds) is not guarded: the operator must (exit 2, as for what could not be
	// read), and is told on stderr as well.
	if n := counts["notjudged"]; n > 0 {
		fmt.Fprintf(stderr, "sessionmedic: %d not judged (each on a skipped line, with why): those sessions are not checked; "+
			"one over max_file_size is judged once the rule's limits.max_file_size is raised\n", n)
		code = exitUsage
	}
	// A file whose judge raised a panic (contained there) is not guarded either: a defect
	// to report (exit 3, over damage and what could not be read).
	if n := counts["internal"]; n > 0 {
		fmt.Fprintf(stderr, "sessionmedic: %d not judged (an internal error, each on a skipped line): those sessions are not checked; "+
			"please report it with those lines (SESSIONMEDIC_DEBUG=1 prints where it happened)\n", n)
		code = exitInternal
	}
	return code, nil
}

// unreadable: r is an entry that could not be read (a file, or a directory of the tree), as
// heal and unreadableDirs word it.
func unreadable(r heal.Report) bool {
	return r.Verdict == heal.Skipped && strings.HasPrefix(r.Detail, "unreadable")
}

// readableCoverage drops what cov says of a rule path that is itself among the targets as
// unreadable: it does not hold "no file", it cannot be read.
func readableCoverage(cov []events.RootCoverage, targets []heal.Target) []events.RootCoverage {
	skipped := map[string]bool{}
	for _, t := range targets {
		if strings.HasPrefix(t.Skip, "unreadable") {
			skipped[t.Path] = true
		}
	}
	return slices.DeleteFunc(cov, func(c events.RootCoverage) bool { return !c.Missing && skipped[c.Path] })
}

// undetected is the usage error of the files named on the command line whose format no rule
// and no detection gives (one line each), or nil: the operator must say what they are.
func undetected(errs []error, preset string) error {
	var lines []string
	for _, err := range errs {
		var pe *iofs.PathError
		if !errors.As(err, &pe) || !errors.Is(err, heal.ErrNoRule) {
			continue
		}
		what := "no rule covers it"
		if preset != "" {
			what = "it is not a file of preset " + preset + " (its patterns do not match it)"
		}
		lines = append(lines, fmt.Sprintf("%s: %s and its format cannot be detected from its name (.json, .jsonl): "+
			"name the app it belongs to with -preset NAME, or cover it with a rule of a -config policy", quoteName(pe.Path), what))
	}
	if lines == nil {
		return nil
	}
	return argError{errors.New(strings.Join(lines, "\n"))}
}

// unreadableDirs turns the walk's errors for directories that cannot be read into skipped
// targets, reported (and counted) like an unreadable file; the other errors stay errors.
func unreadableDirs(cfg *policy.Config, targets []heal.Target, errs []error) ([]heal.Target, []error) {
	var rest []error
	for _, err := range errs {
		var pe *iofs.PathError
		if !errors.As(err, &pe) || !errors.Is(err, iofs.ErrPermission) || !isDir(pe.Path) {
			rest = append(rest, err)
			continue
		}
		rule := &policy.Rule{Name: "-"}
		for i := range cfg.Rules {
			for _, p := range cfg.Rules[i].Paths {
				if rule.Name == "-" && pathx.Within(p, pe.Path) {
					rule = &cfg.Rules[i]
				}
			}
		}
		targets = append(targets, heal.Target{Path: pe.Path, Rule: rule, Skip: "unreadable directory: " + pe.Err.Error()})
	}
	return targets, rest
}

func isDir(p string) bool { fi, err := os.Lstat(p); return err == nil && fi.IsDir() }

// printCoverage lists the rule paths that guard nothing.
func printCoverage(w io.Writer, cov []events.RootCoverage) {
	for _, c := range cov {
		switch {
		case c.Missing:
			why := "does not exist"
			if c.Err != "" {
				why = "cannot be read: " + c.Err
			}
			fmt.Fprintf(w, "missing\t%s\t%s\tthe rule's path %s: nothing is guarded there\n", c.Rule, quoteName(c.Path), escapeText(why))
		case c.Files == 0 && c.ShadowedBy != "":
			fmt.Fprintf(w, "no-files\t%s\t%s\tshadowed by rule %s, earlier in the policy, which takes every file this rule matches there\n",
				c.Rule, quoteName(c.Path), escapeText(c.ShadowedBy))
		case c.Files == 0:
			fmt.Fprintf(w, "no-files\t%s\t%s\tno file matches %s\n", c.Rule, quoteName(c.Path), escapeText(strings.Join(c.Patterns, ", ")))
		}
	}
}

// unresolved: check found damage, or heal left damage (or a busy file) unhealed, or a dry
// run found damage (or a file a heal would find busy).
func unresolved(r heal.Report, doHeal, dry bool) bool {
	switch {
	case dry:
		return r.Verdict == heal.Damaged || r.Verdict == heal.Busy
	case !doHeal:
		return r.Verdict == heal.Damaged
	case r.Verdict == heal.Busy:
		return true
	default:
		return r.Verdict == heal.Damaged && r.Action != heal.ActionHealed
	}
}

// printReport writes one line for r: its name quoted and its texts escaped where they hold
// control characters (quoteName, escapeText), so that no file name can forge a line.
func printReport(w io.Writer, r heal.Report) {
	r.Path, r.Detail, r.Reason, r.Quarantine = quoteName(r.Path), escapeText(r.Detail), escapeText(r.Reason), escapeText(r.Quarantine)
	switch {
	case r.Verdict == heal.Healthy && r.Action != heal.ActionHealed:
		fmt.Fprintf(w, "healthy\t%s\t%s\n", r.Rule, r.Path)
	case r.Verdict == heal.Damaged && r.Action == heal.ActionHealed:
		fmt.Fprintf(w, "healed\t%s\t%s\t%s at %d -> %s (lost %d records, %d bytes); original in %s\n",
			r.Rule, r.Path, r.Kind, r.Offset, r.Strategy, r.LostRecords, r.LostBytes, r.Quarantine)
	case r.Verdict == heal.Damaged && r.Action == heal.ActionWouldHeal:
		fmt.Fprintf(w, "would-heal\t%s\t%s\t%s at %d -> %s (would lose %d records, %d bytes)\n",
			r.Rule, r.Path, r.Kind, r.Offset, r.Strategy, r.LostRecords, r.LostBytes)
	case r.Verdict == heal.Damaged && r.Action == heal.ActionRefused:
		fmt.Fprintf(w, "refused\t%s\t%s\t%s at %d: %s; not healed: %s\n", r.Rule, r.Path, r.Kind, r.Offset, r.Detail, r.Reason)
	case r.Verdict == heal.Damaged && r.HandsOff:
		fmt.Fprintf(w, "damaged\t%s\t%s\t%s at %d: %s; hands off: %s\n", r.Rule, r.Path, r.Kind, r.Offset, r.Detail, r.Reason)
	case r.Verdict == heal.Damaged:
		fmt.Fprintf(w, "damaged\t%s\t%s\t%s at %d: %s\n", r.Rule, r.Path, r.Kind, r.Offset, r.Detail)
	case r.Verdict == heal.Busy && r.Reason != "" && r.Kind != "" && r.Kind != string(heal.Busy):
		// Damage found, and a holder keeps the heal off: both are said.
		fmt.Fprintf(w, "busy\t%s\t%s\t%s at %d: %s; not healed: %s\n", r.Rule, r.Path, r.Kind, r.Offset, r.Detail, r.Reason)
	default:
		reason := r.Detail
		if r.Reason != "" {
			reason = r.Reason
		}
		fmt.Fprintf(w, "%s\t%s\t%s\t%s\n", r.Verdict, r.Rule, r.Path, reason)
	}
}

// quarantineFlags are the flags each quarantine subcommand uses.
var quarantineFlags = map[string][]string{
	"list":    {"config", "json"},
	"show":    {"config", "json"},
	"restore": {"config", "preset"},
}

func cmdQuarantine(ctx context.Context, args []string, stdout, stderr io.Writer) (int, error) {
	fs := flag.NewFlagSet("quarantine", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	var c common
	c.register(fs)
	pos, err := parseInterleaved(fs, args)
	if err != nil {
		return 0, err
	}
	if len(pos) == 0 {
		return 0, usageError{"quarantine needs list, show ID or restore ID"}
	}
	// Each subcommand takes only the flags it uses: one it would ignore is refused.
	if takes, ok := quarantineFlags[pos[0]]; ok {
		var bad error
		fs.Visit(func(f *flag.Flag) {
			if bad == nil && !slices.Contains(takes, f.Name) {
				bad = usageError{fmt.Sprintf("quarantine %s does not take -%s (it takes -%s)", pos[0], f.Name, strings.Join(takes, ", -"))}
			}
		})
		if bad != nil {
			return 0, bad
		}
	}
	cfg, err := loadPolicy(c.config, stderr, true)
	if err != nil {
		return 0, err
	}
	// restore ID -preset P PATH...: the rule a heal with -preset P PATH... used guards the
	// target again (a restore writes only where a rule guards).
	if pos[0] == "restore" && len(pos) > 2 {
		if c.preset == "" {
			return 0, usageError{"quarantine restore takes ID, and PATH arguments only with -preset"}
		}
		if cfg, err = withPreset(cfg, c.preset, pos[2:]); err != nil {
			return 0, err
		}
		pos = pos[:2]
	} else if c.preset != "" {
		return 0, usageError{"-preset needs PATH arguments (quarantine restore ID -preset P PATH...)"}
	}
	if err := checkStateDir(cfg.StateDir, pos[0] == "restore"); err != nil {
		return 0, err
	}
	eng := heal.New(cfg, heal.Options{Step: stepHook})
	switch {
	case pos[0] == "list" && len(pos) == 1:
		all, err := eng.Quarantine.List()
		if err != nil {
			return 0, err
		}
		inFlight(eng, all...)
		tw := tabwriter.NewWriter(stdout, 0, 4, 2, ' ', 0)
		for _, m := range all {
			if c.json {
				json.NewEncoder(stdout).Encode(m)
				continue
			}
			size := fmt.Sprintf("%d bytes", m.Size)
			if m.Prefix > 0 {
				size = fmt.Sprintf("%d bytes (the tail of %d)", m.Holds(), m.Size)
			}
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\n", m.ID, escapeText(m.Status), escapeText(m.Kind), escapeText(m.Strategy), size, quoteName(m.Path))
		}
		tw.Flush()
		return exitOK, nil
	case pos[0] == "show" && len(pos) == 2:
		m, err := eng.Quarantine.Get(pos[1])
		if errors.Is(err, state.ErrUnknownID) {
			return 0, argError{err}
		}
		if err != nil {
			return exitInternal, err
		}
		inFlight(eng, m)
		if c.json { // one compact object, as every -json output
			return exitOK, json.NewEncoder(stdout).Encode(m)
		}
		b, _ := json.MarshalIndent(m, "", "  ")
		fmt.Fprintf(stdout, "%s\nbytes: %s\n", b, quoteName(filepath.Join(m.Dir, m.File)))
		if m.Prefix > 0 {
			fmt.Fprintf(stdout, "tail: the bytes are the original's from offset %d on (a tail cut); its first %d bytes were left in the file\n", m.Prefix, m.Prefix)
		}
		fmt.Fprintf(stdout, "status: %s\n", statusText(m.Status))
		return exitOK, nil
	case pos[0] == "restore" && len(pos) == 2:
		m, err := eng.Quarantine.Get(pos[1])
		if errors.Is(err, state.ErrUnknownID) {
			return 0, argError{err}
		}
		if err != nil {
			return exitInternal, err
		}
		// A manifest is a record, never an instruction (DESIGN §4): the target must be a
		// file a rule of the current policy guards, and is reached, locked and written as a
		// heal of it would be.
		rule, _, ok := cfg.RuleFor(m.Path)
		if !ok {
			by := fmt.Sprintf("copy the bytes shown by 'quarantine show %s' by hand", m.ID)
			if m.Prefix > 0 {
				by = fmt.Sprintf("put the bytes shown by 'quarantine show %s' back by hand after the file's first %d bytes", m.ID, m.Prefix)
			}
			return 0, argError{fmt.Errorf("restore %s: %s is guarded by no rule of the current policy: a restore writes only where a rule guards (add a rule for it, or %s)", m.ID, m.Path, by)}
		}
		r, err := eng.Restore(ctx, m, heal.Target{Path: m.Path, Rule: rule})
		if err != nil && ctx.Err() != nil && errors.Is(err, context.Canceled) {
			return 0, fmt.Errorf("restore %s: %w", m.ID, context.Cause(ctx))
		}
		if err != nil {
			return exitDamage, fmt.Errorf("restore %s: %w", m.ID, err)
		}
		if r.Unchanged {
			why := ""
			if m.Status == state.StatusRolledBack {
				why = " (its heal was rolled back)"
			}
			fmt.Fprintf(stdout, "nothing to restore: %s already holds the bytes of %s%s; left as it is until the app writes it again\n", quoteName(m.Path), m.ID, why)
			return exitOK, nil
		}
		fmt.Fprintf(stdout, "restored %s to %s", m.ID, quoteName(m.Path))
		if r.Quarantine != "" {
			fmt.Fprintf(stdout, "; the bytes it replaced are in %s", quoteName(r.Quarantine))
		}
		fmt.Fprintln(stdout)
		return exitOK, nil
	}
	return 0, usageError{"quarantine needs list, show ID or restore ID"}
}

// inFlight gives the status state.StatusInFlight to the entries a journal entry names that
// records no outcome yet: their heal is in progress, or was cut short and is resolved at the
// next start.
func inFlight(eng *heal.Engine, all ...*heal.Manifest) {
	pending := eng.Journal.Pending()
	for _, m := range all {
		if pending[filepath.Clean(m.Dir)] && m.Status == state.StatusHealed {
			m.Status = state.StatusInFlight
		}
	}
}

// statusText says what a quarantine entry's status means.
func statusText(status string) string {
	switch status {
	case state.StatusInFlight:
		return status + ": the change these bytes are kept for is in progress, or was cut short and is resolved at the next start of 'sessionmedic run' or 'sessionmedic heal'"
	case state.StatusRolledBack:
		return status + ": the change these bytes were kept for never replaced the file (a crash or a failure stopped it first): the file kept these bytes, as far as nothing wrote it since"
	case state.StatusSuperseded:
		return status + ": the change these bytes were kept for was cut short, and the file was written again before it was resolved: it held neither these bytes nor the change's, and whether the change had replaced them first is not known"
	}
	return escapeText(status) + ": these bytes were replaced"
}

func cmdPolicy(args []string, stdout, stderr io.Writer) (int, error) {
	fs := flag.NewFlagSet("policy", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	config := fs.String("config", "", "policy file")
	pos, err := parseInterleaved(fs, args)
	if err != nil {
		return 0, err
	}
	if len(pos) > 0 {
		return 0, usageError{"policy takes no arguments"}
	}
	var cfg *policy.Config
	if *config != "" {
		if cfg, err = loadPolicy(*config, stderr, true); err != nil {
			return 0, err
		}
	} else {
		cfg = policy.Default(policy.SystemEnv())
	}
	// What the file says that is valid but cannot be meant (a rule another takes over).
	for _, w := range cfg.Warnings {
		fmt.Fprintf(stderr, "sessionmedic: warning: %s\n", escapeText(w.Error()))
	}
	// What each rule path guards today: a missing path, or one holding no matching file.
	eng := heal.New(cfg, heal.Options{OneShot: true})
	targets, _ := eng.Targets(nil, nil)
	log := newLogger(stderr)
	events.Announce(log, events.Coverage(cfg, targets))
	// Where no heal could be written, as the daemon says it at start (run as this user).
	for _, u := range eng.Unhealable(targets) {
		log.Error(events.RuleCannotHeal, "rule", u.Rule, "dir", u.Dir, "files", u.Files, "reason", u.Reason)
	}
	_, err = stdout.Write(policy.Marshal(cfg)) // its first line says where it is from
	if err != nil {
		return exitInternal, err
	}
	return exitOK, nil
}

// walk lists the targets. The walk takes no context, so it runs in its own goroutine and a
// signal ends the command at once even in the middle of a long walk: the walk only reads,
// and the process exits right after.
func walk(ctx context.Context, eng *heal.Engine, paths []string, resolve heal.Resolver) ([]heal.Target, []error, error) {
	type walked struct {
		targets []heal.Target
		errs    []error
	}
	c := make(chan walked, 1)
	go func() {
		t, e := eng.Targets(paths, resolve)
		c <- walked{t, e}
	}()
	select {
	case w := <-c:
		return w.targets, w.errs, nil
	case <-ctx.Done():
		return nil, nil, context.Cause(ctx)
	}
}

// inspectAll checks the targets on as many workers as there are CPUs (heals on four times as
// many) and yields the reports in target order. The files of one directory go to one worker,
// in order: a heal of a session's messages may change its metadata file next to it.
func inspectAll(ctx context.Context, eng *heal.Engine, targets []heal.Target, doHeal, dry bool) <-chan heal.Report {
	var groups [][]int
	for i, t := range targets {
		if i == 0 || filepath.Dir(t.Path) != filepath.Dir(targets[i-1].Path) {
			groups = append(groups, nil)
		}
		groups[len(groups)-1] = append(groups[len(groups)-1], i)
	}
	// Workers take whole directories; each finished directory is handed to the output in
	// target order, one hand-off per directory rather than per file. A directory's reports
	// live from its inspection to its hand-off only: memory does not grow with the tree.
	reports := make([][]heal.Report, len(groups))
	out := make(chan heal.Report, 256)
	workers := runtime.GOMAXPROCS(0)
	if doHeal && !dry {
		// A heal waits more than it computes (fsyncs, the quiet check of apps without a
		// lock, an app's lock): as the daemon does, 4 workers per CPU.
		workers = min(4*workers, 32)
	}
	go func() {
		defer close(out)
		workpool.Ordered(len(groups), workers, func(g int) {
			rs := make([]heal.Report, len(groups[g]))
			for k, i := range groups[g] {
				switch {
				case ctx.Err() != nil:
					// Interrupted: no new inspection starts; the empty report is not printed.
				case doHeal:
					rs[k] = healRetrying(ctx, eng, targets[i], dry)
				default:
					rs[k] = eng.Check(targets[i])
				}
			}
			reports[g] = rs
		}, func(g int) {
			for _, r := range reports[g] {
				out <- r
			}
			reports[g] = nil // emitted: not kept until the end
		})
	}()
	return out
}

// healRetrying heals a target, looking again a few times, backing off, while it is busy:
// a file another process (the daemon, a second heal) was healing, or that the app was
// writing, is usually settled a moment later.
func healRetrying(ctx context.Context, eng *heal.Engine, t heal.Target, dry bool) heal.Report {
	r := eng.Heal(ctx, t, dry)
	for wait := 50 * time.Millisecond; r.Verdict == heal.Busy && wait <= 800*time.Millisecond; wait *= 2 {
		select {
		case <-ctx.Done():
			return r
		case <-time.After(wait):
		}
		r = eng.Heal(ctx, t, dry)
	}
	return r
}
