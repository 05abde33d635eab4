package heal

import (
	"bytes"
	"path/filepath"
	"testing"
)

// geminiChat is the chat file every gemini-cli case holds, relative to the case's copy.
const geminiChat = "home/.gemini/tmp/proj/chats/session-2026-11-22T21-40-7759d9fe.jsonl"

// geminiSampleCases are the sample cases of samples/gemini*/ (see its README).
func geminiSampleCases() []sampleCase {
	g := func(src string, files ...fileExp) sampleCase {
		return sampleCase{app: "gemini-cli", src: src, preset: "gemini-cli", files: files}
	}
	healthy := "gemini-cli/healthy/" + geminiChat
	withLG := func(f fileExp, strategy string) fileExp {
		f.lgFrom, f.lgStrategy, f.lgWant = healthy, strategy, healthy
		return f
	}
	return []sampleCase{
		g("healthy"),
		// Cut after the last '\n': lines 1-17 of healthy (4761 bytes).
		g("torn_tail", fileExp{file: geminiChat, kind: "truncated", strategy: "salvage", check: healthyLines("gemini-cli/healthy/"+geminiChat, 4761, 1, 17)}),
		// The 25-byte stub before the glued $set is dropped, the $set kept on its own line.
		g("glued_after_resume", fileExp{file: geminiChat, kind: "malformed-record", strategy: "salvage", check: geminiDropStub(25)}),
		// Line 9 dropped: every other line of healthy (4684 bytes).
		g("bad_middle_line", fileExp{file: geminiChat, kind: "malformed-record", strategy: "salvage", check: healthyLines("gemini-cli/healthy/"+geminiChat, 4684, 1, 8, 10, 18)}),
		// last-good restores healthy; without one, line 1 is rebuilt from the tree (4813 bytes).
		g("torn_metadata", withLG(fileExp{file: geminiChat, kind: "malformed-record", strategy: "rebuild-header", check: geminiRebuiltHeader}, "last-good")),
		// The NUL run cut: lines 1-15 (4469 bytes); with last-good the union is healthy.
		g("nul_tail", withLG(fileExp{file: geminiChat, kind: "truncated", strategy: "salvage", check: healthyLines("gemini-cli/healthy/"+geminiChat, 4469, 1, 15)}, "last-good")),
		// report-only without a last-good copy.
		g("empty", withLG(fileExp{file: geminiChat, kind: "empty"}, "last-good")),
		// Neither file is damaged (a cross-file warning on both, see heal/apps); untouched.
		g("stub_sibling_27368"),
	}
}

// geminiHealthy is the healthy sample's lines, each with its '\n'.
func geminiHealthy(t *testing.T) [][]byte {
	t.Helper()
	return bytes.SplitAfter(read(t, filepath.Join(samples, "gemini-cli/healthy", geminiChat)), []byte("\n"))
}

// geminiDropStub: the healed file is the original without the first stub bytes of its
// first malformed line (the glued $set starts a line of its own).
func geminiDropStub(stub int) func(t *testing.T, orig, healed []byte) {
	return func(t *testing.T, orig, healed []byte) {
		at := bytes.Index(orig, []byte(`{"$set":{"lastUpdated":"2{"$set":`))
		if at < 0 {
			t.Fatal("no glued line in the sample")
		}
		want := append(append([]byte{}, orig[:at]...), orig[at+stub:]...)
		if len(want) != 7069 || !bytes.Equal(healed, want) {
			t.Errorf("healed file (%d bytes) is not the original without the %d-byte stub (%d bytes)", len(healed), stub, len(want))
		}
	}
}

// geminiRebuiltHeader: line 1 is the README's rebuilt metadata (healthy's with both times
// the earliest timestamp, 1 ms later), every other line the original's.
func geminiRebuiltHeader(t *testing.T, orig, healed []byte) {
	lines := geminiHealthy(t)
	header := []byte(`{"sessionId":"7759d9fe-6f50-4824-9ae2-297b0ba46ecd","projectHash":"342670b99fa44fb66b2f3d357f6058dc84472b699facf440efe047fbfb07d363","startTime":"2026-11-22T21:40:53.399Z","lastUpdated":"2026-11-22T21:40:53.399Z","kind":"main"}` + "\n")
	if !bytes.Equal(bytes.ReplaceAll(header, []byte("53.399Z"), []byte("53.398Z")), lines[0]) {
		t.Fatal("the README's header differs from healthy's in more than the times")
	}
	want := append(header, orig[bytes.IndexByte(orig, '\n')+1:]...)
	if len(want) != 4813 || !bytes.Equal(healed, want) {
		t.Errorf("healed file (%d bytes) is not the rebuilt line 1 + the original's other lines (%d bytes):\n%.300s", len(healed), len(want), healed)
	}
	if !bytes.Equal(healed[len(header):], bytes.Join(lines[1:], nil)) {
		t.Error("lines 2-18 differ from healthy's")
	}
}
