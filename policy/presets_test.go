package policy

import (
	"io/fs"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"slices"
	"testing"
)

func TestPresetNames(t *testing.T) {
	if got := Presets(); !slices.Equal(got, []string{"copaw", "nanobot", "praisonai", "openviking", "openclaw", "claude-code", "codex", "gemini-cli", "pi", "copilot-cli", "qwen-code", "opencode"}) {
		t.Fatalf("Presets() = %v", got)
	}
	for _, name := range PresetChoices() {
		r, ok := PresetRule(name, fakeEnv(nil))
		if !ok || r.Format != r.Preset || r.Name != r.Preset {
			t.Errorf("PresetRule(%q) = %+v, %v", name, r, ok)
		}
		settle := DefaultSettle
		if name == "pi" || name == "qwen-code" || name == "copilot-cli" {
			settle = AppendSettle
		}
		if r.Settle != settle || r.MaxWait != DefaultMaxWait || !r.KeepLastGood || r.Mode != "heal" ||
			r.Limits != (Limits{MaxLoss: 0.5, MaxFileSize: GiB}) || r.TempAge != DefaultTempAge {
			t.Errorf("preset %s does not have the common defaults: %+v", name, r)
		}
	}
	if r, _ := PresetRule("qwenpaw", fakeEnv(nil)); r.Preset != "copaw" {
		t.Errorf("qwenpaw is stored as %q", r.Preset)
	}
	if _, ok := PresetRule("hermes", fakeEnv(nil)); ok {
		t.Error("unknown preset accepted")
	}
}

func TestPresetDefaultPaths(t *testing.T) {
	ovConf := func(body string) func(string) ([]byte, error) {
		return func(p string) ([]byte, error) {
			if p == "/etc/ov.conf" || p == "/home/u/.openviking/ov.conf" {
				return []byte(body), nil
			}
			return nil, fs.ErrNotExist
		}
	}
	for _, tc := range []struct {
		name, preset string
		env          Env
		want         []string
	}{
		{"copaw qwenpaw env", "copaw", fakeEnv(map[string]string{"QWENPAW_WORKING_DIR": "/srv/qp", "COPAW_WORKING_DIR": "/srv/cp"}), []string{"/srv/qp"}},
		{"copaw copaw env", "copaw", fakeEnv(map[string]string{"COPAW_WORKING_DIR": "~/cp"}), []string{"/home/u/cp"}},
		{"copaw relative env", "copaw", fakeEnv(map[string]string{"COPAW_WORKING_DIR": "cp"}), nil},
		{"copaw legacy home", "copaw", fakeEnv(nil, "/home/u/.copaw"), []string{"/home/u/.copaw"}},
		{"copaw new home", "copaw", fakeEnv(nil), []string{"/home/u/.qwenpaw"}},
		{"copaw no home", "copaw", Env{}, nil},
		{"nanobot", "nanobot", fakeEnv(nil), []string{"/home/u/.nanobot"}},
		{"praisonai", "praisonai", fakeEnv(nil), []string{"/home/u/.praisonai/sessions", "/home/u/.praison/sessions"}},
		{"praisonai all", "praisonai", Env{Home: "/home/u", XDGDataHome: "/home/u/.local/share",
			Getenv: func(k string) string { return map[string]string{"PRAISONAI_HOME": "/opt/praison"}[k] }},
			[]string{"/opt/praison/sessions", "/home/u/.praisonai/sessions", "/home/u/.praison/sessions", "/home/u/.local/share/praisonai/sessions"}},
		{"openviking none", "openviking", fakeEnv(nil), nil},
		{"openviking home conf", "openviking", Env{Home: "/home/u", ReadFile: ovConf(`{"storage": {"workspace": "~/ov-data"}}`)}, []string{"/home/u/ov-data"}},
		{"openviking env conf", "openviking", Env{Home: "/x", ReadFile: ovConf(`{"storage": {"workspace": "/srv/ov"}}`),
			Getenv: func(k string) string { return map[string]string{"OPENVIKING_CONFIG_FILE": "/etc/ov.conf"}[k] }}, []string{"/srv/ov"}},
		{"openviking relative workspace", "openviking", Env{Home: "/home/u", ReadFile: ovConf(`{"storage": {"workspace": "./data"}}`)}, nil},
		{"openviking not json", "openviking", Env{Home: "/home/u", ReadFile: ovConf(`storage = x`)}, nil},
		{"openclaw state dir", "openclaw", fakeEnv(map[string]string{"OPENCLAW_STATE_DIR": "/srv/oc"}), []string{"/srv/oc"}},
		{"openclaw openclaw home", "openclaw", fakeEnv(map[string]string{"OPENCLAW_HOME": "/opt/h"}), []string{"/opt/h/.openclaw"}},
		{"openclaw existing", "openclaw", fakeEnv(nil, "/home/u/.openclaw", "/home/u/.clawdbot"), []string{"/home/u/.openclaw"}},
		{"openclaw legacy", "openclaw", fakeEnv(nil, "/home/u/.clawdbot"), []string{"/home/u/.clawdbot"}},
		{"openclaw fresh", "openclaw", fakeEnv(nil), []string{"/home/u/.openclaw"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r, _ := PresetRule(tc.preset, tc.env)
			if !slices.Equal(r.Paths, tc.want) {
				t.Errorf("paths %q, want %q", r.Paths, tc.want)
			}
		})
	}
}

// sessionFile is, per app, an independent description of the sample files a preset must
// cover (paths relative to samples/<app>/); every other file must not be covered.
var sessionFile = map[string]*regexp.Regexp{
	"copaw":       regexp.MustCompile(`^[^/]+/sessions/([^/]+/)?[^/]+\.json$`),
	"nanobot":     regexp.MustCompile(`^([^/]+/)*[^/]+\.jsonl$`),
	"praisonai":   regexp.MustCompile(`^[^/]+/sessions/[A-Za-z0-9_-]+\.json$`),
	"openviking":  regexp.MustCompile(`^[^/]+/workspace/viking/default/user/default/sessions/[^/]+/(messages\.jsonl|\.meta\.json)$`),
	"openclaw":    regexp.MustCompile(`^[^/]+/state/agents/main/sessions/(sessions\.json|[0-9a-f-]{36}\.jsonl)$`),
	"claude-code": regexp.MustCompile(`^[^/]+/home/\.claude/projects/-tmp-demo-proj/[0-9a-f-]{36}\.jsonl$`),
	"codex":       regexp.MustCompile(`^[^/]+/home/\.codex/sessions/2026/11/22/rollout-[0-9T-]+-[0-9a-f-]{36}\.jsonl$`),
	"gemini-cli":  regexp.MustCompile(`^[^/]+/home/\.gemini/tmp/proj/chats/session-[0-9T-]+-[0-9a-f]{8}\.jsonl$`),
	"pi":          regexp.MustCompile(`^[^/]+/home/\.pi/agent/sessions/--tmp-demo-proj--/[0-9T-]+Z_[0-9a-f-]{36}\.jsonl$`),
	"copilot-cli": regexp.MustCompile(`^[^/]+/home/\.copilot/session-state/[0-9a-f-]{36}/events\.jsonl$`),
	"qwen-code":   regexp.MustCompile(`^[^/]+/home/\.qwen/projects/-tmp-oracle-proj/chats/[0-9a-f-]{36}\.jsonl$`),
	"opencode":    regexp.MustCompile(`^[^/]+/home/\.local/share/opencode/opencode\.db$`),
}

// appTemp describes the sample files that are the app's temp files (clean-temp candidates).
var appTemp = map[string]*regexp.Regexp{
	"nanobot":   regexp.MustCompile(`^stale_tmp_(head/\.[A-Za-z0-9_-]+\.jsonl\.[0-9a-f]{16}|pr3312/[^/]+\.jsonl)\.tmp$`),
	"praisonai": regexp.MustCompile(`^[^/]+/sessions/tmp[a-z0-9_]{8}\.tmp$`),
}

func TestPresetsOnSamples(t *testing.T) {
	samples, err := filepath.Abs("../heal/testdata/samples")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(samples); err != nil {
		t.Skipf("no sample tree: %v", err)
	}
	for _, app := range Presets() {
		t.Run(app, func(t *testing.T) {
			appDir := filepath.Join(samples, app)
			rule, _ := PresetRule(app, fakeEnv(nil))
			rule.Paths = []string{appDir}
			byApp := &Config{Rules: []Rule{rule}}
			covered, temps := 0, 0
			err := filepath.WalkDir(appDir, func(p string, de fs.DirEntry, err error) error {
				if err != nil || de.IsDir() {
					return err
				}
				rel, _ := filepath.Rel(appDir, p)
				rel = filepath.ToSlash(rel)
				want := sessionFile[app].MatchString(rel)
				if _, _, got := byApp.RuleFor(p); got != want {
					t.Errorf("%s: covered %v, want %v", rel, got, want)
				}
				if want {
					covered++
				}
				// The same answer with the case directory as the rule's path; and a
				// session file is still covered when the path is its own directory (the
				// sessions directory itself, a channel, a namespace or a session dir).
				caseDir := filepath.Join(appDir, firstSegment(rel))
				if got := rule.Covers(caseDir, p); got != want {
					t.Errorf("%s under the case dir: covered %v, want %v", rel, got, want)
				}
				if want && !rule.Covers(filepath.Dir(p), p) {
					t.Errorf("%s under its own directory: not covered", rel)
				}
				wantTemp := appTemp[app] != nil && appTemp[app].MatchString(rel)
				if _, _, got := byApp.TempRuleFor(p); got != wantTemp {
					t.Errorf("%s: temp %v, want %v", rel, got, wantTemp)
				}
				if wantTemp {
					temps++
				}
				return nil
			})
			if err != nil {
				t.Fatal(err)
			}
			if covered == 0 || (appTemp[app] != nil && temps == 0) {
				t.Errorf("%d session files and %d temps covered", covered, temps)
			}
			t.Logf("%d session files, %d temps", covered, temps)
		})
	}
}

func firstSegment(rel string) string {
	for i := range len(rel) {
		if rel[i] == '/' {
			return rel[:i]
		}
	}
	return rel
}

// TestPresetsTogether checks that the default policy, with each preset at its app's home,
// sends every sample file to the right rule.
func TestPresetsTogether(t *testing.T) {
	samples, err := filepath.Abs("../heal/testdata/samples")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(samples); err != nil {
		t.Skipf("no sample tree: %v", err)
	}
	c := Default(fakeEnv(nil))
	for i := range c.Rules {
		c.Rules[i].Paths = []string{filepath.Join(samples, c.Rules[i].Name)}
	}
	err = filepath.WalkDir(samples, func(p string, de fs.DirEntry, err error) error {
		if err != nil || de.IsDir() {
			return err
		}
		rel, _ := filepath.Rel(samples, p)
		app := firstSegment(filepath.ToSlash(rel))
		want := ""
		if re := sessionFile[app]; re != nil && re.MatchString(filepath.ToSlash(rel)[len(app)+1:]) {
			want = app
		}
		got := ""
		if r, _, ok := c.RuleFor(p); ok {
			got = r.Name
		}
		if got != want {
			t.Errorf("%s: rule %q, want %q", rel, got, want)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(c.Rules[0].Match, []string{"**/sessions/*.json", "**/sessions/*/*.json"}) {
		t.Errorf("copaw match %v", c.Rules[0].Match)
	}
}

// TestPresetPatterns covers files the sample trees do not have.
func TestPresetPatterns(t *testing.T) {
	for _, tc := range []struct {
		preset, root, rel string
		want              bool
	}{
		{"copaw", "/h/.copaw", "workspaces/default/sessions/console/default_console--default.json", true},
		{"copaw", "/h/.copaw", "sessions/default_console--default.json", true},
		{"copaw", "/h/.copaw/workspaces/default/sessions", "console/a.json", true},
		{"copaw", "/h/.copaw", "workspaces/default/sessions/.weixin-legacy/weixin--x.json", false},
		{"copaw", "/h/.copaw", "workspaces/default/chats.json", false},
		{"copaw", "/h/.copaw", "workspaces/default/dialog/2026-11-21.jsonl", false},
		{"copaw", "/h/.copaw", "workspaces/default/agent.json", false},
		{"copaw", "/h/.copaw", "config.json", false},
		// A rule path naming a sessions directory under another name (CoPaw ≤ 1.1.2's flat
		// layout as the samples keep it); met below a home, such a name counts as it is.
		{"copaw", "/h/sessions_legacy_layout", "default_console--default.json", true},
		{"copaw", "/h/sessions_legacy_layout", "console/default_console--default.json", true},
		{"copaw", "/h/copaw-sessions", "chats.json", false},
		{"copaw", "/h/.copaw", "sessions_legacy_layout/default_console--default.json", false},
		{"copaw", "/h/.copaw-sessionsbot", "config.json", false},
		{"nanobot", "/h/.nanobot", "workspace/sessions/telegram_1.jsonl", true},
		{"nanobot", "/h/.nanobot", "sessions/0123456789abcdef0123456789abcdef/Y2xpOmRpcmVjdA.jsonl", true},
		{"nanobot", "/h/.nanobot", "sessions/0123456789abcdef0123456789abcdef/.migration-conflicts/a.jsonl.destination.0123456789ab.01234567.jsonl", false},
		{"nanobot", "/h/.nanobot", "sessions/0123456789abcdef0123456789abcdef/.a.jsonl.0123456789abcdef.tmp", false},
		{"nanobot", "/h/.nanobot", "workspace/sessions/a.jsonl.tmp", false},
		{"nanobot", "/h/.nanobot", "sessions/.workspace-migration.lock", false},
		{"praisonai", "/h/.praisonai/sessions", "my-session-123.json", true},
		{"praisonai", "/h/.praisonai", "sessions/my-session-123.json", true},
		{"praisonai", "/h/.praisonai", "state/session_spill/s.1795246945167.42.0badcafe.json", false},
		{"praisonai", "/h/.praisonai/sessions", "parent-chat.json.corrupt-1795246945167", false},
		{"praisonai", "/h/.praisonai/sessions", "parent-chat.json.lock", false},
		{"praisonai", "/h/.praisonai/sessions", "tmpk3j4h5g6.tmp", false},
		{"openviking", "/srv/ov", "viking/default/user/default/sessions/s1/messages.jsonl", true},
		{"openviking", "/srv/ov", "viking/default/user/default/sessions/s1/.meta.json", true},
		{"openviking", "/srv/ov/viking/default/user/default/sessions/s1", "messages.jsonl", true},
		{"openviking", "/srv/ov", "viking/default/session/s1/messages.jsonl", true},
		{"openviking", "/srv/ov", "viking/default/session/u1/s1/.meta.json", true},
		{"openviking", "/srv/ov", "viking/default/user/default/sessions/s1/history/archive_001/messages.jsonl", false},
		{"openviking", "/srv/ov", "viking/default/user/default/sessions/s1/history/archive_001/.meta.json", false},
		{"openviking", "/srv/ov", "viking/default/session/s1/history/archive_001/.meta.json", false},
		{"openviking", "/srv/ov", "viking/default/user/default/sessions/s1/tool-results/t1/metadata.json", false},
		{"openviking", "/srv/ov", "viking/default/user/default/sessions/s1/.path.ovlock", false},
		{"openviking", "/srv/ov-sessions", "s1/messages.jsonl", true},
		{"openviking", "/srv/ov-sessions", "s1/history/archive_001/messages.jsonl", false},
		{"praisonai", "/srv/bot-sessions", "my-session-123.json", true},
		{"praisonai", "/h/.praisonai/state/session_spill", "s.1795246945167.42.0badcafe.json", false},
		{"openclaw", "/h/.openclaw", "agents/main/sessions/sessions.json", true},
		{"openclaw", "/h/.openclaw", "agents/main/sessions/22b12a33-f522-4b4e-8a49-9caac0c99f8c.jsonl", true},
		{"openclaw", "/h/.openclaw/agents/main/sessions", "sessions.json", true},
		{"openclaw", "/h/.openclaw", "agents/main/sessions/a.jsonl.corrupt-2026-11-21T07-38-12-639Z-0badcafe.jsonl", false},
		{"openclaw", "/h/.openclaw", "agents/main/sessions/a.checkpoint.22b12a33-f522-4b4e-8a49-9caac0c99f8c.jsonl", false},
		{"openclaw", "/h/.openclaw", "agents/main/sessions/a.trajectory.jsonl", false},
		{"openclaw", "/h/.openclaw", "agents/main/sessions/a.jsonl.deleted.2026-11-21T07-38-12.639Z", false},
		{"openclaw", "/h/.openclaw", "agents/main/sessions/sessions.json.bak.1795247922317", false},
		{"openclaw", "/h/.openclaw", "agents/main/sessions/sessions.json.4242.22b12a33-f522-4b4e-8a49-9caac0c99f8c.tmp", false},
		{"openclaw", "/h/.openclaw", "agents/main/sessions/a.jsonl.compact.22b12a33-f522-4b4e-8a49-9caac0c99f8c.tmp", false},
		{"openclaw", "/h/.openclaw", "agents/main/agent/openclaw-agent.sqlite", true},
		{"openclaw", "/h/.openclaw/agents/main/agent", "openclaw-agent.sqlite", true},
		{"openclaw", "/h/.openclaw", "agents/main/agent/openclaw-agent.sqlite-wal", false},
		{"openclaw", "/h/.openclaw", "agents/main/agent/openclaw-agent.sqlite-shm", false},
		{"openclaw", "/h/.openclaw", "agents/main/agent/openclaw-agent.sqlite.corrupt-1795522643215", false},
		{"openclaw", "/h/.openclaw", "agents/main/agent/openclaw-agent.sqlite-wal.orphaned-1795522643215", false},
		{"openclaw", "/h/.openclaw", "state/openclaw.sqlite", false},
		{"openclaw", "/h/.openclaw", "workspace/notes.jsonl", false},
	} {
		r, _ := PresetRule(tc.preset, fakeEnv(nil))
		p := filepath.Join(tc.root, tc.rel)
		if got := r.Covers(tc.root, p); got != tc.want {
			t.Errorf("%s: Covers(%s) = %v, want %v", tc.preset, p, got, tc.want)
		}
	}
}

// Every environment variable a preset reads is in PresetEnv (a harness drops them all).
func TestPresetEnvListsWhatThePresetsRead(t *testing.T) {
	listed := map[string]bool{}
	for _, k := range PresetEnv() {
		listed[k] = true
	}
	for _, name := range Presets() {
		env := Env{Home: "/home/u", Getenv: func(k string) string {
			if !listed[k] {
				t.Errorf("preset %s reads $%s, which PresetEnv does not list", name, k)
			}
			return ""
		}}
		PresetRule(name, env)
	}
}
