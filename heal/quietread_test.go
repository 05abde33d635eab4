package heal

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/sessionmedic/sessionmedic/internal/damage"
)

// TestQuietCheckFromEveryRead: on every way a damaged file of an app without a lock is read
// (held whole, streamed, a torn line judged and cut in one pass, a document streamed), the
// first write to it comes at least the quiet check after the heal began: the quiet check
// runs from the start of the read that found the version planned from, never before it.
func TestQuietCheckFromEveryRead(t *testing.T) {
	const quiet = 300 * time.Millisecond
	claude, claudeHealed := gluedApp(t, streamApps[0].preset)
	gemini := jsonlSamples(t, "gemini-cli", "healthy")[0]
	geminiTorn, geminiKept := damage.TearLast(gemini)
	doc := []byte(`{"agent": {"memory": {"content": [[{"id": "1", "name": "user", "role": "user", "content": "hi", "metadata": {}}, []]]}, "name": "QwenPaw"}}`)
	for _, c := range []struct {
		name, preset, rel string
		damaged, healed   []byte
		big, hold         int64 // the engine's big-file and streaming sizes (0: as shipped)
	}{
		{"held whole", streamApps[0].preset, streamApps[0].rel, claude, claudeHealed, 0, 0},
		{"streamed", streamApps[0].preset, streamApps[0].rel, claude, claudeHealed, 1, 1},
		{"torn line cut from its pass", "gemini-cli", streamApps[2].rel, geminiTorn, geminiKept, 1, 1},
		{"document streamed", "copaw", "sessions/console/default_console--default.json", append(bytes.Clone(doc), `t": "x"}}`...), doc, 1, 0},
	} {
		t.Run(c.name, func(t *testing.T) {
			e, root := bigEngine(t, c.big)
			e.holdThreshold = c.hold
			e.quietCheck = quiet
			p := filepath.Join(root, c.rel)
			os.MkdirAll(filepath.Dir(p), 0o755)
			if err := os.WriteFile(p, c.damaged, 0o600); err != nil {
				t.Fatal(err)
			}
			start := time.Now()
			var first time.Duration
			e.onStep = func(s, _ string) {
				if (s == "temp-written" || s == "leased" || s == "renamed") && first == 0 {
					first = time.Since(start)
				}
			}
			r := e.Heal(context.Background(), Target{Path: p, Rule: appRule(t, c.preset, root)}, false)
			if b, _ := os.ReadFile(p); r.Action != ActionHealed || !bytes.Equal(b, c.healed) {
				t.Fatalf("not healed: %+v", r)
			}
			if first < quiet {
				t.Fatalf("the file was first written %v after the heal began, within the quiet check (%v)", first, quiet)
			}
		})
	}
}
