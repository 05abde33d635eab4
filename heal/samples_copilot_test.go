package heal

import (
	"bytes"
	"path/filepath"
	"testing"

	"github.com/sessionmedic/sessionmedic/heal/format"
)

// The Copilot CLI samples (samples/copilot-cli/README.md): one Copilot home per case, the
// session cut from healthy, which Copilot CLI 1.0.102 wrote (a first run and 4 resumes, 5
// turns, two with a view tool call).
const (
	copilotSession = "home/.copilot/session-state/568f5a60-7fc4-4a49-a663-724cd54a5984/events.jsonl"
	copilotHealthy = "copilot-cli/healthy/" + copilotSession
)

func copilotSampleCases() []sampleCase {
	c := func(src string, files ...fileExp) sampleCase {
		return sampleCase{app: "copilot-cli", src: src, preset: "copilot-cli", files: files}
	}
	f := func(kind, strategy, want string, check func(*testing.T, []byte, []byte)) fileExp {
		return fileExp{file: copilotSession, kind: kind, strategy: strategy, want: want, check: check}
	}
	withLG := func(e fileExp) fileExp {
		e.lgFrom, e.lgStrategy, e.lgWant = copilotHealthy, "last-good", copilotHealthy
		return e
	}
	return []sampleCase{
		c("healthy"),
		// The torn line 48 cut: healthy lines 1-47.
		c("torn_tail", f(format.KindTruncated, "salvage", "", healthyLines(copilotHealthy, 54679, 1, 47))),
		// Lines 47-48 zeroed in place: lines 1-46; with last-good, healthy whole.
		c("nul_tail", withLG(f(format.KindTruncated, "salvage", "", healthyLines(copilotHealthy, 54494, 1, 46)))),
		// The garbage line dropped, the raw newline rejoined escaped, the re-appended last
		// turn dropped, the stub glued to line 30 dropped: the healthy file, byte for byte
		// (Copilot itself loses the glued record and the split tool result).
		c("garbage_line", f(format.KindMalformedRecord, "salvage", copilotHealthy, nil)),
		c("split_record", f(format.KindMalformedRecord, "salvage", copilotHealthy, nil)),
		c("duplicate_lines", f(format.KindDuplicateRecord, "salvage", copilotHealthy, nil)),
		c("glued", f(format.KindMalformedRecord, "salvage", copilotHealthy, nil)),
		// Line 1 torn after 250 bytes (Copilot refuses the session): rebuilt from its prefix
		// and workspace.yaml, every other line kept.
		c("torn_first_line", f(format.KindMalformedRecord, "rebuild-header", "", copilotRebuilt)),
		// Line 1 gone with its version: last-good, else report-only.
		c("missing_first_line", withLG(f(format.KindSchema, "", "", nil))),
		// Line 13 (assistant.message) without messageId (Copilot refuses the session): with
		// last-good, the record whole; else the event dropped (Copilot sends 13 of 14).
		c("missing_field", withLG(f(format.KindSchema, "drop-invalid-entries", "", copilotWithoutLine(13)))),
		// Never written by Copilot ("No session, task, or name matched"): last-good, else
		// report-only.
		c("empty", withLG(f(format.KindEmpty, "", "", nil))),
	}
}

func copilotLines(t *testing.T) [][]byte {
	return bytes.SplitAfter(read(t, filepath.Join(samples, copilotHealthy)), []byte("\n"))
}

// copilotWithoutLine: the healed file is the damaged one without its line n.
func copilotWithoutLine(n int) func(t *testing.T, orig, healed []byte) {
	return func(t *testing.T, orig, healed []byte) {
		lines := bytes.SplitAfter(orig, []byte("\n"))
		want := bytes.Join(append(append([][]byte{}, lines[:n-1]...), lines[n:]...), nil)
		if !bytes.Equal(healed, want) {
			t.Errorf("healed file (%d bytes) is not the original without line %d (%d bytes)", len(healed), n, len(want))
		}
	}
}

// copilotRebuilt: line 1 is session.start as Copilot writes it, from what the torn prefix
// and workspace.yaml hold (the id line 2 names as its parent); lines 2-48 are healthy's.
func copilotRebuilt(t *testing.T, _, healed []byte) {
	lines := copilotLines(t)
	want := `{"type":"session.start","data":{"sessionId":"568f5a60-7fc4-4a49-a663-724cd54a5984","version":1,"producer":"copilot-agent",` +
		`"copilotVersion":"1.0.102","startTime":"2026-11-25T03:11:26.010Z","context":{"cwd":"/tmp/oracle-proj"}},` +
		`"id":"9275065e-3a4d-44dd-8be9-150df127f310","timestamp":"2026-11-25T03:11:26.010Z","parentId":null}` + "\n"
	if want += string(bytes.Join(lines[1:], nil)); string(healed) != want {
		t.Errorf("rebuilt file:\n%.600s\nwant:\n%.600s", healed, want)
	}
}

// TestCopilotSamples runs the Copilot CLI cases as TestPiSamples runs pi's, with Copilot's
// own lock protocol (no process has the sample sessions).
func TestCopilotSamples(t *testing.T) {
	for _, sc := range copilotSampleCases() {
		t.Run(sc.app+"/"+sc.src, func(t *testing.T) { runAppSampleCase(t, sc) })
	}
}
