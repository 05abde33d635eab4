package policy

import (
	"errors"
	"fmt"
	"os"
	"regexp"
	"strings"
	"testing"
)

// TestDecodeErrors covers errors beyond the fixtures in testdata/bad.
func TestDecodeErrors(t *testing.T) {
	const head = "version: 1\nrules:\n  - name: bot\n    format: json\n    paths: [/srv/bot]\n"
	for _, tc := range []struct{ yaml, want string }{
		{"version: 1\nlog: ~\nrules: []\n", "t.yaml:2: log: expected a mapping, got null\nt.yaml:3: rules: must not be empty"},
		{"version: 1\nlog:\nrules: [{name: a}]\n", "t.yaml:2: log: expected a mapping, got null\nt.yaml:3: rules[0]: needs a preset or a format\nt.yaml:3: rules[0].paths: missing"},
		{"version:\n", `t.yaml:1: version: expected an integer, got null`},
		{"version: 1.0\n", `t.yaml:1: version: expected an integer, got 1.0`},
		{"base: &b {format: json}\nversion: 1\n", "t.yaml:1: base: unknown key\nt.yaml:1: rules: missing (want at least one rule)"},
		{head + "    <<: {mode: observe}\n", `t.yaml:6: rules[0].<<: unknown key`},
		{head + "    ? [a]\n    : b\n", `t.yaml:6: rules[0]: expected a key, got a list`},
		{head + "    lock: {protocol: none, wait: 1s}\n", `t.yaml:6: rules[0].lock.wait: has no effect without a lock`},
		{head + "    lock: {protocol: nanobot, stale: 1s}\n", `t.yaml:6: rules[0].lock.stale: applies only to lockfile, openviking and openclaw locks`},
		{head + "    lock: {flock: \"\"}\n", `t.yaml:6: rules[0].lock.flock: must not be empty`},
		{head + "    lock: {flock: \"{file\"}\n", `t.yaml:6: rules[0].lock.flock: "{file": unbalanced { or }`},
		{head + "    backups: [\"{file}.bak.[\"]\n", `t.yaml:6: rules[0].backups[0]: "{file}.bak.[" is not a valid glob`},
		{head + "    settle: true\n", `t.yaml:6: rules[0].settle: expected a duration, got true`},
		{head + "    settle: [1s]\n", `t.yaml:6: rules[0].settle: expected a duration, got a list`},
		{head + "    name: again\n", `t.yaml:6: rules[0].name: is set twice (first on line 3)`},
		{head + "    match: []\n", `t.yaml:6: rules[0].match: must not be empty`},
		{head + "    match: [\"\"]\n", `t.yaml:6: rules[0].match[0]: pattern must not be empty`},
		{head + "    match: [/abs]\n", `t.yaml:6: rules[0].match[0]: "/abs": patterns are relative to the rule's paths (no leading /)`},
		{head + "    temps: [\"x\", 3]\n", `t.yaml:6: rules[0].temps[1]: expected a string, got 3`},
		{head + "    name: 7\n", `t.yaml:6: rules[0].name: is set twice (first on line 3)`},
		{"version: 1\nrules:\n  - name: 7\n", "t.yaml:3: rules[0]: needs a preset or a format\nt.yaml:3: rules[0].paths: missing\nt.yaml:3: rules[0].name: expected a string, got 7"},
		{"version: 1\nhttp: {listen: \":99999\"}\n", `t.yaml:1: rules: missing (want at least one rule)
t.yaml:2: http.listen: ":99999" is not host:port`},
		{"version: 1\nhttp: {port: 1}\n", `t.yaml:1: rules: missing (want at least one rule)
t.yaml:2: http.port: unknown key`},
		{"version: 1\nhttp: {pprof: yes}\n", `t.yaml:1: rules: missing (want at least one rule)
t.yaml:2: http.pprof: expected true or false, got "yes"`},
		{"version: 1\na: *nope\n", `t.yaml: unknown anchor 'nope' referenced`},
		{"{version: 1", `t.yaml:1: did not find expected ',' or '}'`},
		{"version: 1\nrules: {}\n", `t.yaml:2: rules: expected a list, got a mapping`},
		{"version: 1\nstate_dir: ~\n", `t.yaml:1: rules: missing (want at least one rule)
t.yaml:2: state_dir: expected a string, got null`},
	} {
		_, err := ParseEnv("t.yaml", []byte(tc.yaml), fakeEnv(nil))
		if got := errString(err); got != tc.want {
			t.Errorf("%q:\n got %s\nwant %s", tc.yaml, got, tc.want)
		}
	}
}

func TestDefaultYAMLParses(t *testing.T) {
	if _, err := ParseEnv("default.yaml", DefaultYAML(), fakeEnv(nil)); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(Marshal(Default(fakeEnv(nil)))), "no paths: the app's default location was not found") {
		t.Error("a preset rule without paths is not explained")
	}
}

func TestCustomRuleDefaults(t *testing.T) {
	c, err := ParseEnv("t.yaml", []byte("version: 1\nrules:\n  - {name: a, format: jsonl, paths: [/srv/a]}\n"), fakeEnv(nil))
	if err != nil {
		t.Fatal(err)
	}
	r := c.Rules[0]
	want := baseRule()
	want.Name, want.Format, want.Paths, want.Match = "a", "jsonl", []string{"/srv/a"}, []string{"*.jsonl"}
	if r.Name != want.Name || r.Settle != want.Settle || r.MaxWait != want.MaxWait || r.Lock != want.Lock ||
		strings.Join(names(r.Strategies), ",") != "salvage,last-good" || r.Limits != want.Limits || !r.KeepLastGood ||
		r.Mode != "heal" || r.TempAge != DefaultTempAge || strings.Join(r.Match, ",") != "*.jsonl" ||
		r.Backups != nil || r.Temps != nil || r.Exclude != nil || r.Preset != "" {
		t.Errorf("got %+v", r)
	}
	if c.Log != (Log{"auto", "info"}) || c.Quarantine != (Retention{MaxAge: DefaultQuarantineMaxAge, MaxBytes: GiB}) ||
		c.LastGood != (LastGoodLimits{MaxFileBytes: 64 * MiB, MaxTotalBytes: GiB}) || c.HTTP != (HTTP{}) {
		t.Errorf("top-level defaults: %+v", c)
	}
}

// fourteenErrors is a policy with 14 independent errors (cmd/sessionmedic's
// TestPolicyReportsAllErrorsAtOnce runs the binary on it too).
var fourteenErrors = func() string {
	b, err := os.ReadFile("testdata/fourteen-errors.yaml")
	if err != nil {
		panic(err)
	}
	return string(b)
}()

// TestEveryErrorAtOnce: a policy's independent errors are all reported by one decode, each
// with its line and field: the checks across a rule's keys (its name, preset or format,
// paths, max_wait against settle) and a duplicate name beside the errors of its keys, and a
// missing version or rules key beside the rest.
func TestEveryErrorAtOnce(t *testing.T) {
	for _, tc := range []struct{ name, yaml, want string }{{
		name: "fourteen",
		yaml: fourteenErrors,
		want: `t.yaml:2: log.format: unknown log format "yaml" (want auto, text, json)
t.yaml:2: log.level: unknown log level "loud" (want debug, info, warn, error)
t.yaml:3: quarantine.max_bytes: "1 XB" is not a size
t.yaml:3: quarantine.max_age: "forever" is not a duration
t.yaml:6: rules[0].paths[1]: "relative/dir" is not an absolute path
t.yaml:7: rules[0].format: unknown format "xml" (want json, jsonl, copaw, nanobot, praisonai, openviking, openclaw, claude-code, codex, gemini-cli, pi, copilot-cli, qwen-code, opencode)
t.yaml:8: rules[0].settle: "2x" is not a duration
t.yaml:9: rules[1].name: "bot" is already the name of rules[0]
t.yaml:10: rules[1].preset: unknown preset "nosuch" (want copaw, qwenpaw, nanobot, praisonai, openviking, openclaw, claude-code, codex, gemini-cli, pi, copilot-cli, qwen-code, opencode)
t.yaml:15: rules[2].keep_last_good: expected true or false, got "maybe"
t.yaml:20: rules[3].max_wait: 5s is less than settle (10s)
t.yaml:21: rules[3].mode: unknown mode "sometimes" (want heal, observe)
t.yaml:25: rules[4].strategies[1]: unknown strategy "fix" (want salvage, backup, last-good, reconcile, normalize, restore-fields, drop-invalid-entries, clean-temp, add-ordinals, rebuild-header, reindex, restore-snapshot)
t.yaml:26: rules[4].limits.max_loss: "200%" is more than 100%`,
	}, {
		name: "a rule's missing keys at once",
		yaml: "version: 1\nrules:\n  - settle: 1s\n",
		want: "t.yaml:3: rules[0].name: missing\nt.yaml:3: rules[0]: needs a preset or a format\nt.yaml:3: rules[0].paths: missing",
	}, {
		name: "missing version and rules beside the rest",
		yaml: "log: {level: loud}\n",
		want: "t.yaml:1: version: missing (want 1)\nt.yaml:1: rules: missing (want at least one rule)\n" +
			`t.yaml:1: log.level: unknown log level "loud" (want debug, info, warn, error)`,
	}, {
		name: "duplicate name of rules that have errors of their own",
		yaml: "version: 1\nrules:\n  - {name: a, format: json, paths: [/srv/a], settle: 2x}\n  - {name: a, format: json, paths: [/srv/b], mode: x}\n",
		want: "t.yaml:3: rules[0].settle: \"2x\" is not a duration\nt.yaml:4: rules[1].name: \"a\" is already the name of rules[0]\n" +
			`t.yaml:4: rules[1].mode: unknown mode "x" (want heal, observe)`,
	}, {
		name: "settle above the preset's max_wait beside another key's error",
		yaml: "version: 1\nrules:\n  - name: c\n    preset: copaw\n    settle: 1m\n    temps: [a/b]\n",
		want: "t.yaml:5: rules[0].settle: 1m is more than max_wait (30s)\nt.yaml:6: rules[0].temps[0]: \"a/b\": temps match base names (no /)",
	}, {
		name: "a lock's template and its stale",
		yaml: "version: 1\nrules:\n  - name: c\n    format: json\n    paths: [/srv/c]\n    lock: {flock: \"{x}\", stale: 1s}\n  - {name: d, format: json, paths: [/srv/d], lock: {flock: \"{file}.lock\", stale: 1s, wait: x}}\n",
		want: "t.yaml:6: rules[0].lock.flock: \"{x}\": unknown placeholder {x} (want {file}, {dir} or {name})\n" +
			"t.yaml:6: rules[0].lock.stale: applies only to lockfile, openviking and openclaw locks\n" +
			"t.yaml:7: rules[1].lock.stale: applies only to lockfile, openviking and openclaw locks\nt.yaml:7: rules[1].lock.wait: \"x\" is not a duration",
	}} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := ParseEnv("t.yaml", []byte(tc.yaml), fakeEnv(nil))
			if got := errString(err); got != tc.want {
				t.Fatalf("got\n%s\nwant\n%s", got, tc.want)
			}
			for _, line := range strings.Split(tc.want, "\n") {
				if !regexp.MustCompile(`^t\.yaml:[1-9][0-9]*: [a-z_]+[^ ]*: `).MatchString(line) {
					t.Errorf("no line and field: %s", line)
				}
			}
		})
	}
}

// TestDecodeCollectsErrors: every problem of a file is found; the first MaxErrors are
// listed, then how many more there are.
func TestDecodeCollectsErrors(t *testing.T) {
	for _, n := range []int{MaxErrors - 1, MaxErrors, MaxErrors + 1, MaxErrors + 5} {
		var b strings.Builder
		b.WriteString("version: 1\nrules:\n")
		for i := range n {
			fmt.Fprintf(&b, "  - {name: r%d, format: json, paths: [/srv/%d], settle: %dx}\n", i, i, i)
		}
		_, err := ParseEnv("t.yaml", []byte(b.String()), fakeEnv(nil))
		var es Errors
		if !errors.As(err, &es) || len(es) != min(n, MaxErrors) {
			t.Fatalf("%d errors: got %v", n, err)
		}
		var pe *Error
		if !errors.As(err, &pe) || pe.Line != 3 || pe.Field != "rules[0].settle" {
			t.Fatalf("%d errors: first error: %+v", n, pe)
		}
		lines := strings.Split(err.Error(), "\n")
		last := min(n, MaxErrors) - 1
		if lines[last] != fmt.Sprintf(`t.yaml:%d: rules[%d].settle: "%dx" is not a duration`, last+3, last, last) {
			t.Fatalf("%d errors: error text:\n%s", n, err)
		}
		var tm *TooManyErrors
		switch {
		case n <= MaxErrors && (len(lines) != n || errors.As(err, &tm)):
			t.Errorf("%d errors: %d lines:\n%s", n, len(lines), err)
		case n > MaxErrors && (len(lines) != MaxErrors+1 || lines[MaxErrors] != fmt.Sprintf("t.yaml: %d more errors not shown", n-MaxErrors) ||
			!errors.As(err, &tm) || tm.More != n-MaxErrors):
			t.Errorf("%d errors: the last line does not say how many more:\n%s", n, err)
		}
	}
}

// TestStrategiesMustApply: a strategy that can never repair a file of the rule's format is an
// error at its place in the list (or at the format, for a preset's strategies under another
// format), beside the list's other errors; a strategy is judged only against a format that
// decoded.
func TestStrategiesMustApply(t *testing.T) {
	const head = "version: 1\nrules:\n  - name: r\n    paths: [/srv/r]\n"
	for _, tc := range []struct{ yaml, want string }{
		{head + "    preset: openviking\n    strategies: [reconcile, salvage]\n", ""},
		{head + "    format: praisonai\n    match: ['*.json']\n    strategies: [restore-fields, reconcile, normalize, clean-temp]\n", ""},
		{head + "    format: copilot-cli\n    match: ['*.jsonl']\n    strategies: [drop-invalid-entries, rebuild-header, backup]\n", ""},
		{head + "    preset: codex\n    format: codex\n", ""},
		{head + "    preset: openclaw\n    format: jsonl\n    strategies: [salvage, normalize]\n", ""},
		{head + "    format: jsonl\n    strategies: [fix, reconcile, reconcile]\n",
			"t.yaml:6: rules[0].strategies[0]: unknown strategy \"fix\" (want salvage, backup, last-good, reconcile, normalize, restore-fields, drop-invalid-entries, clean-temp, add-ordinals, rebuild-header, reindex, restore-snapshot)\n" +
				"t.yaml:6: rules[0].strategies[1]: reconcile cannot repair format jsonl: it applies only to praisonai and openviking (format or preset)\n" +
				"t.yaml:6: rules[0].strategies[2]: \"reconcile\" is already listed at rules[0].strategies[1]"},
		{head + "    format: openclaw\n    match: ['*.json']\n    strategies: [drop-invalid-entries, restore-fields, add-ordinals]\n",
			"t.yaml:7: rules[0].strategies[1]: restore-fields cannot repair format openclaw: it applies only to praisonai (format or preset)\n" +
				"t.yaml:7: rules[0].strategies[2]: add-ordinals cannot repair format openclaw: it applies only to codex (format or preset)"},
		{head + "    preset: praisonai\n    format: json\n",
			"t.yaml:6: rules[0].format: json cannot use the preset's reconcile (only praisonai and openviking): set strategies"},
		{head + "    format: xml\n    strategies: [reconcile]\n", "t.yaml:5: rules[0].format: unknown format \"xml\" (want json, jsonl, copaw, nanobot, praisonai, openviking, openclaw, claude-code, codex, gemini-cli, pi, copilot-cli, qwen-code, opencode)"},
		{head + "    preset: nosuch\n    strategies: [add-ordinals]\n", "t.yaml:5: rules[0].preset: unknown preset \"nosuch\" (want copaw, qwenpaw, nanobot, praisonai, openviking, openclaw, claude-code, codex, gemini-cli, pi, copilot-cli, qwen-code, opencode)"},
	} {
		_, err := ParseEnv("t.yaml", []byte(tc.yaml), fakeEnv(nil))
		if got := errString(err); got != tc.want {
			t.Errorf("%s\n got %s\nwant %s", tc.yaml, got, tc.want)
		}
	}
}

// Every preset's own strategies apply to its format.
func TestPresetStrategiesApply(t *testing.T) {
	for _, name := range PresetChoices() {
		r, _ := PresetRule(name, fakeEnv(nil))
		for _, s := range r.Strategies {
			if !s.Applies(r.Format) {
				t.Errorf("preset %s: strategy %s does not apply to its format %s", name, s, r.Format)
			}
		}
	}
	if got := StrategyFormats(RebuildHeader); strings.Join(got, ",") != "codex,gemini-cli,pi,copilot-cli" {
		t.Errorf("StrategyFormats(rebuild-header) = %v, want the order of Formats", got)
	}
	if StrategyFormats(Salvage) != nil || !Salvage.Applies("json") {
		t.Error("salvage applies to every format")
	}
}
