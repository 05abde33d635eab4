package heal

import (
	"bytes"
	"math/rand"
	"os"
	"path/filepath"
	"testing"
)

// TestGeminiFinishPlannedStreaming: a big Gemini CLI chat whose salvage the app's finish
// changes (a resume torn after its context-only checkpoint: the checkpoint dropped; a
// record recovered from a glued line answering a call the torn stub made: that record
// dropped) is planned streaming, the finish a splice of the salvage (never the file read
// whole), and healed as the same chat held whole is: the same report, bytes and quarantine —
// a torn chat's finish begun beside the inspection's judge of the cut as well. Every sample
// chat and the recorded ones, with those damages and at random.
func TestGeminiFinishPlannedStreaming(t *testing.T) {
	rng := rand.New(rand.NewSource(29))
	const ctxOnly = `{"$set":{"messages":[{"id":"c0","timestamp":"2026-11-22T21:41:58.658Z","type":"user","content":[{"text":"<session_context>\nThis is the Gemini CLI.\n</session_context>"}]}]}}` + "\n"
	// A resume torn after its context-only checkpoint.
	tornResume := func(data []byte) []byte {
		return append(append(bytes.Clone(data), ctxOnly...), `{"$set":{"messages":[{"id":"c0","type":"us`...)
	}
	type tree struct{ src, rel string }
	var trees []tree
	cases, err := os.ReadDir(filepath.Join(samples, "gemini-cli"))
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range cases {
		if c.IsDir() {
			trees = append(trees, tree{filepath.Join(samples, "gemini-cli", c.Name()), "home/.gemini/tmp/proj/chats/session-2026-11-22T21-40-7759d9fe.jsonl"})
		}
	}
	trees = append(trees, tree{"testdata/recorded/gemini-cli/glued-tool-result", ".gemini/tmp/oracle-proj/chats/session-2026-11-24T22-06-1dcb804e.jsonl"})
	finished, adopted := 0, 0
	for _, tr := range trees {
		orig, err := os.ReadFile(filepath.Join(tr.src, tr.rel))
		if err != nil || len(orig) == 0 {
			continue
		}
		inputs := [][]byte{orig, tornResume(orig)}
		for range 4 {
			inputs = append(inputs, tornResume(damageLines(rng, orig, 1)), damageLines(rng, orig, 1))
		}
		for _, data := range inputs {
			r1, f1, q1, _ := healInTreeSteps(t, "gemini-cli", tr.src, tr.rel, data, 0)
			r2, f2, q2, steps := healInTreeSteps(t, "gemini-cli", tr.src, tr.rel, data, 1)
			r1.Quarantine, r2.Quarantine, r1.Wrote, r2.Wrote, r1.Path, r2.Path = "", "", nil, nil, "", ""
			if r2.QuarantinedBytes == int64(len(data)-len(f2)) && bytes.HasPrefix(data, f2) && len(f2) > 0 {
				r2.QuarantinedBytes = r1.QuarantinedBytes // a streamed tail cut quarantines what it cuts
			}
			if !equalReports(r1, r2) || !bytes.Equal(f1, f2) || !bytes.Equal(q1, q2) {
				t.Fatalf("%s: %q\nin memory %+v\nstreamed  %+v\nwrote %d and %d bytes, quarantined %d and %d",
					tr.src, data, r1, r2, len(f1), len(f2), len(q1), len(q2))
			}
			if steps["finish-streamed"] && r2.Strategy == "salvage" {
				finished++
			}
			// Judged streaming as well (a chat over the hold size): a torn one's finish is
			// begun beside the inspection's judge of the cut (earlyFinish).
			r3, f3, q3, steps3 := healInTreeTweak(t, "gemini-cli", tr.src, tr.rel, data, 1, func(e *Engine) { e.holdThreshold = 1 })
			r3.Quarantine, r3.Wrote, r3.Path = "", nil, ""
			if r3.QuarantinedBytes == int64(len(data)-len(f3)) && bytes.HasPrefix(data, f3) && len(f3) > 0 {
				r3.QuarantinedBytes = r1.QuarantinedBytes
			}
			if !equalReports(r1, r3) || !bytes.Equal(f1, f3) || !bytes.Equal(q1, q3) {
				t.Fatalf("%s: %q\nin memory %+v\njudged streaming %+v", tr.src, data, r1, r3)
			}
			if steps3["finish-adopted"] {
				adopted++
			}
		}
	}
	if finished < 3 || adopted < 3 {
		t.Fatalf("%d heals by a salvage the finish changed, %d by a finish begun at the inspection: the test tells less than it should", finished, adopted)
	}
	t.Logf("%d heals by a salvage the app's finish changed, planned streaming; %d finished beside the inspection", finished, adopted)
}
