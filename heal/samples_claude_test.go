package heal

import (
	"bytes"
	"os"
	"path/filepath"
	"regexp"
	"runtime"
	"strconv"
	"strings"
	"testing"

	"github.com/sessionmedic/sessionmedic/heal/format"
	"github.com/sessionmedic/sessionmedic/heal/lock"
)

// The Claude Code samples (samples/claude-code/README.md): one config dir per case, the
// transcript cut from healthy, the one Claude Code 2.1.330 wrote.
const (
	claudeSID        = "7c2e1b4a-9d3f-4e8a-b6c1-2f5a8d9e0b13"
	claudeTranscript = "home/.claude/projects/-tmp-demo-proj/" + claudeSID + ".jsonl"
	claudeHealthy    = "claude-code/healthy/" + claudeTranscript
)

// claudeSampleCases are the sample cases of samples/claude*/ (see its README).
func claudeSampleCases() []sampleCase {
	f := func(kind, strategy string, check func(*testing.T, []byte, []byte)) fileExp {
		return fileExp{file: claudeTranscript, kind: kind, strategy: strategy, check: check}
	}
	withLG := func(e fileExp) fileExp {
		e.lgFrom, e.lgStrategy, e.lgWant = claudeHealthy, "last-good", claudeHealthy
		return e
	}
	sealed := claudeDropLines(32)
	return []sampleCase{
		// Healthy, and orphan_tool_use (healthy with a warning, TestClaudeOrphanToolUseWarns):
		// nothing of either is touched.
		{app: "claude-code", src: "healthy", preset: "claude-code"},
		{app: "claude-code", src: "orphan_tool_use", preset: "claude-code"},
		// A pure tail cut: healthy lines 1–31, 20957 bytes.
		{app: "claude-code", src: "torn_tail", preset: "claude-code", files: []fileExp{
			f(format.KindTruncated, "salvage", claudeFromHealthy(20957, claudeHealthyLines(1, 31)))}},
		// The 69-byte stub dropped, the glued "thanks" record kept: healthy without line 27.
		{app: "claude-code", src: "glued_record", preset: "claude-code", files: []fileExp{
			f(format.KindMalformedRecord, "salvage", claudeFromHealthy(21405, claudeWithout(27)))}},
		// '\n' put back at the }{ boundary: the healthy file itself.
		{app: "claude-code", src: "glued_two_complete", preset: "claude-code", files: []fileExp{{
			file: claudeTranscript, kind: format.KindMalformedRecord, strategy: "salvage", want: claudeHealthy}}},
		{app: "claude-code", src: "bad_middle_line", preset: "claude-code", files: []fileExp{
			f(format.KindMalformedRecord, "salvage", claudeFromHealthy(20959, claudeWithout(13)))}},
		// The NUL run cut: healthy lines 1–25; with last-good the healthy file comes back whole.
		{app: "claude-code", src: "nul_tail", preset: "claude-code", files: []fileExp{
			withLG(f(format.KindTruncated, "salvage", claudeFromHealthy(17341, claudeHealthyLines(1, 25))))}},
		// Only the 139 NULs dropped: the "thanks" record starts its own line again.
		{app: "claude-code", src: "nul_then_append", preset: "claude-code", files: []fileExp{
			f(format.KindMalformedRecord, "salvage", claudeFromHealthy(21405, claudeWithout(27)))}},
		// Never legitimate: last-good when there is one, else report-only.
		{app: "claude-code", src: "empty", preset: "claude-code", files: []fileExp{
			withLG(f(format.KindEmpty, "", nil))}},
		// A registry entry naming the session for a process that does not run here: healed as
		// torn_tail, the entry left as it is (assertSame).
		{app: "claude-code", src: "live_pid_file", preset: "claude-code", setup: claudeOwnDomain, files: []fileExp{
			f(format.KindTruncated, "salvage", claudeFromHealthy(20957, claudeHealthyLines(1, 31)))}},
		// The app's sealed stub is an interior line: dropped, the 7 records after it kept.
		{app: "claude-code", src: "app_sealed_torn_tail", preset: "claude-code", files: []fileExp{
			f(format.KindMalformedRecord, "salvage", func(t *testing.T, orig, healed []byte) {
				if len(healed) != 25289 {
					t.Errorf("healed is %d bytes, want 25289", len(healed))
				}
				sealed(t, orig, healed)
			})}},
	}
}

// claudeLines are the lines of b, each with its '\n'.
func claudeLines(b []byte) [][]byte { return bytes.SplitAfter(b, []byte("\n")) }

// claudeHealthyLines: lines from..to (1-based) of the healthy sample.
func claudeHealthyLines(from, to int) func(healthy []byte) []byte {
	return func(healthy []byte) []byte { return bytes.Join(claudeLines(healthy)[from-1:to], nil) }
}

// claudeWithout: the healthy sample without line n.
func claudeWithout(n int) func(healthy []byte) []byte {
	return func(healthy []byte) []byte {
		lines := claudeLines(healthy)
		return bytes.Join(append(append([][]byte{}, lines[:n-1]...), lines[n:]...), nil)
	}
}

// claudeFromHealthy: the healed file is exactly the bytes derive makes of the healthy sample,
// size bytes long.
func claudeFromHealthy(size int, derive func(healthy []byte) []byte) func(*testing.T, []byte, []byte) {
	return func(t *testing.T, _, healed []byte) {
		t.Helper()
		want := derive(read(t, filepath.Join(samples, claudeHealthy)))
		if len(want) != size {
			t.Fatalf("the expected result is %d bytes, the README says %d", len(want), size)
		}
		if !bytes.Equal(healed, want) {
			t.Errorf("healed is %d bytes, want the %d derived from healthy, byte for byte", len(healed), len(want))
		}
	}
}

// claudeDropLines: the healed file is the original without the lines ns.
func claudeDropLines(ns ...int) func(*testing.T, []byte, []byte) {
	return func(t *testing.T, orig, healed []byte) {
		t.Helper()
		var want []byte
	lines:
		for i, l := range claudeLines(orig) {
			for _, n := range ns {
				if i+1 == n {
					continue lines
				}
			}
			want = append(want, l...)
		}
		if !bytes.Equal(healed, want) {
			t.Errorf("healed is %d bytes, want the original without lines %v (%d bytes)", len(healed), ns, len(want))
		}
	}
}

var claudeDomainRe = regexp.MustCompile(`"pidDomain":"[^"]*"`)

// claudeOwnDomain makes the registry entries of a case name this host's pid domain (the one
// the sample was recorded in), so that their processes are checked, not taken for live
// processes of another host; without a domain of our own, entries name none.
func claudeOwnDomain(t *testing.T, root string) {
	dir := filepath.Join(root, "home/.claude/sessions")
	ents, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range ents {
		p := filepath.Join(dir, e.Name())
		b := read(t, p)
		repl := []byte(`"pidDomain":` + strconv.Quote(lock.PIDDomain()))
		if lock.PIDDomain() == "" {
			repl = []byte(`"pidDomainUnknown":""`)
		}
		if err := os.WriteFile(p, claudeDomainRe.ReplaceAll(b, repl), 0o600); err != nil {
			t.Fatal(err)
		}
	}
}

func claudeCase(t *testing.T, src string) (root, transcript string, e *Engine) {
	t.Helper()
	root = filepath.Join(t.TempDir(), src)
	copyTree(t, filepath.Join(samples, "claude-code", src), root)
	return root, filepath.Join(root, claudeTranscript), testEngine(t, "claude-code", root)
}

func TestClaudeOrphanToolUseWarns(t *testing.T) {
	root, _, e := claudeCase(t, "orphan_tool_use")
	rs := reportsByFile(t, root, runAll(t, e, false))
	r := rs[claudeTranscript]
	if r.Verdict != Healthy || !strings.Contains(strings.Join(r.Warnings, "\n"), "toolu_01MockToolUse0004") {
		t.Fatalf("want healthy with a warning naming the tool_use, got %s %v", r.Verdict, r.Warnings)
	}
}

// A registry entry naming the session for this very process makes the transcript live: the
// heal defers and writes nothing. The same entry with another start time is stale.
func TestClaudeLiveSessionIsNotHealed(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("process start times are read from /proc")
	}
	start, ok := lock.ProcessStart(os.Getpid())
	if !ok {
		t.Skip("no start time for this process")
	}
	for _, tc := range []struct {
		procStart string
		live      bool
	}{{strconv.FormatUint(start, 10), true}, {strconv.FormatUint(start+1, 10), false}} {
		root, transcript, e := claudeCase(t, "torn_tail")
		entry := `{"pid":` + strconv.Itoa(os.Getpid()) + `,"sessionId":"` + claudeSID + `","procStart":"` + tc.procStart + `"`
		if d := lock.PIDDomain(); d != "" {
			entry += `,"pidDomain":` + strconv.Quote(d)
		}
		reg := filepath.Join(root, "home/.claude/sessions", strconv.Itoa(os.Getpid())+".json")
		os.MkdirAll(filepath.Dir(reg), 0o700)
		if err := os.WriteFile(reg, []byte(entry+`,"status":"busy"}`), 0o600); err != nil {
			t.Fatal(err)
		}
		before := snapshot(t, root)
		r := reportsByFile(t, root, runAll(t, e, true))[claudeTranscript]
		if tc.live {
			if r.Verdict != Busy || r.Action == ActionHealed {
				t.Fatalf("live session: %s %s (%s), want busy", r.Verdict, r.Action, r.Reason)
			}
			assertSame(t, before, snapshot(t, root), nil)
			continue
		}
		if r.Action != ActionHealed || r.Strategy != "salvage" {
			t.Fatalf("stale entry: %s %s (%s), want healed with salvage", r.Action, r.Strategy, r.Reason)
		}
		claudeFromHealthy(20957, claudeHealthyLines(1, 31))(t, nil, read(t, transcript))
		if !bytes.Equal(read(t, reg), before["home/.claude/sessions/"+filepath.Base(reg)].data) {
			t.Error("the registry entry was changed")
		}
	}
}

// FuzzHealClaudeCode runs the heal properties through the claude-code profile (its split
// salvage above all), seeded with its samples and glued lines.
func FuzzHealClaudeCode(f *testing.F) {
	healthy, err := os.ReadFile(filepath.Join(samples, claudeHealthy))
	if err != nil {
		f.Fatal(err)
	}
	lines := claudeLines(healthy)
	f.Add(healthy)
	f.Add(bytes.Join([][]byte{lines[0], lines[3][:40], lines[3], lines[10]}, nil))
	f.Add(bytes.Join([][]byte{lines[3], bytes.TrimSuffix(lines[10], []byte("\n")), lines[11], []byte("\x00\x00"), lines[15]}, nil))
	f.Fuzz(func(t *testing.T, data []byte) { fuzzHeal(t, "claude-code", claudeSID+".jsonl", data) })
}
