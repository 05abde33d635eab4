package heal

import (
	"bytes"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/sessionmedic/sessionmedic/heal/apps"
	"github.com/sessionmedic/sessionmedic/heal/format"
)

// TestSamplesJudgedRecordByRecordAsWhole: every JSONL file of every sample (healthy and
// damaged) whose profile has a record-by-record checklist gets, streamed, the verdict read
// whole gives it: status, kind, offset, detail and warnings. A file too large to hold is
// judged so, and a first scan of a large transcript never builds the whole file's trees.
func TestSamplesJudgedRecordByRecordAsWhole(t *testing.T) {
	reg := apps.Registry()
	entries, err := os.ReadDir(samples)
	if err != nil {
		t.Fatal(err)
	}
	judged := map[string]int{}
	for _, app := range entries {
		if !app.IsDir() {
			continue
		}
		preset := app.Name()
		err := filepath.WalkDir(filepath.Join(samples, preset), func(path string, d fs.DirEntry, err error) error {
			if err != nil || d.IsDir() || !strings.HasSuffix(path, ".jsonl") {
				return err
			}
			typ := reg.Profile(preset, path)
			if _, ok := typ.(format.SequenceChecker); !ok || !typ.JSONL() {
				return nil
			}
			data, err := os.ReadFile(path)
			if err != nil {
				return err
			}
			if len(data) == 0 || format.AllNUL(data) || bytes.HasPrefix(data, format.BOM) {
				return nil // judged before any record is looked at
			}
			if s, ok := typ.(format.Skipper); ok && s.SkipReason(path, data) != "" {
				return nil
			}
			if diff := streamedDiff(path, typ, data); diff != "" {
				t.Error(diff)
			}
			judged[typ.Name()]++
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	for _, name := range []string{"claude-code", "codex", "gemini-cli", "pi", "qwen-code", "copilot-cli", "openclaw-transcript"} {
		if judged[name] == 0 {
			t.Errorf("no sample of %s was judged both ways (judged: %v)", name, judged)
		}
	}
}

// streamedDiff says how the verdict on data, the file at path, streamed differs from the one
// read whole ("" for none).
func streamedDiff(path string, typ format.Profile, data []byte) string {
	whole := format.Inspect(typ, format.File{Path: path}, data)
	streamed, _, err := format.StreamInspect(path, typ)
	if err != nil {
		return fmt.Sprintf("%s: %v", path, err)
	}
	if whole.Status != streamed.Status || whole.Kind != streamed.Kind || whole.Offset != streamed.Offset ||
		whole.Detail != streamed.Detail || strings.Join(whole.Warnings, "\n") != strings.Join(streamed.Warnings, "\n") {
		return fmt.Sprintf("%s (%s):\n  read whole: %s %s at %d: %s %q\n  streamed:   %s %s at %d: %s %q", path, typ.Name(),
			whole.Status, whole.Kind, whole.Offset, whole.Detail, whole.Warnings,
			streamed.Status, streamed.Kind, streamed.Offset, streamed.Detail, streamed.Warnings)
	}
	return ""
}

// streamApps are the presets whose transcripts are judged record by record, each with a
// file's place as its app lays it out (a sample's, below its case directory).
var streamApps = []struct{ preset, rel string }{
	{"claude-code", "home/.claude/projects/-tmp-demo-proj/7c2e1b4a-9d3f-4e8a-b6c1-2f5a8d9e0b13.jsonl"},
	{"codex", "home/.codex/sessions/2026/11/22/rollout-2026-11-22T21-46-17-01a20539-677f-7710-87e4-54a740761238.jsonl"},
	{"gemini-cli", "home/.gemini/tmp/proj/chats/session-2026-11-22T21-40-7759d9fe.jsonl"},
	{"pi", "home/.pi/agent/sessions/--tmp-demo-proj--/2026-11-24T23-24-56-267Z_01a20fe0-6e4b-74a6-a8ea-61958601a7c1.jsonl"},
	{"qwen-code", "home/.qwen/projects/-tmp-oracle-proj/chats/2e7f8d81-0fed-4f4d-93ed-de324a5bf18d.jsonl"},
	{"copilot-cli", "home/.copilot/session-state/568f5a60-7fc4-4a49-a663-724cd54a5984/events.jsonl"},
	{"openclaw", "state/agents/main/sessions/5dbda090-2ac0-44ad-b015-c3eca97cfdce.jsonl"},
}

// FuzzStreamedVerdictMatchesWhole: whatever a transcript holds, the verdict record by record
// (a file too large to hold, a first scan) is the one read whole.
func FuzzStreamedVerdictMatchesWhole(f *testing.F) {
	for i, a := range streamApps {
		filepath.WalkDir(filepath.Join(samples, a.preset), func(p string, d fs.DirEntry, err error) error {
			if err == nil && !d.IsDir() && strings.HasSuffix(p, ".jsonl") {
				if b, err := os.ReadFile(p); err == nil && len(b) < 64<<10 {
					f.Add(uint8(i), b)
				}
			}
			return nil
		})
	}
	reg := apps.Registry()
	f.Fuzz(func(t *testing.T, app uint8, data []byte) {
		a := streamApps[int(app)%len(streamApps)]
		path := filepath.Join(t.TempDir(), a.rel)
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, data, 0o644); err != nil {
			t.Fatal(err)
		}
		typ := reg.Profile(a.preset, path)
		if len(data) == 0 || format.AllNUL(data) || bytes.HasPrefix(data, format.BOM) {
			return // judged before any record is looked at
		}
		if s, ok := typ.(format.Skipper); ok && s.SkipReason(path, data) != "" {
			return
		}
		if diff := streamedDiff(path, typ, data); diff != "" {
			t.Fatalf("%s\ninput %q", diff, data)
		}
	})
}
