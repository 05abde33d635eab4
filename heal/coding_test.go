package heal

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/sessionmedic/sessionmedic/heal/apps"
	"github.com/sessionmedic/sessionmedic/heal/format"
)

// The coding CLIs' transcripts: the properties every profile keeps, on their samples and on
// fuzzed input.

// codingApps names, per preset, the sample directory and a file name its profile judges.
var codingApps = []struct{ preset, dir, name string }{
	{"claude-code", "claude-code", "7c2e1b4a-9d3f-4e8a-b6c1-2f5a8d9e0b13.jsonl"},
	{"codex", "codex", "rollout-2026-11-22T21-46-17-01a20539-677f-7710-87e4-54a740761238.jsonl"},
	{"gemini-cli", "gemini-cli", "session-2026-11-22T21-40-7759d9fe.jsonl"},
	{"copilot-cli", "copilot-cli", "events.jsonl"},
}

// sampleFiles lists the session files of one app's samples.
func sampleFiles(t testing.TB, dir, name string) []string {
	var out []string
	filepath.Walk(filepath.Join(samples, dir), func(p string, fi os.FileInfo, err error) error {
		if err == nil && fi.Mode().IsRegular() && filepath.Base(p) == name {
			out = append(out, p)
		}
		return nil
	})
	if len(out) == 0 {
		t.Fatalf("no sample file %s under %s", name, dir)
	}
	return out
}

// TestCodingStreamAgreesWithInMemory: the record-by-record checklist (streaming and
// incremental passes) gives the verdict of the full one on every sample and on damage cut
// from them.
func TestCodingStreamAgreesWithInMemory(t *testing.T) {
	reg := apps.Registry()
	for _, a := range codingApps {
		typ := reg.Profile(a.preset, "/x/"+a.name)
		if _, ok := typ.(format.RecordChecker); !ok {
			t.Errorf("%s: the profile cannot be checked record by record", a.preset)
			continue
		}
		for _, p := range sampleFiles(t, a.dir, a.name) {
			data, err := os.ReadFile(p)
			if err != nil {
				t.Fatal(err)
			}
			inputs := [][]byte{data}
			if i := bytes.IndexByte(data, '\n'); i > 0 {
				inputs = append(inputs, data[i+1:], append(append([]byte{}, data[:i+1]...), "{\"torn\n"...))
			}
			for _, in := range inputs {
				if len(in) == 0 {
					continue // never streamed: a file is streamed above 32 MiB
				}
				f := format.File{Path: p}
				want := format.Inspect(typ, f, in)
				got := format.StreamLines(bufio.NewReaderSize(bytes.NewReader(in), 16), typ)
				if got.Status != want.Status || got.Kind != want.Kind {
					rel, _ := filepath.Rel(samples, p)
					t.Errorf("%s (%d bytes): stream %s %s@%d (%s), in memory %s %s@%d (%s)", rel, len(in), got.Status, got.Kind, got.Offset, got.Detail, want.Status, want.Kind, want.Offset, want.Detail)
				}
			}
		}
	}
}

// TestCodingGluedRecordsAreSplit: for each app, every record of its healthy sample glued
// after a torn stub of another, or after a complete one, is kept by the salvage byte for byte,
// with only a '\n' added.
func TestCodingGluedRecordsAreSplit(t *testing.T) {
	reg := apps.Registry()
	for _, a := range codingApps {
		typ := reg.Profile(a.preset, "/x/"+a.name)
		healthy := read(t, sampleFiles(t, filepath.Join(a.dir, "healthy"), a.name)[0])
		lines := bytes.SplitAfter(healthy, []byte("\n"))
		lines = lines[:len(lines)-1]
		for i := 2; i < len(lines); i++ {
			prev, rec := lines[i-1], lines[i]
			stub := prev[:len(prev)/2]
			for _, glued := range [][]byte{
				append(append([]byte{}, stub...), rec...),                                 // a torn stub, then a whole record
				append(bytes.TrimSuffix(append([]byte{}, prev...), []byte("\n")), rec...), // two complete records, the '\n' lost
				append(bytes.Repeat([]byte{0}, 37), rec...),                               // a NUL run before a record
			} {
				got := format.SplitLine(typ, bytes.TrimSuffix(glued, []byte("\n")))
				want := [][]byte{bytes.TrimSuffix(rec, []byte("\n"))}
				if bytes.HasPrefix(glued, bytes.TrimSuffix(prev, []byte("\n"))) {
					want = [][]byte{bytes.TrimSuffix(prev, []byte("\n")), want[0]}
				}
				if len(got) != len(want) || !bytes.Equal(bytes.Join(got, nil), bytes.Join(want, nil)) {
					t.Errorf("%s line %d: split %q into %d records, want %d", a.preset, i+1, clipTest(glued), len(got), len(want))
				}
			}
		}
	}
}

func clipTest(b []byte) string {
	s := string(b)
	if len(s) > 120 {
		s = s[:60] + " … " + s[len(s)-60:]
	}
	return strings.ToValidUTF8(s, "?")
}

func FuzzHealCodex(f *testing.F) {
	seedFromSamples(f, ".jsonl")
	f.Fuzz(func(t *testing.T, data []byte) { fuzzHeal(t, "codex", codingApps[1].name, data) })
}

func FuzzHealGeminiCLI(f *testing.F) {
	seedFromSamples(f, ".jsonl")
	f.Fuzz(func(t *testing.T, data []byte) { fuzzHeal(t, "gemini-cli", codingApps[2].name, data) })
}

// FuzzHealCopilotCLI: the file in a directory named by its session id, as Copilot keeps it.
func FuzzHealCopilotCLI(f *testing.F) {
	seedFromSamples(f, ".jsonl")
	f.Fuzz(func(t *testing.T, data []byte) {
		fuzzHeal(t, "copilot-cli", "568f5a60-7fc4-4a49-a663-724cd54a5984/events.jsonl", data)
	})
}

// largeRecords is a size of file the tests below grow transcripts past: 1 MiB.
const largeRecords = 1 << 20

// TestLargeTranscriptsJudgedRecordByRecord: a transcript over a megabyte gets the verdicts its
// checklist gives a small one.
func TestLargeTranscriptsJudgedRecordByRecord(t *testing.T) {
	reg := apps.Registry()
	grow := func(head []byte, rec func(i int) string) []byte {
		b := append([]byte{}, head...)
		for i := 0; len(b) <= largeRecords; i++ {
			b = append(b, rec(i)...)
		}
		return b
	}
	cx := codingApps[1]
	cxPath := "/x/sessions/2026/11/22/" + cx.name
	cxHead := `{"timestamp":"2026-11-22T21:46:17.468Z","ordinal":0,"type":"session_meta","payload":{"id":"01a20539-677f-7710-87e4-54a740761238","history_mode":"paginated"}}` + "\n"
	cxRec := func(o int) string {
		return fmt.Sprintf(`{"timestamp":"2026-11-22T21:46:18.000Z","ordinal":%d,"type":"event_msg","payload":{"type":"agent_message","message":"step %d"}}`+"\n", o, o)
	}
	cc := codingApps[0]
	ccSID := strings.TrimSuffix(cc.name, ".jsonl")
	ccMeta := func(int) string {
		return `{"type":"queue-operation","operation":"enqueue","timestamp":"2026-11-22T21:40:41.800Z","sessionId":"` + ccSID + `"}` + "\n"
	}
	ccUser := `{"parentUuid":null,"isSidechain":false,"type":"user","message":{"role":"user","content":"hi"},"uuid":"u1","timestamp":"2026-11-22T21:40:41.823Z","sessionId":"` + ccSID + `"}` + "\n"
	for _, c := range []struct {
		name, preset, path string
		data               []byte
		kind               string
	}{
		{"codex healthy", "codex", cxPath, grow([]byte(cxHead), func(i int) string { return cxRec(i + 1) }), ""},
		{"codex reused ordinal", "codex", cxPath, grow([]byte(cxHead), func(i int) string { return cxRec(1 + i - i/5000) }), format.KindSchema},
		{"codex last record unnumbered", "codex", cxPath, append(grow([]byte(cxHead), func(i int) string { return cxRec(i + 1) }),
			`{"timestamp":"2026-11-22T21:46:19.000Z","type":"event_msg","payload":{}}`+"\n"...), format.KindSchema},
		{"codex another thread's header", "codex", "/x/sessions/2026/11/22/rollout-2026-11-22T21-46-17-01a20539-677f-7710-87e4-000000000000.jsonl",
			grow([]byte(cxHead), func(i int) string { return cxRec(i + 1) }), format.KindSchema},
		{"claude healthy", "claude-code", "/x/projects/p/" + cc.name, grow([]byte(ccUser), ccMeta), ""},
		{"claude without a conversation", "claude-code", "/x/projects/p/" + cc.name, grow(nil, ccMeta), format.KindSchema},
	} {
		typ := reg.Profile(c.preset, c.path)
		v := format.Inspect(typ, format.File{Path: c.path}, c.data)
		if got := map[bool]string{true: "", false: v.Kind}[v.Status == format.Healthy]; got != c.kind {
			t.Errorf("%s (%d bytes): %s %s (%s), want %q", c.name, len(c.data), v.Status, v.Kind, v.Detail, c.kind)
		}
	}
}

// TestLargeGeminiChatsJudgedRecordByRecord: a Gemini chat over largeRecords, and one streamed,
// gets the whole checklist (the replay of $rewindTo, the metadata against the file's place)
// and its warnings, as one read whole does.
func TestLargeGeminiChatsJudgedRecordByRecord(t *testing.T) {
	chats := filepath.Join(t.TempDir(), ".gemini", "tmp", "proj", "chats")
	if err := os.MkdirAll(chats, 0o755); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(chats, codingApps[2].name)
	typ := apps.Registry().Profile("gemini-cli", path)
	meta := `{"sessionId":"7759d9fe-6f50-4824-9ae2-297b0ba46ecd","projectHash":"342670b99fa44fb66b2f3d357f6058dc84472b699facf440efe047fbfb07d363","startTime":"2026-11-22T21:40:53.398Z","lastUpdated":"2026-11-22T21:40:53.398Z","kind":"main"}` + "\n"
	msg := func(i int, typ string) string {
		return fmt.Sprintf(`{"id":"m%d","timestamp":"2026-11-22T21:40:54.000Z","type":%q,"content":[{"text":"message %d"}]}`+"\n", i, typ, i)
	}
	grow := func(head string, typ string, tail string) []byte {
		b := []byte(head)
		for i := 0; len(b) <= largeRecords; i++ {
			b = append(b, msg(i, typ)...)
		}
		return append(b, tail...)
	}
	const noResume = "no resumable message"
	for _, c := range []struct {
		name       string
		data       []byte
		kind, warn string
	}{
		{"healthy", grow(meta, "user", `{"$rewindTo":"m3"}`+"\n"), "", ""},
		{"a rewind to no message held", grow(meta, "user", `{"$rewindTo":"gone"}`+"\n"), format.KindSchema, ""},
		{"a subagent's metadata in a main chat", grow(strings.Replace(meta, `"kind":"main"`, `"kind":"subagent"`, 1), "user", ""), format.KindSchema, ""},
		{"another session's id", grow(strings.Replace(meta, `7759d9fe-6f50`, `00000000-6f50`, 1), "user", ""), format.KindSchema, ""},
		{"nothing resumable", grow(meta, "info", ""), "", noResume},
	} {
		whole := typ.CheckLines(format.File{Path: path}, format.Split(c.data, typ))
		large := format.Inspect(typ, format.File{Path: path}, c.data)
		if err := os.WriteFile(path, c.data, 0o644); err != nil {
			t.Fatal(err)
		}
		streamed, _, err := format.StreamInspect(path, typ)
		if err != nil {
			t.Fatal(err)
		}
		for _, v := range []struct {
			how string
			v   format.Verdict
		}{{"read whole", whole}, {"record by record", large}, {"streamed", streamed}} {
			if got := map[bool]string{true: "", false: v.v.Kind}[v.v.Status == format.Healthy]; got != c.kind {
				t.Errorf("%s, %s: %s %s (%s), want %q", c.name, v.how, v.v.Status, v.v.Kind, v.v.Detail, c.kind)
			}
			if warned := strings.Contains(strings.Join(v.v.Warnings, "; "), noResume); warned != (c.warn != "") {
				t.Errorf("%s, %s: warnings %q", c.name, v.how, v.v.Warnings)
			}
		}
	}
}
