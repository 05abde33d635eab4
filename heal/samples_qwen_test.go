package heal

import (
	"testing"

	"github.com/sessionmedic/sessionmedic/heal/format"
)

// The Qwen Code samples (samples/qwen-code/README.md): one runtime home per case, the
// session cut from healthy, which Qwen Code 0.24.4 wrote (a first run and 4 resumes, 5
// turns, two with a read_file tool call).
const (
	qwenSession = "home/.qwen/projects/-tmp-oracle-proj/chats/2e7f8d81-0fed-4f4d-93ed-de324a5bf18d.jsonl"
	qwenHealthy = "qwen-code/healthy/" + qwenSession
)

func qwenSampleCases() []sampleCase {
	c := func(src string, files ...fileExp) sampleCase {
		return sampleCase{app: "qwen-code", src: src, preset: "qwen-code", files: files}
	}
	f := func(kind, strategy, want string, check func(*testing.T, []byte, []byte)) fileExp {
		return fileExp{file: qwenSession, kind: kind, strategy: strategy, want: want, check: check}
	}
	withLG := func(e fileExp) fileExp {
		e.lgFrom, e.lgStrategy, e.lgWant = qwenHealthy, "last-good", qwenHealthy
		return e
	}
	return []sampleCase{
		c("healthy"),
		// The torn line 28 cut: healthy lines 1-27, 15076 bytes.
		c("torn_tail", f(format.KindTruncated, "salvage", "", healthyLines(qwenHealthy, 15076, 1, 27))),
		// The NUL run (lines 27-28 zeroed) cut: lines 1-26; with last-good, healthy whole.
		c("nul_tail", withLG(f(format.KindTruncated, "salvage", "", healthyLines(qwenHealthy, 14314, 1, 26)))),
		// The garbage line dropped, the raw newline rejoined escaped, the re-appended last
		// turn dropped: the healthy file itself, byte for byte.
		c("garbage_line", f(format.KindMalformedRecord, "salvage", qwenHealthy, nil)),
		c("split_record", f(format.KindMalformedRecord, "salvage", qwenHealthy, nil)),
		c("duplicate_lines", f(format.KindDuplicateRecord, "salvage", qwenHealthy, nil)),
		// What Qwen wrote resuming torn_tail: its probe record glued to the 254-byte stub
		// (Qwen then sent 1 message). The stub dropped, the probe on its own line.
		c("glued", f(format.KindMalformedRecord, "salvage", "", dropStub(`"cwd":"/tmp/or{"uuid":"`, 254, 17212))),
		// Line 1 torn: dropped; the walk starts at line 2, as Qwen's own does.
		c("torn_first_line", f(format.KindMalformedRecord, "salvage", "", healthyLines(qwenHealthy, 15278, 2, 28))),
		// Never written by Qwen (it says "No saved session found"): last-good, else
		// report-only.
		c("empty", withLG(f(format.KindEmpty, "", "", nil))),
		// Line 12 removed: line 12 now names a parent no record has (Qwen sent 8 of 14).
		// Never re-parented: last-good, else report-only.
		c("history_gap", withLG(f(format.KindSchema, "", "", nil))),
	}
}

// TestQwenSamples runs the Qwen Code cases as TestPiSamples runs pi's.
func TestQwenSamples(t *testing.T) {
	for _, sc := range qwenSampleCases() {
		t.Run(sc.app+"/"+sc.src, func(t *testing.T) { runAppSampleCase(t, sc) })
	}
}
