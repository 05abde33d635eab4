package policy

import (
	"strings"
	"testing"
)

// TestShadowedBy: a later rule is said to be shadowed by an earlier one only when the earlier
// one certainly takes every file it could cover there; overlaps that leave some files to it,
// or that cannot be told from the rules alone, say nothing.
func TestShadowedBy(t *testing.T) {
	for _, tc := range []struct {
		name, rules string
		want        string // the earlier rule that shadows rule "b" under its first path
	}{
		{"the same preset twice on one path",
			"  - {name: a, preset: openclaw, paths: [/srv/c]}\n  - {name: b, preset: openclaw, paths: [/srv/c]}\n", "a"},
		{"generic jsonl over an app's home before its preset",
			"  - {name: a, format: jsonl, paths: [/home/u/.codex]}\n  - {name: b, preset: codex, paths: [/home/u/.codex]}\n", "a"},
		{"an enclosing path whose base-name pattern takes the later rule's files",
			"  - {name: a, format: json, paths: [/srv]}\n  - {name: b, format: json, paths: [/srv/bot], match: [\"sessions/*.json\"]}\n", "a"},
		{"an exclude anchored under another directory",
			"  - {name: a, format: json, paths: [/srv], exclude: [\"archive/**\"]}\n  - {name: b, format: json, paths: [/srv/bot]}\n", "a"},
		{"the same exclude and temps on the same path",
			"  - {name: a, format: jsonl, paths: [/srv], exclude: [\"old/**\"], temps: [\"*.tmp\"]}\n" +
				"  - {name: b, format: jsonl, paths: [/srv], exclude: [\"old/**\", \"x/**\"], temps: [\"*.tmp\"], match: [\"**/s-?.jsonl\"]}\n", "a"},
		{"the first of two that shadow",
			"  - {name: z, format: json, paths: [/srv/other]}\n  - {name: a, format: json, paths: [/srv]}\n  - {name: a2, format: json, paths: [/srv]}\n" +
				"  - {name: b, format: json, paths: [/srv/bot]}\n", "a"},

		{"other names", "  - {name: a, format: json, paths: [/srv]}\n  - {name: b, format: jsonl, paths: [/srv]}\n", ""},
		{"a narrower pattern", "  - {name: a, format: jsonl, paths: [/srv], match: [\"rollout-*.jsonl\"]}\n  - {name: b, format: jsonl, paths: [/srv]}\n", ""},
		{"an earlier path below the later one", "  - {name: a, format: json, paths: [/srv/bot/x]}\n  - {name: b, format: json, paths: [/srv/bot]}\n", ""},
		{"an exclude that lets files through", "  - {name: a, format: json, paths: [/srv], exclude: [\"*.old.json\"]}\n  - {name: b, format: json, paths: [/srv]}\n", ""},
		{"an exclude anchored where the later path is", "  - {name: a, format: json, paths: [/srv], exclude: [\"bot/**\"]}\n  - {name: b, format: json, paths: [/srv/bot]}\n", ""},
		{"an exclude with a pattern first", "  - {name: a, format: json, paths: [/srv], exclude: [\"*/old/**\"]}\n  - {name: b, format: json, paths: [/srv/bot]}\n", ""},
		{"temps the later rule does not have", "  - {name: a, format: json, paths: [/srv], temps: [\"*.tmp.json\"]}\n  - {name: b, format: json, paths: [/srv]}\n", ""},
		{"an anchored pattern under another path", "  - {name: a, format: json, paths: [/srv], match: [\"bot/*.json\"]}\n  - {name: b, format: json, paths: [/srv/bot], match: [\"bot/*.json\"]}\n", ""},
		{"two earlier rules that take a share each",
			"  - {name: a, format: json, paths: [/srv], match: [\"a*.json\"]}\n  - {name: a2, format: json, paths: [/srv], match: [\"[!a]*.json\"]}\n" +
				"  - {name: b, format: json, paths: [/srv]}\n", ""},
		{"a later rule does not shadow an earlier one", "  - {name: b, format: json, paths: [/srv/bot]}\n  - {name: a, format: json, paths: [/srv]}\n", ""},
		{"a class in the later pattern's end", "  - {name: a, format: json, paths: [/srv], match: [\"*.json\"]}\n  - {name: b, format: json, paths: [/srv], match: [\"*.jso[n]\"]}\n", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, err := ParseEnv("t.yaml", []byte("version: 1\nrules:\n"+tc.rules), fakeEnv(nil))
			if err != nil {
				t.Fatal(err)
			}
			b := c.Rule("b")
			if got := c.ShadowedBy("b", b.Paths[0]); got != tc.want {
				t.Errorf("ShadowedBy = %q, want %q", got, tc.want)
			}
			for _, r := range c.Rules {
				if (r.Name == "a" || r.Name == "z") && c.ShadowedBy(r.Name, r.Paths[0]) != "" {
					t.Errorf("rule %s is said to be shadowed", r.Name)
				}
			}
			if (len(c.Warnings) > 0) != (tc.want != "") {
				t.Errorf("warnings: %v", c.Warnings)
			}
		})
	}
}

// TestShadowWarnings: decoding warns of each shadowed rule path, at the path in the list (or
// at the rule, for a preset's default location), naming the earlier rule.
func TestShadowWarnings(t *testing.T) {
	c, err := ParseEnv("t.yaml", []byte(`version: 1
rules:
  - name: all-jsonl
    format: jsonl
    paths: [/home/u/.codex, /srv/x]
  - name: codex
    preset: codex
  - name: mine
    preset: codex
    paths:
      - /srv/y
      - /home/u/.codex/sessions
`), fakeEnv(nil))
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, w := range c.Warnings {
		got = append(got, w.Error())
	}
	want := []string{
		`t.yaml:6: rules[1]: /home/u/.codex: shadowed by rule "all-jsonl" (rules[0]), which takes every file this rule matches there first: this rule guards nothing there`,
		`t.yaml:12: rules[2].paths[1]: /home/u/.codex/sessions: shadowed by rule "all-jsonl" (rules[0]), which takes every file this rule matches there first: this rule guards nothing there`,
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("warnings:\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	if w := Default(fakeEnv(nil)).Warnings; len(w) != 0 {
		t.Errorf("the embedded default warns: %v", w)
	}
	if _, err := ParseEnv("t.yaml", []byte("version: 1\nrules:\n  - {name: a, format: json, paths: [/srv]}\n  - {name: b, format: json, paths: [/srv], mode: x}\n"), fakeEnv(nil)); strings.Contains(errString(err), "shadowed") {
		t.Errorf("a policy with errors also warns: %v", err)
	}
}
