package policy

import (
	"errors"
	"fmt"
	"strings"
	"testing"
)

// TestDecodeErrors covers errors beyond the fixtures in testdata/bad.
func TestDecodeErrors(t *testing.T) {
	const head = "version: 1\nrules:\n  - name: bot\n    format: json\n    paths: [/srv/bot]\n"
	for _, tc := range []struct{ yaml, want string }{
		{"version: 1\nlog: ~\nrules: []\n", "t.yaml:2: log: expected a mapping, got null\nt.yaml:3: rules: must not be empty"},
		{"version: 1\nlog:\nrules: [{name: a}]\n", "t.yaml:2: log: expected a mapping, got null\nt.yaml:3: rules[0]: needs a preset or a format"},
		{"version:\n", `t.yaml:1: version: expected an integer, got null`},
		{"version: 1.0\n", `t.yaml:1: version: expected an integer, got 1.0`},
		{"base: &b {format: json}\nversion: 1\n", `t.yaml:1: base: unknown key`},
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
		{"version: 1\nrules:\n  - name: 7\n", `t.yaml:3: rules[0].name: expected a string, got 7`},
		{"version: 1\nhttp: {listen: \":99999\"}\n", `t.yaml:2: http.listen: ":99999" is not host:port`},
		{"version: 1\nhttp: {port: 1}\n", `t.yaml:2: http.port: unknown key`},
		{"version: 1\nhttp: {pprof: yes}\n", `t.yaml:2: http.pprof: expected true or false, got "yes"`},
		{"version: 1\na: *nope\n", `t.yaml: unknown anchor 'nope' referenced`},
		{"{version: 1", `t.yaml:1: did not find expected ',' or '}'`},
		{"version: 1\nrules: {}\n", `t.yaml:2: rules: expected a list, got a mapping`},
		{"version: 1\nstate_dir: ~\n", `t.yaml:2: state_dir: expected a string, got null`},
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

// TestDecodeCollectsErrors: every problem of a file is reported, up to MaxErrors.
func TestDecodeCollectsErrors(t *testing.T) {
	var b strings.Builder
	b.WriteString("version: 1\nrules:\n")
	for i := range MaxErrors + 5 {
		fmt.Fprintf(&b, "  - {name: r%d, format: json, paths: [/srv/%d], settle: %dx}\n", i, i, i)
	}
	_, err := ParseEnv("t.yaml", []byte(b.String()), fakeEnv(nil))
	var es Errors
	if !errors.As(err, &es) || len(es) != MaxErrors {
		t.Fatalf("want %d errors, got %v", MaxErrors, err)
	}
	var pe *Error
	if !errors.As(err, &pe) || pe.Line != 3 || pe.Field != "rules[0].settle" {
		t.Fatalf("first error: %+v", pe)
	}
	if lines := strings.Split(err.Error(), "\n"); len(lines) != MaxErrors || lines[MaxErrors-1] != `t.yaml:22: rules[19].settle: "19x" is not a duration` {
		t.Fatalf("error text:\n%s", err)
	}
}
