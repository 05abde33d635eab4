package main

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// TestPolicyReportsEveryError: `policy` names each problem of a file, one a line.
func TestPolicyReportsEveryError(t *testing.T) {
	home := t.TempDir()
	bad := filepath.Join(t.TempDir(), "bad.yaml")
	os.WriteFile(bad, []byte("version: 1\nlog: {format: yaml}\nrules:\n  - name: x\n    paths: [/tmp]\n    format: json\n    settle: 2x\n    mode: sometimes\n"), 0o644)
	out, errOut, code := sm(t, home, "policy", "-config", bad)
	if code != 2 || out != "" {
		t.Fatalf("exit %d, stdout %q", code, out)
	}
	for _, want := range []string{bad + ":2: log.format: unknown log format", bad + ":7: rules[0].settle: \"2x\" is not a duration", bad + ":8: rules[0].mode: unknown mode"} {
		if !strings.Contains(errOut, "sessionmedic: "+want) {
			t.Errorf("no %q in\n%s", want, errOut)
		}
	}
	if n := strings.Count(errOut, "\n"); n != 3 {
		t.Errorf("%d lines, want one per error:\n%s", n, errOut)
	}
}

// TestPolicyReportsAllErrorsAtOnce: a policy with 14 independent errors gets all 14 from one
// run of `policy`, a duplicate name and max_wait below settle among them, each as
// FILE:LINE: FIELD: MESSAGE; one with more than 20 gets the first 20 and how many more.
func TestPolicyReportsAllErrorsAtOnce(t *testing.T) {
	home := t.TempDir()
	bad := filepath.Join(t.TempDir(), "bad.yaml")
	fourteen, err := os.ReadFile("../../policy/testdata/fourteen-errors.yaml")
	if err != nil {
		t.Fatal(err)
	}
	os.WriteFile(bad, fourteen, 0o644)
	out, errOut, code := sm(t, home, "policy", "-config", bad)
	if code != 2 || out != "" {
		t.Fatalf("exit %d, stdout %q", code, out)
	}
	line := regexp.MustCompile(`^sessionmedic: ` + regexp.QuoteMeta(bad) + `:[0-9]+: rules\[[0-9]\]\.[a-z_.\[\]0-9]+: |^sessionmedic: ` +
		regexp.QuoteMeta(bad) + `:[0-9]+: (log|quarantine)\.[a-z_]+: `)
	lines := strings.Split(strings.TrimSuffix(errOut, "\n"), "\n")
	if len(lines) != 14 {
		t.Errorf("%d lines, want the 14 errors:\n%s", len(lines), errOut)
	}
	for _, l := range lines {
		if !line.MatchString(l) {
			t.Errorf("not FILE:LINE: FIELD: MESSAGE: %s", l)
		}
	}
	for _, want := range []string{bad + `:9: rules[1].name: "bot" is already the name of rules[0]`, bad + ":20: rules[3].max_wait: 5s is less than settle (10s)"} {
		if !strings.Contains(errOut, "sessionmedic: "+want+"\n") {
			t.Errorf("no %q in\n%s", want, errOut)
		}
	}

	var b strings.Builder
	b.WriteString("version: 1\nrules:\n")
	for i := range 23 {
		fmt.Fprintf(&b, "  - {name: r%d, format: json, paths: [/srv/%d], mode: m%d}\n", i, i, i)
	}
	os.WriteFile(bad, []byte(b.String()), 0o644)
	_, errOut, code = sm(t, home, "policy", "-config", bad)
	lines = strings.Split(strings.TrimSuffix(errOut, "\n"), "\n")
	if code != 2 || len(lines) != 21 || !strings.HasPrefix(lines[19], "sessionmedic: "+bad+`:22: rules[19].mode: unknown mode "m19"`) ||
		lines[20] != "sessionmedic: "+bad+": 3 more errors not shown" {
		t.Errorf("exit %d, %d lines:\n%s", code, len(lines), errOut)
	}
}

// TestPolicyEchoesSizes: `policy` prints its header once and sizes in the unit written.
func TestPolicyEchoesSizes(t *testing.T) {
	home := t.TempDir()
	f := filepath.Join(t.TempDir(), "p.yaml")
	os.WriteFile(f, []byte("version: 1\nquarantine: {max_bytes: 1 GB}\nrules:\n  - {name: x, format: json, paths: [/tmp], limits: {max_file_size: 200 MB}}\n"), 0o644)
	out, errOut, code := sm(t, home, "policy", "-config", f)
	if code != 0 {
		t.Fatalf("exit %d\n%s", code, errOut)
	}
	if n := strings.Count(out, "effective policy from"); n != 1 || !strings.HasPrefix(out, "# effective policy from "+f+"\n") {
		t.Errorf("header printed %d times:\n%s", n, out)
	}
	for _, want := range []string{"max_bytes: 1GB\n", "max_file_size: 200MB}"} {
		if !strings.Contains(out, want) {
			t.Errorf("no %q in\n%s", want, out)
		}
	}
}

func TestUnknownPresetListsAliases(t *testing.T) {
	_, errOut, code := sm(t, t.TempDir(), "check", "-preset", "nosuch", ".")
	if code != 2 || !strings.Contains(errOut, "qwenpaw") || !strings.Contains(errOut, "gemini-cli") {
		t.Fatalf("exit %d\n%s", code, errOut)
	}
}

// readmeCommands is README's table of commands: each command's name and the flags its line
// names.
func readmeCommands(t *testing.T) map[string][]string {
	t.Helper()
	b, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	_, after, ok := strings.Cut(string(b), "## Commands\n\n```\n")
	block, _, ok2 := strings.Cut(after, "```")
	if !ok || !ok2 {
		t.Fatal("README has no table of commands")
	}
	cmds := map[string][]string{}
	for line := range strings.Lines(block) {
		f := strings.Fields(line)
		if len(f) < 2 || f[0] != "sessionmedic" {
			t.Fatalf("README's table of commands: %q", line)
		}
		flags := []string{}
		for _, m := range regexp.MustCompile(`\[(-[a-z-]+)`).FindAllStringSubmatch(line, -1) {
			flags = append(flags, m[1])
		}
		cmds[f[1]] = flags
	}
	return cmds
}

// TestEveryCommandHelpAndUnknownFlag holds every command of README's table to what README
// says of them all: -h and -help print the command's usage line and exactly the flags README
// names for it to stdout, and exit 0; a flag the command does not know is a usage error (exit
// 2, said on stderr, nothing on stdout).
func TestEveryCommandHelpAndUnknownFlag(t *testing.T) {
	home := t.TempDir()
	cmds := readmeCommands(t)
	for _, want := range []string{"run", "check", "heal", "quarantine", "policy", "demo", "version"} {
		if _, ok := cmds[want]; !ok {
			t.Errorf("README's table of commands has no %s", want)
		}
	}
	flagLine := regexp.MustCompile(`^  (-[a-z-]+)`)
	for cmd, flags := range cmds {
		for _, h := range []string{"-h", "-help"} {
			out, errOut, code := sm(t, home, cmd, h)
			if code != 0 || errOut != "" || !strings.Contains(out, "  sessionmedic "+cmd+" ") && !strings.HasSuffix(out, "  sessionmedic "+cmd+"\n") {
				t.Errorf("%s %s: exit %d, want 0 and its usage line on stdout\nstdout:\n%s\nstderr:\n%s", cmd, h, code, out, errOut)
				continue
			}
			var got []string
			for l := range strings.Lines(out) {
				if m := flagLine.FindStringSubmatch(l); m != nil {
					got = append(got, m[1])
				}
			}
			slices.Sort(got)
			want := slices.Sorted(slices.Values(flags))
			if !slices.Equal(got, want) {
				t.Errorf("%s %s lists flags %v; README's table names %v\n%s", cmd, h, got, want, out)
			}
		}
		out, errOut, code := sm(t, home, cmd, "-no-such-flag")
		if code != 2 || out != "" || !strings.HasPrefix(errOut, "sessionmedic: flag provided but not defined: -no-such-flag\n") {
			t.Errorf("%s -no-such-flag: exit %d, want 2 and the flag named on stderr\nstdout:\n%s\nstderr:\n%s", cmd, code, out, errOut)
		}
	}
}

// TestArgumentsNamingNothing: a PATH or quarantine ID that names nothing is a usage error
// (exit 2, one line), not damage.
func TestArgumentsNamingNothing(t *testing.T) {
	home := t.TempDir()
	missing := filepath.Join(t.TempDir(), "nope")
	for _, args := range [][]string{
		{"check", missing}, {"heal", missing}, {"heal", "-preset", "nanobot", missing},
		{"quarantine", "show", "nosuch"}, {"quarantine", "restore", "nosuch"},
	} {
		_, errOut, code := sm(t, home, args...)
		if code != 2 || strings.Count(errOut, "\n") != 1 {
			t.Errorf("%v: exit %d, want 2 with one line:\n%s", args, code, errOut)
		}
	}
}

// TestRunLogFlagsOwnValues: each of run's log flags takes only its own values.
func TestRunLogFlagsOwnValues(t *testing.T) {
	for _, c := range []struct{ args, want []string }{
		{[]string{"-log-format", "debug"}, []string{"-log-format", `"debug"`, "auto, text, json"}},
		{[]string{"-log-level", "json"}, []string{"-log-level", `"json"`, "debug, info, warn, error"}},
	} {
		_, errOut, code := sm(t, t.TempDir(), append([]string{"run"}, c.args...)...)
		if code != 2 {
			t.Errorf("%v: exit %d\n%s", c.args, code, errOut)
		}
		for _, w := range c.want {
			if !strings.Contains(errOut, w) {
				t.Errorf("%v: no %q in\n%s", c.args, w, errOut)
			}
		}
	}
}

// TestDemoKeep: demo -keep DIR leaves the tree there, says where, and refuses a non-empty DIR.
func TestDemoKeep(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the demo")
	}
	home := t.TempDir()
	dir := filepath.Join(t.TempDir(), "new", "demo")
	out, errOut, code := sm(t, home, "demo", "-keep", dir)
	if code != 0 || !strings.Contains(out, "kept in "+dir) {
		t.Fatalf("exit %d\n%s\n%s", code, out, errOut)
	}
	for _, p := range []string{"nanobot/sessions", "codex/sessions", "state"} {
		if _, err := os.Stat(filepath.Join(dir, p)); err != nil {
			t.Errorf("not kept: %v", err)
		}
	}
	if _, errOut, code := sm(t, home, "demo", "-keep", dir); code != 2 || !strings.Contains(errOut, "not empty") {
		t.Errorf("non-empty DIR: exit %d\n%s", code, errOut)
	}
}

// TestUnreadableEntries: an entry check or heal cannot read (a file, a directory in a tree,
// a directory named as PATH, a rule's own path) is a skipped line each, with the reason
// (unreadable…), in -json too; the summary and a line on stderr say how many; and the command
// exits 2, whatever else it found: the sessions there are not known to be guarded, and no heal
// can change that (as root, the binary runs as nobody: root reads every file).
func TestUnreadableEntries(t *testing.T) {
	base, run := asUser(t)
	home := filepath.Join(base, "home")
	os.Mkdir(home, 0o755)
	if os.Geteuid() == 0 {
		os.Chown(home, 65534, 65534)
	}
	dir := filepath.Join(base, "d")
	locked := filepath.Join(dir, "locked")
	os.MkdirAll(locked, 0o755)
	os.WriteFile(filepath.Join(locked, "b.json"), []byte("{}"), 0o644)
	os.WriteFile(filepath.Join(dir, "a.json"), []byte("{}"), 0o644)
	secret := filepath.Join(dir, "secret.json")
	os.WriteFile(secret, []byte("{}"), 0o644)
	os.Chmod(locked, 0)
	os.Chmod(secret, 0)
	// The same tree with damage beside the unreadable entries.
	damaged := filepath.Join(base, "damaged")
	os.MkdirAll(filepath.Join(damaged, "locked"), 0o755)
	os.WriteFile(filepath.Join(damaged, "torn.json"), []byte(`{"a":`), 0o644)
	os.Chmod(filepath.Join(damaged, "locked"), 0)
	readable := filepath.Join(base, "readable")
	os.Mkdir(readable, 0o755)
	os.WriteFile(filepath.Join(readable, "a.json"), []byte("{}"), 0o644)
	pol := filepath.Join(base, "policy.yaml")
	os.WriteFile(pol, []byte("version: 1\nrules:\n  - {name: j, format: json, paths: ["+locked+"]}\n"), 0o644)

	if out, errOut, code := run(home, "check", readable); code != 0 {
		t.Fatalf("check of a readable tree: exit %d\n%s%s", code, out, errOut)
	}
	for _, c := range []struct {
		args       []string
		unreadable []string // the entries each skipped with the reason
	}{
		{[]string{"check", dir}, []string{locked, secret}},
		{[]string{"check", locked}, []string{locked}},
		{[]string{"check", secret}, []string{secret}},
		{[]string{"check", "-config", pol}, []string{locked}},
		{[]string{"check", damaged}, []string{filepath.Join(damaged, "locked")}},
		{[]string{"heal", "-dry-run", dir}, []string{locked, secret}},
		{[]string{"heal", dir}, []string{locked, secret}},
	} {
		out, errOut, code := run(home, c.args...)
		if code != 2 {
			t.Errorf("%q: exit %d, want 2\nstdout:\n%s\nstderr:\n%s", c.args, code, out, errOut)
		}
		for _, p := range c.unreadable {
			if !regexp.MustCompile(`(?m)^skipped +\S+ +` + regexp.QuoteMeta(p) + ` +unreadable`).MatchString(out) {
				t.Errorf("%q: no skipped line for %s with the reason\n%s", c.args, p, out)
			}
		}
		n := len(c.unreadable)
		if !strings.Contains(out, fmt.Sprintf(" skipped (%d unreadable)\n", n)) {
			t.Errorf("%q: the summary does not say %d unreadable\n%s", c.args, n, out)
		}
		if want := fmt.Sprintf("sessionmedic: %d unreadable (each on a skipped line): the sessions there are not checked", n); !strings.Contains(errOut, want) {
			t.Errorf("%q: no %q on stderr\n%s", c.args, want, errOut)
		}
		if strings.Contains(out, "no-files") {
			t.Errorf("%q: an unreadable rule path is said to hold no file\n%s", c.args, out)
		}
		out, errOut, code = run(home, append([]string{c.args[0], "-json"}, c.args[1:]...)...)
		r := parseReports(t, out)
		for _, p := range c.unreadable {
			if got := r[filepath.Base(p)]; code != 2 || got.Verdict != "skipped" || !strings.HasPrefix(got.Detail, "unreadable") || !strings.Contains(got.Detail, "permission denied") {
				t.Errorf("%q -json: exit %d, %s: %+v\n%s%s", c.args, code, p, got, out, errOut)
			}
		}
	}
}

// TestQuarantineRefusesFlagsItDoesNotUse: each quarantine subcommand takes only the flags it
// uses (list and show: -config, -json; restore: -config, -preset P PATH...); one it would
// ignore, or a flag given an empty value, is a usage error (exit 2) naming the flag, and
// nothing is done.
func TestQuarantineRefusesFlagsItDoesNotUse(t *testing.T) {
	home := t.TempDir()
	dir := filepath.Join(t.TempDir(), "sessions")
	copyDir(t, filepath.Join(samples, "praisonai/corrupt_trailing_garbage/sessions"), dir)
	if _, errOut, code := sm(t, home, "heal", "-preset", "praisonai", dir); code != 0 {
		t.Fatalf("heal: exit %d\n%s", code, errOut)
	}
	out, _, _ := sm(t, home, "quarantine", "list")
	id := strings.Fields(out)[0]
	healed, _ := os.ReadFile(filepath.Join(dir, "parent-chat.json"))
	for _, c := range []struct {
		args []string
		flag string
	}{
		{[]string{"restore", id, "-json", "-preset", "praisonai", dir}, "-json"},
		{[]string{"restore", id, "-preset", "", dir}, "-preset"},
		{[]string{"restore", id, "-preset", ""}, "-preset"},
		{[]string{"list", "-preset", ""}, "-preset"},
		{[]string{"list", "-json", "-preset", "praisonai"}, "-preset"},
		{[]string{"show", id, "-preset", "praisonai", dir}, "-preset"},
		{[]string{"list", "-config", ""}, "-config"},
	} {
		out, errOut, code := sm(t, home, append([]string{"quarantine"}, c.args...)...)
		first, _, _ := strings.Cut(errOut, "\n")
		if code != 2 || out != "" || !strings.Contains(first, c.flag) {
			t.Errorf("quarantine %q: exit %d, want 2 with %s named on stderr's first line\nstdout:\n%s\nstderr:\n%s", c.args, code, c.flag, out, errOut)
		}
		if now, _ := os.ReadFile(filepath.Join(dir, "parent-chat.json")); string(now) != string(healed) {
			t.Fatalf("quarantine %q restored the file", c.args)
		}
	}
	// What each takes still works.
	for _, args := range [][]string{{"list", "-json"}, {"show", id, "-json"}, {"restore", id, "-preset", "praisonai", dir}} {
		if _, errOut, code := sm(t, home, append([]string{"quarantine"}, args...)...); code != 0 {
			t.Errorf("quarantine %q: exit %d\n%s", args, code, errOut)
		}
	}
}

// TestUndeterminedFormatIsNotClaimed: a -json row claims a format only where one was
// determined (by a rule, a preset or the file's name). A directory that cannot be read, or a
// file named on the command line that is not a session file (a temp file), has no format
// member; an unreadable file whose name says JSON keeps "json".
func TestUndeterminedFormatIsNotClaimed(t *testing.T) {
	base, run := asUser(t)
	dir := filepath.Join(base, "d")
	os.MkdirAll(filepath.Join(dir, "locked"), 0o755)
	os.WriteFile(filepath.Join(dir, "a.jsonl"), []byte("{}\n"), 0o644)
	os.WriteFile(filepath.Join(dir, "secret.json"), []byte("{}"), 0o644)
	os.WriteFile(filepath.Join(dir, "x.tmp"), []byte("{}"), 0o644)
	os.Chmod(filepath.Join(dir, "locked"), 0)
	os.Chmod(filepath.Join(dir, "secret.json"), 0)
	pol := filepath.Join(base, "policy.yaml")
	os.WriteFile(pol, []byte("version: 1\nrules:\n  - {name: j, format: jsonl, paths: ["+dir+"]}\n"), 0o644)
	for _, args := range [][]string{
		{"check", "-json", dir, filepath.Join(dir, "x.tmp")},
		{"check", "-json", "-config", pol},
	} {
		out, errOut, _ := run(base, args...)
		rows := map[string]map[string]any{}
		for l := range strings.Lines(out) {
			var m map[string]any
			if err := json.Unmarshal([]byte(l), &m); err != nil {
				t.Fatalf("%q: bad -json line %q: %v", args, l, err)
			}
			rows[filepath.Base(m["path"].(string))] = m
		}
		want := map[string]any{"a.jsonl": "jsonl", "locked": nil}
		if args[2] != "-config" {
			want["secret.json"], want["x.tmp"] = "json", nil
		}
		for name, format := range want {
			r, ok := rows[name]
			if !ok {
				t.Errorf("%q: no row for %s\n%s%s", args, name, out, errOut)
				continue
			}
			if got, has := r["format"]; format == nil && has || format != nil && got != format {
				t.Errorf("%q: %s: format %v (present: %v), want %v\n%s", args, name, got, has, format, out)
			}
		}
	}
}
