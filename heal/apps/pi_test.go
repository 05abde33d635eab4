package apps

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/sessionmedic/sessionmedic/heal/format"
)

const (
	piTestID   = "01a20fe0-6e4b-74a6-a8ea-61958601a7c1"
	piTestName = "2026-11-24T23-24-56-267Z_" + piTestID + ".jsonl"
	piTestPath = "/h/.pi/agent/sessions/--tmp-demo-proj--/" + piTestName
	piSamples  = "../testdata/samples/pi/"
)

func piHeader(id, cwd string) string {
	return `{"type":"session","version":3,"id":"` + id + `","timestamp":"2026-11-24T23:24:56.267Z","cwd":"` + cwd + `"}` + "\n"
}

func piEntry(id, parent string) string {
	p := "null"
	if parent != "" {
		p = `"` + parent + `"`
	}
	return `{"type":"message","id":"` + id + `","parentId":` + p + `,"timestamp":"2026-11-24T23:24:57.000Z","message":{"role":"user","content":[{"type":"text","text":"hi ` + id + `"}]}}` + "\n"
}

func piInspect(path string, data []byte) format.Verdict {
	return format.Inspect(piLog{}, format.File{Path: path}, data)
}

func TestPiChecklist(t *testing.T) {
	h := piHeader(piTestID, "/tmp/demo/proj")
	a, b, c := piEntry("aaaaaaaa", ""), piEntry("bbbbbbbb", "aaaaaaaa"), piEntry("cccccccc", "bbbbbbbb")
	runChecklist(t, piLog{}, func(checklistCase) string { return piTestPath }, func(tc checklistCase) bool { return !strings.Contains(tc.name, "another id") }, []checklistCase{
		{"healthy", h + a + b + c, "", ""},
		{"header only", h, "", ""},
		{"a second root (a navigation to before the first entry)", h + a + piEntry("dddddddd", ""), "", ""},
		{"a branch", h + a + b + piEntry("dddddddd", "aaaaaaaa"), "", ""},
		{"identical duplicate lines", h + a + b + b + c, "", ""},
		{"invalid UTF-8 in a string (Node decodes it lossily)", h + strings.Replace(a, "hi", "h\xffi", 1), "", ""},
		{"blank lines", h + "\n" + a + "\n", "", ""},
		{"version 2", strings.Replace(h, `"version":3`, `"version":2`, 1) + a, "", "version 2"},
		{"version 1 entries have no ids", strings.Replace(h, `"version":3`, `"version":1`, 1) + `{"type":"message","timestamp":"x"}` + "\n", "", "version 1"},
		{"a repeated id with other content", h + a + b + strings.Replace(b, "hi", "ho", 1), "", "repeat an earlier entry's id"},
		{"empty", "", format.KindEmpty, ""},
		{"only blank lines", "\n\n", format.KindEmpty, ""},
		{"no header", a + b, format.KindSchema, ""},
		{"header of another id", piHeader("01a20fe4-87ce-73ff-9b89-a12c75f09597", "/tmp/demo/proj") + a, format.KindSchema, ""},
		{"header without version", strings.Replace(h, `"version":3,`, ``, 1) + a, format.KindSchema, ""},
		{"header version 4", strings.Replace(h, `"version":3`, `"version":4`, 1) + a, format.KindSchema, ""},
		{"header with a numeric timestamp", strings.Replace(h, `"2026-11-24T23:24:56.267Z"`, `1`, 1) + a, format.KindSchema, ""},
		{"entry without type", h + strings.Replace(a, `"type":"message",`, ``, 1), format.KindSchema, ""},
		{"entry without id", h + strings.Replace(a, `"id":"aaaaaaaa",`, ``, 1), format.KindSchema, ""},
		{"entry without parentId", h + strings.Replace(a, `"parentId":null,`, ``, 1), format.KindSchema, ""},
		{"entry with a numeric parentId", h + strings.Replace(a, `"parentId":null`, `"parentId":7`, 1), format.KindSchema, ""},
		{"a second header", h + a + h, "", "session header(s) after line 1"},
		{"a text block without its text", h + strings.Replace(a, `"text":"hi`, "\"te\x99t\":\"hi", 1), format.KindSchema, ""},
		{"a message entry without its message", h + strings.Replace(a, `"message":{`, "\"messag\xeb\":{", 1), format.KindSchema, ""},
		{"history gap", h + a + c, format.KindSchema, ""},
		{"parent appears only later", h + b + a, format.KindSchema, ""},
		{"a loop through a repeated id", h + a + b + piEntry("aaaaaaaa", "bbbbbbbb"), format.KindSchema, ""},
		{"torn tail", h + a + b[:40], format.KindTruncated, ""},
		{"glued stub", h + a + b[:40] + c, format.KindMalformedRecord, ""},
		{"a non-object line", h + a + "5\n", format.KindMalformedRecord, ""},
	})
}

// The header's id must be the file name's uuid only for a file named as pi names sessions.
func TestPiHeaderIDOnlyForPiNames(t *testing.T) {
	data := []byte(piHeader("anything", "/x") + piEntry("aaaaaaaa", ""))
	if v := piInspect("/elsewhere/notes.jsonl", data); v.Status != format.Healthy {
		t.Errorf("a file not named <ts>_<uuid>.jsonl: %v", v)
	}
	if v := piInspect(piTestPath, data); v.Kind != format.KindSchema {
		t.Errorf("a session whose header names another id: %v", v)
	}
}

func TestPiSamplesVerdicts(t *testing.T) {
	const file = "/home/.pi/agent/sessions/--tmp-demo-proj--/2026-11-24T23-24-56-267Z_01a20fe0-6e4b-74a6-a8ea-61958601a7c1.jsonl"
	runSampleVerdicts(t, piLog{}, piSamples, file, map[string]string{
		"healthy": "", "duplicate_lines": "", "torn_tail": format.KindTruncated, "nul_tail": format.KindTruncated,
		"garbage_line": format.KindMalformedRecord, "glued": format.KindMalformedRecord,
		"torn_header": format.KindMalformedRecord, "empty": format.KindEmpty, "history_gap": format.KindSchema,
	})
}

func TestPiAppendedOK(t *testing.T) {
	for rec, want := range map[string]bool{
		strings.TrimSuffix(piEntry("aaaaaaaa", "bbbbbbbb"), "\n"): true,
		strings.TrimSuffix(piEntry("aaaaaaaa", ""), "\n"):         true,
		`{"type":"message","id":"aaaaaaaa"}`:                      false,
		`{"type":"message","parentId":null}`:                      false,
		`{"id":"aaaaaaaa","parentId":null}`:                       false,
		strings.TrimSuffix(piHeader(piTestID, "/x"), "\n"):        false,
	} {
		if got := (piLog{}).AppendedOK([]byte(rec)); got != want {
			t.Errorf("AppendedOK(%s) = %v, want %v", rec, got, want)
		}
	}
}

// A torn stub with pi's next entry glued on splits into that entry alone; a content block
// glued after a stub is never taken for a record.
func TestPiSplitsGluedRecords(t *testing.T) {
	rec := strings.TrimSuffix(piEntry("cccccccc", "aaaaaaaa"), "\n")
	stub := piEntry("bbbbbbbb", "aaaaaaaa")[:60]
	got := format.SplitLine(piLog{}, []byte(stub+rec))
	if len(got) != 1 || string(got[0]) != rec {
		t.Errorf("split %q, want the glued entry", got)
	}
	if got := format.SplitLine(piLog{}, []byte(stub+`{"type":"toolCall","id":"call_1","name":"read","arguments":{}}`)); got != nil {
		t.Errorf("a content block taken for a record: %q", got)
	}
}

// piLayout makes an agent home whose session directory is the encoding of cwd (which is
// created unless it is ""), and returns the session file's path.
func piLayout(t *testing.T, cwd string) string {
	t.Helper()
	if cwd != "" {
		if err := os.MkdirAll(cwd, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	enc := "--" + strings.ReplaceAll(strings.TrimPrefix(cwd, "/"), "/", "-") + "--"
	dir := filepath.Join(t.TempDir(), "agent", "sessions", enc)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	return filepath.Join(dir, piTestName)
}

func TestPiRebuildHeader(t *testing.T) {
	base := t.TempDir()
	cwd := filepath.Join(base, "demo", "proj")
	path := piLayout(t, cwd)
	h := piHeader(piTestID, cwd)
	rest := piEntry("aaaaaaaa", "") + piEntry("bbbbbbbb", "aaaaaaaa")
	rebuild := func(data string) string { return string(rebuildHeader(piLog{}, path, []byte(data))) }

	// The torn line names no cwd: the one directory the session dir's name decodes to.
	if got := rebuild(h[:60] + "\n" + rest); got != h+rest {
		t.Errorf("from the directory name:\n%s\nwant\n%s", got, h+rest)
	}
	// No header at all: inserted before the entries.
	if got := rebuild(rest); got != h+rest {
		t.Errorf("missing header:\n%s", got)
	}
	// The torn line's prefix holds the whole cwd (only its brace is gone): that cwd, even
	// where no such directory exists.
	other := piHeader(piTestID, "/nonexistent/elsewhere")
	if got := rebuild(other[:len(other)-2] + "\n" + rest); got != other+rest {
		t.Errorf("from the torn line's cwd:\n%s", got)
	}
	// The salvage dropped the torn line 1: the file's own first line is read for its cwd.
	if err := os.WriteFile(path, []byte(other[:len(other)-2]+"\n"+rest), 0o644); err != nil {
		t.Fatal(err)
	}
	if got := rebuild(rest); got != other+rest {
		t.Errorf("from the file's torn line after a salvage:\n%s", got)
	}
	os.Remove(path)
	// Never rebuilt: a header that is there, no entry after the torn line, a torn line of
	// another session, a file not named by pi.
	for name, data := range map[string]string{
		"a header":          h + rest,
		"no entry":          h[:60] + "\n",
		"only a torn line":  h[:60],
		"another session":   piHeader("01a20fe4-87ce-73ff-9b89-a12c75f09597", cwd)[:90] + "\n" + rest,
		"blank lines alone": "\n\n",
	} {
		if got := rebuild(data); got != "" {
			t.Errorf("%s: rebuilt\n%s", name, got)
		}
	}
	if got := rebuildHeader(piLog{}, filepath.Join(filepath.Dir(path), "notes.jsonl"), []byte(h[:60]+"\n"+rest)); got != nil {
		t.Errorf("a file not named <ts>_<uuid>.jsonl: rebuilt\n%s", got)
	}

	// Two directories decode from the name (…-demo-proj: demo/proj and demo-proj): no
	// rebuild. No directory at all: none either.
	if err := os.MkdirAll(filepath.Join(base, "demo-proj"), 0o755); err != nil {
		t.Fatal(err)
	}
	if got := rebuild(h[:60] + "\n" + rest); got != "" {
		t.Errorf("ambiguous directory name: rebuilt\n%s", got)
	}
	gone := piLayout(t, "")
	gone = filepath.Join(filepath.Dir(filepath.Dir(gone)), "--"+strings.ReplaceAll(strings.TrimPrefix(base, "/"), "/", "-")+"-nothing-here--", piTestName)
	if got := rebuildHeader(piLog{}, gone, []byte(h[:60]+"\n"+rest)); got != nil {
		t.Errorf("no directory decodes from the name: rebuilt\n%s", got)
	}
}

// The rebuilt header is byte for byte the one pi wrote (the torn_header sample).
func TestPiRebuildHeaderSample(t *testing.T) {
	const rel = "home/.pi/agent/sessions/--tmp-demo-proj--/" + piTestName
	healthy, err := os.ReadFile(piSamples + "healthy/" + rel)
	if err != nil {
		t.Fatal(err)
	}
	torn, err := os.ReadFile(piSamples + "torn_header/" + rel)
	if err != nil {
		t.Fatal(err)
	}
	if got := rebuildHeader(piLog{}, piSamples+"torn_header/"+rel, torn); !bytes.Equal(got, healthy) {
		t.Errorf("rebuilt:\n%.200s\nwant healthy", got)
	}
}

func TestPiJSONString(t *testing.T) {
	for in, want := range map[string]string{
		"/tmp/demo/proj": `"/tmp/demo/proj"`,
		`/a"b\c`:         `"/a\"b\\c"`,
		"/a\tb\x01":      `"/a\tb\u0001"`,
	} {
		if got, err := jsonString(in); err != nil || string(got) != want {
			t.Errorf("jsonString(%q) = %s, %v; want %s", in, got, err, want)
		}
	}
}

// Run as root over another user's session, the directory name is that user's to choose: a
// directory it decodes to that the user does not own is never written into the header (it
// would tell them of a directory they may not see).
func TestPiCwdFromDirOnlyTheOwners(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root")
	}
	base := t.TempDir()
	target := filepath.Join(base, "rootonly")
	if err := os.MkdirAll(target, 0o700); err != nil {
		t.Fatal(err)
	}
	name := "--" + strings.ReplaceAll(strings.TrimPrefix(target, "/"), "/", "-") + "--"
	sess := filepath.Join(base, "sessions", name)
	if err := os.MkdirAll(sess, 0o755); err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(sess, "2026-11-24T23-24-56-267Z_01a20fe0-6e4b-74a6-a8ea-61958601a7c1.jsonl")
	if got := string(piCwdFromDir(file)); got != `"`+target+`"` {
		t.Fatalf("root's own session: %q", got)
	}
	if err := os.Chown(sess, 65534, 65534); err != nil {
		t.Fatal(err)
	}
	if got := piCwdFromDir(file); got != nil {
		t.Errorf("another user's session decoded to root's directory %s", got)
	}
	if err := os.Chown(target, 65534, 65534); err != nil {
		t.Fatal(err)
	}
	if got := string(piCwdFromDir(file)); got != `"`+target+`"` {
		t.Errorf("the user's own directory: %q", got)
	}
}
