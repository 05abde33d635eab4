package policy

import (
	"os"
	"path/filepath"
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
		{"/srv/deep/index.json/", "/srv/deep/index.json", true},  // matched by its base name
		{"/srv/", "/srv//sessions/./a.jsonl", true},              // non-clean paths
		{"/sr", "/srv/sessions/a.jsonl", false},
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

func TestNamesSessions(t *testing.T) {
	for name, want := range map[string]bool{
		"sessions":               true,
		"sessions_legacy_layout": true,
		"bot-sessions":           true,
		"Sessions.old":           true,
		"copaw sessions":         true,
		"mysessions":             false,
		"sessionsbot":            false,
		"session":                false, // OpenViking's legacy name is matched by its own patterns
		"session_spill":          false, // PraisonAI's spill directory is not a sessions directory
		"2sessions":              false,
		".copaw":                 false,
	} {
		if got := namesSessions(name); got != want {
			t.Errorf("namesSessions(%q) = %v, want %v", name, got, want)
		}
	}
}

// TestCoversThroughTheRootsLocation: a root's own directory names are read through a
// symlink at the root and as "sessions" when its name says so; names below the root never
// are.
func TestCoversThroughTheRootsLocation(t *testing.T) {
	tmp := t.TempDir()
	mk := func(rel string) string {
		p := filepath.Join(tmp, rel)
		if err := os.MkdirAll(p, 0o755); err != nil {
			t.Fatal(err)
		}
		return p
	}
	link := func(name, target string) string {
		p := filepath.Join(tmp, name)
		if err := os.Symlink(target, p); err != nil {
			t.Fatal(err)
		}
		return p
	}
	ocSessions := mk("data/.openclaw/agents/main/sessions")
	ocAgents := filepath.Dir(filepath.Dir(ocSessions))
	cpSessions := mk("data/.copaw/workspaces/default/sessions")
	renamed := mk("srv/bot-sessions")
	mk("srv/x")
	toOC := link("srv/oc", ocSessions)
	toAgents := link("srv/agents-link", ocAgents)
	toCopaw := link("srv/chats", cpSessions)
	toRenamed := link("srv/x/plain", renamed)
	dangling := link("srv/gone", filepath.Join(tmp, "nowhere"))
	// A symlink below a root is never read: here "link-in" inside a home points at a
	// sessions dir, but the home's rule only sees the name "link-in".
	home := mk("data/.copaw2")
	os.Symlink(cpSessions, filepath.Join(home, "link-in"))

	openclaw, _ := PresetRule("openclaw", fakeEnv(nil))
	copaw, _ := PresetRule("copaw", fakeEnv(nil))
	praison, _ := PresetRule("praisonai", fakeEnv(nil))
	for _, tc := range []struct {
		name string
		r    Rule
		root string
		rel  string
		want bool
	}{
		{"openclaw, symlink to its sessions dir", openclaw, toOC, "sessions.json", true},
		{"openclaw, symlink to its sessions dir, transcript", openclaw, toOC, "22b12a33-f522-4b4e-8a49-9caac0c99f8c.jsonl", true},
		{"openclaw, symlink to its sessions dir, excluded", openclaw, toOC, "a.trajectory.jsonl", false},
		{"openclaw, symlink on the way", openclaw, filepath.Join(toAgents, "main"), "sessions/sessions.json", true},
		{"openclaw, symlink on the way, not a session", openclaw, filepath.Join(toAgents, "main"), "agent/models.json", false},
		{"openclaw, a sessions dir under another name is not its place", openclaw, renamed, "sessions.json", false},
		{"copaw, symlink to a sessions dir", copaw, toCopaw, "console/a.json", true},
		{"copaw, sessions dir under another name", copaw, renamed, "a.json", true},
		{"copaw, sessions dir under another name, channel", copaw, renamed, "console/a.json", true},
		{"copaw, sessions dir under another name, weixin originals", copaw, renamed, ".weixin-legacy/weixin--a.json", false},
		{"copaw, symlink to a sessions dir under another name", copaw, toRenamed, "a.json", true},
		{"copaw, a dangling symlink stays its name", copaw, dangling, "a.json", false},
		{"copaw, no symlink below the root is read", copaw, home, "link-in/a.json", false},
		{"praisonai, sessions dir under another name", praison, renamed, "parent-chat.json", true},
		{"praisonai, sessions dir under another name, quarantined copy", praison, renamed, "parent-chat.json.corrupt-1795246945167", false},
		{"praisonai, symlink to a sessions dir", praison, toCopaw, "parent-chat.json", true},
	} {
		p := filepath.Join(tc.root, tc.rel)
		if got := tc.r.Covers(tc.root, p); got != tc.want {
			t.Errorf("%s: Covers(%s, %s) = %v, want %v", tc.name, tc.root, p, got, tc.want)
		}
	}
}
