package policy

import (
	"testing"
)

func TestMatchPattern(t *testing.T) {
	for _, tc := range []struct {
		pattern, rel string
		abs          string // "" = match below the root only
		want         bool
	}{
		// A pattern without / matches the base name at any depth.
		{"*.json", "a.json", "", true},
		{"*.json", "x/y/a.json", "", true},
		{"*.json", "a.jsonl", "", false},
		{"*.json", ".meta.json", "", true},
		{"chats.json", "w/chats.json", "", true},
		{"tmp*.tmp", "tmpk3j4h5g6.tmp", "", true},
		{"?.json", "ab.json", "", false},
		{"?.json", "a.json", "", true},
		{"[abc].json", "b.json", "", true},
		{"[^abc].json", "b.json", "", false},
		{"[a-c]x", "cx", "", true},
		{`\*.json`, "*.json", "", true},
		{`\*.json`, "a.json", "", false},
		// Patterns with / are anchored at the root; * ? [] never cross /.
		{"sessions/*.json", "sessions/a.json", "", true},
		{"sessions/*.json", "x/sessions/a.json", "", false},
		{"sessions/*.json", "sessions/c/a.json", "", false},
		{"*/a.json", "x/a.json", "", true},
		{"*/a.json", "x/y/a.json", "", false},
		{"s?/a", "s/a", "", false},
		{"s[/]x", "s/x", "", false},
		// ** is zero or more whole segments.
		{"**/a.json", "a.json", "", true},
		{"**/a.json", "x/y/a.json", "", true},
		{"x/**/a.json", "x/a.json", "", true},
		{"x/**/a.json", "x/1/2/3/a.json", "", true},
		{"x/**/a.json", "y/x/a.json", "", false},
		{"x/**", "x/a/b", "", true},
		{"x/**", "x", "", true},
		{"x/**", "xy/a", "", false},
		{"**/dialog/**", "w/dialog/2026-01-01.jsonl", "", true},
		{"**/dialog/**", "w/dialogs/a.jsonl", "", false},
		{"**/**/a", "a", "", true},
		{"**/x/**/y/*.j", "p/x/q/r/y/z.j", "", true},
		{"**/x/**/y/*.j", "p/x/q/r/y/z/z.j", "", false},
		// A leading **/ may reach into the root's own directory names.
		{"**/sessions/*.json", "a.json", "/h/ws/sessions/a.json", true},
		{"**/sessions/*.json", "a.json", "", false},
		{"**/sessions/*/*.json", "console/a.json", "/h/sessions/console/a.json", true},
		{"**/agents/*/sessions/sessions.json", "sessions.json", "/s/agents/main/sessions/sessions.json", true},
		{"**/agents/*/sessions/sessions.json", "sessions.json", "/s/agent/main/sessions/sessions.json", false},
		// ...but an anchored pattern does not.
		{"sessions/*.json", "a.json", "/h/sessions/a.json", false},
	} {
		var abs []string
		if tc.abs != "" {
			abs = splitPath(tc.abs)
		}
		if got := matchPattern(tc.pattern, splitPath(tc.rel), abs); got != tc.want {
			t.Errorf("match(%q, %q, abs %q) = %v, want %v", tc.pattern, tc.rel, tc.abs, got, tc.want)
		}
	}
}

func TestCheckGlob(t *testing.T) {
	for p, ok := range map[string]bool{
		"*.json":          true,
		"**/a/**/b/*.j":   true,
		"[a-z]?.json":     true,
		`\[x\].json`:      true,
		"":                false,
		"/abs/*.json":     false,
		"dir/":            false,
		"a//b":            false,
		"a/../b":          false,
		"./a":             false,
		"a**":             false,
		"a/***/b":         false,
		"[abc":            false,
		"sessions/[/].js": false,
		`a\`:              false,
	} {
		if _, err := checkGlob(p); (err == nil) != ok {
			t.Errorf("checkGlob(%q) = %v, want ok %v", p, err, ok)
		}
	}
}

func TestWithin(t *testing.T) {
	for _, tc := range []struct {
		root, p, rel string
		ok           bool
	}{
		{"/a/b", "/a/b/c.json", "c.json", true},
		{"/a/b", "/a/b/x/y/c.json", "x/y/c.json", true},
		{"/a/b/", "/a/b//c.json", "c.json", true},
		{"/a/b", "/a/bc/d.json", "", false},
		{"/a/b", "/a/b", "b", true},
		{"/a/b", "/a", "", false},
		{"/a/b", "/a/b/../c/d", "", false},
		{"/", "/x/y", "x/y", true},
	} {
		rel, ok := within(tc.root, tc.p)
		if rel != tc.rel || ok != tc.ok {
			t.Errorf("within(%q, %q) = %q, %v; want %q, %v", tc.root, tc.p, rel, ok, tc.rel, tc.ok)
		}
	}
}

func TestCovers(t *testing.T) {
	r := &Rule{
		Match:   []string{"**/sessions/*.jsonl", "index.json"},
		Exclude: []string{"**/archive/**", "*.bad.jsonl"},
		Temps:   []string{"*.jsonl.tmp"},
	}
	for _, tc := range []struct {
		root, p string
		want    bool
	}{
		{"/srv", "/srv/sessions/a.jsonl", true},
		{"/srv", "/srv/ws/sessions/a.jsonl", true},
		{"/srv/sessions", "/srv/sessions/a.jsonl", true},                   // the root is a sessions dir
		{"/srv/sessions", "/srv/sessions/archive/sessions/a.jsonl", false}, // excluded below the root
		{"/archive/srv", "/archive/srv/sessions/a.jsonl", true},            // excludes stay below the root
		{"/srv", "/srv/sessions/x.bad.jsonl", false},
		{"/srv", "/srv/sessions/a.jsonl.tmp", false},
		{"/srv", "/srv/sessions/.a.jsonl.sessionmedic-1f2e.tmp", false}, // our own temp
		{"/srv", "/srv/other/a.jsonl", false},
		{"/srv", "/srv/deep/index.json", true},
		{"/srv", "/elsewhere/sessions/a.jsonl", false},
		{"/srv/sessions/a.jsonl", "/srv/sessions/a.jsonl", true}, // a rule path naming one file
	} {
		if got := r.Covers(tc.root, tc.p); got != tc.want {
			t.Errorf("Covers(%q, %q) = %v, want %v", tc.root, tc.p, got, tc.want)
		}
	}
}

func TestRuleFor(t *testing.T) {
	c, err := ParseEnv("r.yaml", []byte(`version: 1
rules:
  - {name: first, format: jsonl, paths: [/srv/a, /srv/b], match: ["logs/*.jsonl"]}
  - {name: second, format: jsonl, paths: [/srv], exclude: ["skip/**"], temps: ["*.jsonl.tmp"]}
  - {name: third, format: json, paths: [/srv/a]}
`), fakeEnv(nil))
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		p, rule, root string
	}{
		{"/srv/a/logs/x.jsonl", "first", "/srv/a"},
		{"/srv/b/logs/x.jsonl", "first", "/srv/b"},
		{"/srv/a/other/x.jsonl", "second", "/srv"}, // first does not match: file order goes on
		{"/srv/a/x.json", "third", "/srv/a"},
		{"/srv/skip/x.jsonl", "", ""},
		{"/srv/a/logs/x.jsonl.tmp", "", ""},
		{"/srv/a/logs/../logs/x.jsonl", "first", "/srv/a"},
		{"/tmp/x.jsonl", "", ""},
	} {
		r, root, ok := c.RuleFor(tc.p)
		name := ""
		if ok {
			name = r.Name
		}
		if name != tc.rule || root != tc.root {
			t.Errorf("RuleFor(%q) = %q at %q, want %q at %q", tc.p, name, root, tc.rule, tc.root)
		}
	}
	if r, root, ok := c.TempRuleFor("/srv/a/x.jsonl.tmp"); !ok || r.Name != "second" || root != "/srv" {
		t.Errorf("TempRuleFor = %v %q %v", r, root, ok)
	}
	if _, _, ok := c.TempRuleFor("/srv/a/.x.jsonl.sessionmedic-1.tmp"); ok {
		t.Error("our own temp is not an app temp")
	}
}

func TestOwnTemp(t *testing.T) {
	for base, want := range map[string]bool{
		".sessions.json.sessionmedic-4f2a.tmp": true,
		".a.jsonl.sessionmedic-0.tmp":          true,
		"a.jsonl.sessionmedic-0.tmp":           false,
		".a.jsonl.tmp":                         false,
	} {
		if got := IsOwnTemp(base); got != want {
			t.Errorf("IsOwnTemp(%q) = %v", base, got)
		}
	}
}
