package policy

import (
	"errors"
	"flag"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"
)

var update = flag.Bool("update", false, "rewrite testdata/bad/*.err from the current errors")

// fakeEnv is a deterministic environment: home /home/u, the given variables, and the given
// paths existing.
func fakeEnv(vars map[string]string, existing ...string) Env {
	return Env{
		Home:   "/home/u",
		Getenv: func(k string) string { return vars[k] },
		Exists: func(p string) bool { return slices.Contains(existing, p) },
	}
}

func TestBadFixtures(t *testing.T) {
	files, err := filepath.Glob("testdata/bad/*.yaml")
	if err != nil || len(files) < 15 {
		t.Fatalf("want at least 15 bad fixtures, got %d (%v)", len(files), err)
	}
	env := fakeEnv(map[string]string{"SRV": "/srv"})
	for _, file := range files {
		name := filepath.Base(file)
		t.Run(strings.TrimSuffix(name, ".yaml"), func(t *testing.T) {
			data, err := os.ReadFile(file)
			if err != nil {
				t.Fatal(err)
			}
			_, perr := ParseEnv(name, data, env)
			if perr == nil {
				t.Fatal("parsed without error")
			}
			var pe *Error
			if !errors.As(perr, &pe) || pe.File != name {
				t.Fatalf("error %v is not a *Error for %s", perr, name)
			}
			errFile := strings.TrimSuffix(file, ".yaml") + ".err"
			if *update {
				if err := os.WriteFile(errFile, []byte(perr.Error()+"\n"), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			want, err := os.ReadFile(errFile)
			if err != nil {
				t.Fatal(err)
			}
			if got := perr.Error(); got != strings.TrimSuffix(string(want), "\n") {
				t.Errorf("error:\n got %s\nwant %s", got, want)
			}
		})
	}
}

func TestGoodFixtures(t *testing.T) {
	files, _ := filepath.Glob("testdata/good/*.yaml")
	if len(files) == 0 {
		t.Fatal("no good fixtures")
	}
	env := fakeEnv(map[string]string{"SRV": "/srv"})
	for _, file := range files {
		t.Run(filepath.Base(file), func(t *testing.T) {
			c, err := LoadEnv(file, env)
			if err != nil {
				t.Fatal(err)
			}
			if c.Source != file {
				t.Errorf("Source = %q, want %q", c.Source, file)
			}
			roundTrip(t, c, env)
		})
	}
}

// roundTrip checks that Marshal, then Parse, gives back an equal Config.
func roundTrip(t *testing.T, c *Config, env Env) {
	t.Helper()
	out := Marshal(c)
	back, err := ParseEnv(c.Source, out, env)
	if err != nil {
		t.Fatalf("parse marshalled policy: %v\n%s", err, out)
	}
	if !reflect.DeepEqual(plain(back), plain(c)) {
		t.Fatalf("round trip differs:\n got %+v\nwant %+v\n%s", back, c, out)
	}
	if again := Marshal(back); string(again) != string(out) {
		t.Fatalf("marshal is not stable:\n%s\n---\n%s", out, again)
	}
}

func TestEveryKey(t *testing.T) {
	env := fakeEnv(map[string]string{"SRV": "/srv"})
	c, err := LoadEnv("testdata/good/every-key.yaml", env)
	if err != nil {
		t.Fatal(err)
	}
	want := &Config{
		Version:     1,
		StateDir:    "/srv/state/sessionmedic",
		Log:         Log{Format: "json", Level: "debug"},
		HTTP:        HTTP{Listen: "127.0.0.1:9477", Pprof: true},
		Quarantine:  Retention{MaxAge: 168 * time.Hour, MaxBytes: 500 * 1000 * 1000},
		LastGood:    LastGoodLimits{MaxFileBytes: 16 * MiB, MaxTotalBytes: 2 * GiB},
		WatchBudget: 4096,
		Source:      "testdata/good/every-key.yaml",
		Rules: []Rule{{
			Name:           "claw",
			Preset:         "openclaw",
			Paths:          []string{"/home/u/.openclaw", "/srv/claw"},
			Match:          []string{"**/agents/*/sessions/*.jsonl"},
			Exclude:        []string{"*.corrupt-*", "archive/**"},
			Format:         "openclaw",
			Settle:         1500 * time.Millisecond,
			MaxWait:        time.Minute,
			Lock:           Lock{Protocol: "lockfile", Path: "{dir}/sessions.json.lock", Stale: 45 * time.Second, Wait: 3 * time.Second},
			Backups:        []string{"{dir}/sessions.json.bak.*", "{file}.orig"},
			Strategies:     []Strategy{"backup", "salvage", "drop-invalid-entries", "normalize", "clean-temp"},
			Limits:         Limits{MaxLoss: 0.25, MaxFileSize: 256 * MiB},
			Mode:           "observe",
			RestoreDeleted: true,
			TempAge:        10 * time.Minute,
			Temps:          []string{"*.tmp"},
		}, {
			Name:         "praison-flock",
			Format:       "praisonai",
			Paths:        []string{"/srv/praison/sessions"},
			Match:        []string{"*.json"},
			Settle:       DefaultSettle,
			MaxWait:      DefaultMaxWait,
			Lock:         Lock{Protocol: "flock", Path: "{file}.lock", Wait: 500 * time.Millisecond},
			Strategies:   []Strategy{"salvage", "last-good"},
			Limits:       Limits{MaxLoss: DefaultMaxLoss, MaxFileSize: DefaultMaxFileSize},
			KeepLastGood: true,
			Mode:         "heal",
			TempAge:      DefaultTempAge,
		}, {
			Name:         "ov-protocol",
			Format:       "openviking",
			Paths:        []string{"/srv/praison/sessions", "/srv/ov"},
			Match:        []string{"**/sessions/*/messages.jsonl"},
			Settle:       DefaultSettle,
			MaxWait:      DefaultMaxWait,
			Lock:         Lock{Protocol: "openviking", Stale: time.Minute, Wait: time.Second},
			Strategies:   []Strategy{"salvage", "last-good"},
			Limits:       Limits{MaxLoss: DefaultMaxLoss, MaxFileSize: DefaultMaxFileSize},
			KeepLastGood: true,
			Mode:         "heal",
			TempAge:      DefaultTempAge,
		}},
	}
	if !reflect.DeepEqual(plain(c), want) {
		t.Fatalf("got  %+v\nwant %+v", c, want)
	}
	wantRoots := []string{"/home/u/.openclaw", "/srv/claw", "/srv/praison/sessions", "/srv/ov"}
	if got := c.Roots(); !slices.Equal(got, wantRoots) {
		t.Errorf("Roots() = %v, want %v", got, wantRoots)
	}
}

func TestExampleConfig(t *testing.T) {
	env := fakeEnv(nil)
	c, err := LoadEnv("../config.example.yaml", env)
	if err != nil {
		t.Fatal(err)
	}
	var presets []string
	custom := 0
	for _, r := range c.Rules {
		if r.Preset == "" {
			custom++
		} else {
			presets = append(presets, r.Preset)
		}
	}
	if !slices.Equal(presets, Presets()) || custom != 1 {
		t.Errorf("example rules: presets %v and %d custom, want one per preset and one custom", presets, custom)
	}
	if r := c.Rule("praisonai"); r.Limits != (Limits{MaxLoss: 0.25, MaxFileSize: GiB}) {
		t.Errorf("praisonai limits = %+v: max_loss must override and max_file_size stay", r.Limits)
	}
	roundTrip(t, c, env)
}

func TestDefault(t *testing.T) {
	for _, tc := range []struct {
		name string
		env  Env
		want string
	}{
		{"systemd", Env{Home: "/home/u", Root: true, Getenv: func(k string) string {
			return map[string]string{"STATE_DIRECTORY": "/var/lib/sm:/var/lib/other"}[k]
		}}, "/var/lib/sm"},
		{"root", Env{Home: "/root", Root: true}, "/var/lib/sessionmedic"},
		{"xdg", Env{Home: "/home/u", XDGStateHome: "/home/u/st"}, "/home/u/st/sessionmedic"},
		{"relative xdg is ignored", Env{Home: "/home/u", XDGStateHome: "st"}, "/home/u/.local/state/sessionmedic"},
		{"home", Env{Home: "/home/u"}, "/home/u/.local/state/sessionmedic"},
		{"nothing", Env{}, "/var/lib/sessionmedic"},
		{"system", SystemEnv(), ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := Default(tc.env)
			if tc.want != "" && c.StateDir != tc.want {
				t.Errorf("StateDir = %q, want %q", c.StateDir, tc.want)
			}
			if c.Source != DefaultSource || len(c.Rules) != len(Presets()) {
				t.Errorf("Source %q, %d rules", c.Source, len(c.Rules))
			}
			for i, r := range c.Rules {
				p, _ := PresetRule(Presets()[i], tc.env)
				if !reflect.DeepEqual(r, p) {
					t.Errorf("rule %d = %+v, want the preset %+v", i, r, p)
				}
			}
			roundTrip(t, c, tc.env)
		})
	}
}

func TestPresetOverride(t *testing.T) {
	env := fakeEnv(nil)
	c, err := ParseEnv("p.yaml", []byte(`version: 1
rules:
  - name: qp
    preset: qwenpaw
    strategies: [salvage]
    exclude: []
    lock: {lockfile: "{file}.lock"}
    limits: {max_file_size: 10MB}
`), env)
	if err != nil {
		t.Fatal(err)
	}
	want, _ := PresetRule("copaw", env)
	want.Name = "qp"
	want.Strategies = []Strategy{"salvage"}
	want.Exclude = nil
	want.Lock = Lock{Protocol: "lockfile", Path: "{file}.lock", Stale: DefaultLockStale, Wait: DefaultLockWait}
	want.Limits.MaxFileSize = 10_000_000
	if !reflect.DeepEqual(plainRule(c.Rules[0]), want) {
		t.Fatalf("got  %+v\nwant %+v", c.Rules[0], want)
	}
	if want.Preset != "copaw" || want.Paths[0] != "/home/u/.qwenpaw" {
		t.Errorf("preset %q paths %v", want.Preset, want.Paths)
	}
}

func TestExisting(t *testing.T) {
	env := fakeEnv(nil, "/home/u/.nanobot", "/srv/b")
	c, err := ParseEnv("e.yaml", []byte(`version: 1
rules:
  - {name: copaw, preset: copaw}
  - {name: nanobot, preset: nanobot}
  - {name: openviking, preset: openviking}
  - {name: custom, format: json, paths: [/srv/a, /srv/b, /srv/c]}
`), env)
	if err != nil {
		t.Fatal(err)
	}
	kept, skipped := c.Existing(env)
	var names []string
	for _, r := range kept.Rules {
		names = append(names, r.Name)
	}
	if !slices.Equal(names, []string{"nanobot", "custom"}) {
		t.Errorf("kept rules %v", names)
	}
	if got := kept.Rule("custom").Paths; !slices.Equal(got, []string{"/srv/b"}) {
		t.Errorf("kept custom paths %v", got)
	}
	if want := []string{"/home/u/.qwenpaw", "/srv/a", "/srv/c"}; !slices.Equal(skipped, want) {
		t.Errorf("skipped %v, want %v", skipped, want)
	}
	if len(c.Rules) != 4 || len(c.Rule("custom").Paths) != 3 {
		t.Error("Existing modified its receiver")
	}
}

func TestErrorFormat(t *testing.T) {
	for _, tc := range []struct {
		err  Error
		want string
	}{
		{Error{"bad.yaml", 7, "rules[1].settle", `"2x" is not a duration`}, `bad.yaml:7: rules[1].settle: "2x" is not a duration`},
		{Error{"bad.yaml", 3, "", "could not find expected ':'"}, `bad.yaml:3: could not find expected ':'`},
		{Error{"bad.yaml", 0, "", "unknown anchor 'a' referenced"}, `bad.yaml: unknown anchor 'a' referenced`},
	} {
		if got := tc.err.Error(); got != tc.want {
			t.Errorf("got %s, want %s", got, tc.want)
		}
	}
}

func TestLoadMissingFile(t *testing.T) {
	_, err := Load("testdata/does-not-exist.yaml")
	if !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("err = %v", err)
	}
}

func TestExpandTemplate(t *testing.T) {
	f := "/s/agents/main/sessions/sessions.json"
	for tmpl, want := range map[string]string{
		"{file}.bak.*":              f + ".bak.*",
		"{dir}/sessions.json.bak.*": "/s/agents/main/sessions/sessions.json.bak.*",
		"{dir}/.{name}.lock":        "/s/agents/main/sessions/.sessions.json.lock",
		"/var/lock/x":               "/var/lock/x",
	} {
		if got := ExpandTemplate(tmpl, f); got != want {
			t.Errorf("ExpandTemplate(%q) = %q, want %q", tmpl, got, want)
		}
	}
}
