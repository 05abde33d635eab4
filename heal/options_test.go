package heal

import (
	"path/filepath"
	"testing"

	"github.com/sessionmedic/sessionmedic/policy"
)

// The CLI (OneShot) and the daemon build their engines through the same defaults: the quiet
// check of unlocked apps and open-writer detection are on for both.
func TestEngineDefaultsAreTheSameForCLIAndDaemon(t *testing.T) {
	cfg := &policy.Config{Version: 1, StateDir: filepath.Join(t.TempDir(), "state")}
	for _, o := range []Options{{}, {OneShot: true}} {
		e := New(cfg, o)
		if e.quietCheck != DefaultQuietCheck || e.findWriters == nil || e.Now == nil {
			t.Fatalf("New(%+v): quiet check %v, writers %v", o, e.quietCheck, e.findWriters != nil)
		}
		if e.oneShot != o.OneShot {
			t.Fatalf("OneShot not kept")
		}
	}
	if e := New(cfg, Options{QuietCheck: -1}); e.quietCheck > 0 {
		t.Fatal("a negative quiet check must turn it off")
	}
}
