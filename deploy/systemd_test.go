package deploy

import (
	"bufio"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/sessionmedic/sessionmedic/policy"
)

const dropIn = "systemd/sessionmedic.service.d/session-dirs.conf.example"

// readWritePaths returns the paths of the drop-in's ReadWritePaths= lines, without the "-"
// that lets a missing one pass, and its User=.
func readWritePaths(t *testing.T) (paths []string, user string) {
	t.Helper()
	f, err := os.Open(filepath.Join("..", dropIn))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if v, ok := strings.CutPrefix(line, "ReadWritePaths="); ok {
			for _, p := range strings.Fields(v) {
				paths = append(paths, strings.TrimPrefix(p, "-"))
			}
		}
		if v, ok := strings.CutPrefix(line, "User="); ok {
			user = v
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return paths, user
}

// presetLocations returns every default location of every preset for a service user whose
// home is home, with none of the apps' environment variables set (a system service has
// none): the locations a preset returns, and every one it looks for before falling back
// (OpenClaw's ~/.clawdbot, CoPaw's ~/.copaw), whether or not they exist. OpenViking's
// workspace comes from its ov.conf, here one naming workspace.
func presetLocations(t *testing.T, home, workspace string) map[string][]string {
	t.Helper()
	out := map[string][]string{}
	for _, name := range policy.Presets() {
		add := func(p string) {
			if !slices.Contains(out[name], p) {
				out[name] = append(out[name], p)
			}
		}
		for _, exists := range []bool{false, true} {
			env := policy.Env{
				Home:   home,
				Exists: func(p string) bool { add(p); return exists },
				ReadFile: func(p string) ([]byte, error) {
					if p == home+"/.openviking/ov.conf" {
						return []byte(`{"storage": {"workspace": "` + workspace + `"}}`), nil
					}
					return nil, os.ErrNotExist
				},
			}
			r, ok := policy.PresetRule(name, env)
			if !ok {
				t.Fatalf("policy.Presets names %s, which PresetRule does not know", name)
			}
			for _, p := range r.Paths {
				add(p)
			}
		}
		if len(out[name]) == 0 {
			t.Errorf("preset %s has no default location under %s", name, home)
		}
	}
	return out
}

// TestDropInCoversEveryPreset: the systemd drop-in example opens up (ReadWritePaths=) every
// default location of every preset, for its User= (app, home /home/app), so that a new
// preset, or a new location of one, cannot be forgotten there; and it names no path that no
// preset uses. The packaged policy is the embedded default (every preset at its default
// locations), and ProtectHome=read-only leaves a location it does not open read-only: a
// heal there would fail.
func TestDropInCoversEveryPreset(t *testing.T) {
	paths, user := readWritePaths(t)
	if user != "app" {
		t.Fatalf("the drop-in's User= is %q; this test takes app, with home /home/app", user)
	}
	// The example's OpenViking workspace (storage.workspace in ov.conf) is outside /home.
	locs := presetLocations(t, "/home/app", "/srv/openviking/data")
	var all []string
	for _, name := range policy.Presets() {
		for _, p := range locs[name] {
			all = append(all, p)
			if !slices.Contains(paths, p) {
				t.Errorf("preset %s: its default location %s has no ReadWritePaths=-%s in %s", name, p, p, dropIn)
			}
		}
	}
	for _, p := range paths {
		if !slices.Contains(all, p) {
			t.Errorf("%s: ReadWritePaths=-%s is no preset's default location", dropIn, p)
		}
	}
}
