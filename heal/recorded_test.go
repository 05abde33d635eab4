package heal

import (
	"path/filepath"
	"testing"
)

// recorded holds files the apps themselves wrote, recorded with ../shared/oracles
// (make_samples.py), as the app left them: see testdata/recorded/README.md.
const recorded = "testdata/recorded"

// Every file an app wrote and loads is healthy, without a warning, and a heal leaves it byte
// for byte (DESIGN §1: the app is the judge).
func TestRecordedByTheApps(t *testing.T) {
	for _, c := range []struct{ dir, preset, root string }{
		// Gemini CLI 0.61.0, resumed four times: each resume appends a metadata record.
		{"gemini-cli/resumed", "gemini-cli", ".gemini"},
	} {
		t.Run(c.dir, func(t *testing.T) {
			root := filepath.Join(t.TempDir(), "home")
			copyTree(t, filepath.Join(recorded, c.dir), root)
			e := testEngine(t, c.preset, filepath.Join(root, c.root))
			before := snapshot(t, root)
			reports := runAll(t, e, true)
			if len(reports) == 0 {
				t.Fatal("no file inspected")
			}
			for _, r := range reports {
				if r.Verdict != Healthy || len(r.Warnings) > 0 {
					t.Errorf("%s: %s %s %s %v", r.Path, r.Verdict, r.Kind, r.Detail, r.Warnings)
				}
			}
			assertSame(t, before, snapshot(t, root), nil)
		})
	}
}
