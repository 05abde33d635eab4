package apps

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/sessionmedic/sessionmedic/heal/format"
	"github.com/sessionmedic/sessionmedic/heal/jsonv"
)

const (
	copilotTestID   = "568f5a60-7fc4-4a49-a663-724cd54a5984"
	copilotTestPath = "/h/.copilot/session-state/" + copilotTestID + "/events.jsonl"
)

// cu is the test event id x as a UUID (Copilot's envelope takes nothing else).
func cu(x string) string { return "6a1e0000-0000-4000-8000-0000000000" + x }

func copilotStart(id string) string {
	id = cu(id)
	return `{"type":"session.start","data":{"sessionId":"` + copilotTestID + `","version":1,"producer":"copilot-agent","copilotVersion":"1.0.102","startTime":"2026-11-25T03:11:26.010Z","context":{"cwd":"/tmp/p"},"alreadyInUse":false},"id":"` + id + `","timestamp":"2026-11-25T03:11:26.061Z","parentId":null}` + "\n"
}

func copilotEv(typ, data, id, parent string) string {
	id, parent = cu(id), cu(parent)
	return `{"type":"` + typ + `","data":{` + data + `},"id":"` + id + `","timestamp":"2026-11-25T03:11:27.000Z","parentId":"` + parent + `"}` + "\n"
}

func copilotInspect(path string, data []byte) format.Verdict {
	return format.Inspect(copilotLog{}, format.File{Path: path}, data)
}

func TestCopilotChecklist(t *testing.T) {
	s := copilotStart("e1")
	u := copilotEv("user.message", `"content":"hello one","messageId":"m1"`, "e2", "e1")
	a := copilotEv("assistant.message", `"messageId":"m2","content":"ack hello one","toolRequests":[]`, "e3", "e2")
	tr := copilotEv("assistant.message", `"messageId":"m3","content":"","toolRequests":[{"toolCallId":"c1","name":"view","arguments":{"path":"/p"}}]`, "e4", "e3")
	ts := copilotEv("assistant.turn_start", `"turnId":"0"`, "e5", "e4")
	runChecklist(t, copilotLog{}, func(tc checklistCase) string {
		if strings.HasPrefix(tc.name, "a session in a directory not named") {
			return "/elsewhere/events.jsonl"
		}
		return copilotTestPath
	}, func(tc checklistCase) bool { return !strings.Contains(tc.name, "another session") }, []checklistCase{
		{name: "healthy", data: s + u + a},
		{name: "a raw U+2028 in a string", data: s + strings.Replace(u, "hello", "hel\u2028lo", 1)},
		{name: "an event type this version does not name", data: s + copilotEv("session.future_thing", `"x":1`, "e2", "e1")},
		{name: "an event with no required data", data: s + copilotEv("session.idle", ``, "e2", "e1")},
		{name: "a later session.start (Copilot's schema allows it anywhere)", data: s + u + strings.Replace(copilotStart("e9"), `"parentId":null`, `"parentId":"6a1e0000-0000-4000-8000-0000000000e2"`, 1)},
		{name: "a session in a directory not named by an id", data: s + u},
		{name: "empty", data: "", kind: format.KindEmpty},
		{name: "invalid UTF-8 (serde refuses the line)", data: s + strings.Replace(u, "hello", "hel\xfflo", 1), kind: format.KindInvalidUTF8},
		{name: "line 1 is not session.start", data: u + a, kind: format.KindSchema},
		{name: "session.start of another session", data: strings.Replace(s, copilotTestID, "617f6bc0-e061-4d1b-a3fb-ffc4054acc49", 1) + u, kind: format.KindSchema},
		{name: "session.start without version", data: strings.Replace(s, `"version":1,`, ``, 1) + u, kind: format.KindSchema},
		{name: "assistant.message without messageId", data: s + u + strings.Replace(a, `"messageId":"m2",`, ``, 1), kind: format.KindSchema},
		{name: "tool.execution_complete with a string success", data: s + copilotEv("tool.execution_complete", `"toolCallId":"c","success":"yes"`, "e2", "e1"), kind: format.KindSchema},
		{name: "event without data", data: s + strings.Replace(u, `"data":{"content":"hello one","messageId":"m1"},`, ``, 1), kind: format.KindSchema},
		{name: "event without id", data: s + strings.Replace(u, `"id":"6a1e0000-0000-4000-8000-0000000000e2",`, ``, 1), kind: format.KindSchema},
		{name: "event without timestamp", data: s + strings.Replace(u, `"timestamp":"2026-11-25T03:11:27.000Z",`, ``, 1), kind: format.KindSchema},
		{name: "an unknown member in an event's data (Copilot loads it)", data: s + strings.Replace(u, `"content":"hello one"`, `"content":"hello one","zzz":1`, 1)},
		{name: "a negative count (the schema's minimum; Copilot loads it)", data: s + copilotEv("session.resume", `"resumeTime":"t","eventCount":-8`, "e2", "e1")},
		{name: "an optional member that is null", data: s + copilotEv("session.resume", `"resumeTime":"t","eventCount":8,"selectedModel":null`, "e2", "e1")},
		{name: "an integer written with a fraction (serde: invalid type)", data: s + copilotEv("session.resume", `"resumeTime":"t","eventCount":8.0`, "e2", "e1"), kind: format.KindSchema},
		{name: "an integer written as a string", data: s + copilotEv("session.resume", `"resumeTime":"t","eventCount":"8"`, "e2", "e1"), kind: format.KindSchema},
		{name: "an enum value Copilot does not know (unknown variant)", data: s + strings.Replace(u, `"messageId":"m1"`, `"messageId":"m1","delivery":"zzz"`, 1), kind: format.KindSchema},
		{name: "a nested object without a member it requires", data: s + copilotEv("session.usage_record", `"usage":{"inputTokens":5}`, "e2", "e1"), kind: format.KindSchema},
		{name: "an id that is not a UUID (Copilot: invalid session event envelope)", data: s + strings.Replace(u, cu("e2"), "e2", 1), kind: format.KindSchema},
		{name: "a parentId that is not a UUID", data: s + strings.Replace(u, cu("e1"), "e1", 1), kind: format.KindSchema},
		{name: "an id in capitals (Copilot loads it)", data: s + strings.Replace(u, cu("e2"), strings.ToUpper(cu("e2")), 1)},
		{name: "an unknown member in the accounting snapshot (serde refuses it)", data: s + copilotEv("session.shutdown", `"shutdownType":"routine","totalApiDurationMs":1,"sessionStartTime":1,"codeChanges":{"linesAdded":0,"linesRemoved":0,"filesModified":[]},"modelMetrics":{},"accountingSnapshot":{"zzz":1}`, "e2", "e1"), kind: format.KindSchema},
		{name: "an unknown member in the shutdown's own code changes (Copilot loads it)", data: s + copilotEv("session.shutdown", `"shutdownType":"routine","totalApiDurationMs":1,"sessionStartTime":1,"codeChanges":{"zzz":1,"linesAdded":0,"linesRemoved":0,"filesModified":[]},"modelMetrics":{}`, "e2", "e1")},
		{name: "event with a numeric parentId", data: s + strings.Replace(u, `"parentId":"6a1e0000-0000-4000-8000-0000000000e1"`, `"parentId":1`, 1), kind: format.KindSchema},
		{name: "a re-appended turn", data: s + u + a + u + a, kind: format.KindDuplicateRecord},
		{name: "a user message with an earlier event's id", data: s + u + strings.Replace(u, `hello one`, `hello two`, 1), kind: format.KindSchema},
		{name: "a re-appended tool request", data: s + u + tr + tr, kind: format.KindDuplicateRecord},
		{name: "a re-appended answer without tool requests (Copilot sends it once)", data: s + u + a + a, warn: "Copilot CLI loads them"},
		{name: "a re-appended turn start (Copilot sends nothing of it)", data: s + u + ts + ts, warn: "1 event(s) repeat"},
		{name: "an answer with an earlier event's id", data: s + u + strings.Replace(a, `"id":"6a1e0000-0000-4000-8000-0000000000e3"`, `"id":"6a1e0000-0000-4000-8000-0000000000e2"`, 1), warn: "1 event(s) repeat"},
		{name: "torn tail", data: s + u + a[:50], kind: format.KindTruncated},
		{name: "glued stub", data: s + u[:40] + u + a, kind: format.KindMalformedRecord},
		{name: "a NUL-only line", data: s + strings.Repeat("\x00", 30) + "\n" + u, kind: format.KindMalformedRecord},
	})
}

// The schema is the package's: every event type it names, and for the types the format doc
// lists the members Copilot 1.0.102 refused a session without.
func TestCopilotSchemaIsThePackages(t *testing.T) {
	sc := copilotSchema()
	if sc.Version != "1.0.102" || len(sc.Events) != 163 || len(sc.Defs) < 600 {
		t.Fatalf("schema %s: %d event types, %d definitions", sc.Version, len(sc.Events), len(sc.Defs))
	}
	for typ, want := range map[string]string{
		"session.start":           "sessionId version producer copilotVersion startTime",
		"session.resume":          "resumeTime eventCount",
		"user.message":            "content",
		"assistant.message":       "messageId content",
		"tool.execution_start":    "toolCallId toolName",
		"tool.execution_complete": "toolCallId success",
		"system.message":          "content role",
		"assistant.turn_start":    "turnId",
		"session.usage_record":    "usage",
		"session.shutdown":        "shutdownType totalApiDurationMs sessionStartTime codeChanges modelMetrics",
	} {
		n := sc.Events[typ]
		for n != nil && n.Ref != "" {
			n = sc.Defs[n.Ref]
		}
		if n == nil || strings.Join(n.R, " ") != want {
			t.Errorf("%s requires %v, want %s", typ, n, want)
		}
	}
}

func TestCopilotSalvageAndDrop(t *testing.T) {
	s := copilotStart("e1")
	u := copilotEv("user.message", `"content":"hello one"`, "e2", "e1")
	a := copilotEv("assistant.message", `"messageId":"m2","content":"ack"`, "e3", "e2")
	split := strings.Replace(a, `"content":"ack"`, `"content":"two`+"\n"+`lines"`, 1)
	runSalvage(t, copilotLog{}, copilotTestPath, map[string]struct{ in, want string }{
		"duplicates": {s + u + a + u + a, s + u + a},
		"split":      {s + split + u, s + strings.Replace(split, "\n", `\n`, 1) + u},
		"glued":      {s + u[:60] + u + a, s + u + a},
	})
	bad := strings.Replace(a, `"messageId":"m2",`, ``, 1)
	if got := string((copilotLog{}).DropInvalid([]byte(s + u + bad + "\n"))); got != s+u+"\n" {
		t.Errorf("drop-invalid-entries: %q", got)
	}
	if (copilotLog{}).DropInvalid([]byte(s+u+a)) != nil {
		t.Error("drop-invalid-entries on a valid file is not nil")
	}
	if (copilotLog{}).DropInvalid([]byte(s+u+a[:20])) != nil {
		t.Error("drop-invalid-entries on a torn file is not nil (the salvage's to judge)")
	}
	if (copilotLog{}).DropInvalid([]byte(u+a)) != nil {
		t.Error("drop-invalid-entries dropped line 1")
	}
}

func TestCopilotAppendedOK(t *testing.T) {
	for rec, want := range map[string]bool{
		copilotEv("user.message", `"content":"x"`, "e2", "e1"): true,
		copilotEv("user.message", `"text":"x"`, "e2", "e1"):    false,
		copilotStart("e5"):        false,
		`{"type":"user.message"}`: false,
		copilotEv("session.whatever", `"text":"x"`, "e2", "e1"): true,
	} {
		if got := (copilotLog{}).AppendedOK([]byte(strings.TrimSuffix(rec, "\n"))); got != want {
			t.Errorf("%s: %v, want %v", rec, got, want)
		}
	}
}

// copilotDir lays out a session directory with events and workspace.yaml.
func copilotDir(t *testing.T, events, ws string) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "session-state", copilotTestID)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(dir, "events.jsonl")
	os.WriteFile(p, []byte(events), 0o600)
	if ws != "" {
		os.WriteFile(filepath.Join(dir, "workspace.yaml"), []byte(ws), 0o600)
	}
	return p
}

const copilotWSYAML = "id: " + copilotTestID + "\ncwd: /tmp/my proj\ngit_root: /tmp/my proj\nbranch: \"feat/x\"\nclient_name: github/cli\ncreated_at: 2026-11-25T03:11:26.010Z\nupdated_at: 2026-11-25T03:11:26.128Z\n"

func TestCopilotRebuildHeader(t *testing.T) {
	s := copilotStart("e1")
	u := copilotEv("user.message", `"content":"hello one"`, "e2", "e1")
	a := copilotEv("assistant.message", `"messageId":"m2","content":"ack"`, "e3", "e2")
	want := `{"type":"session.start","data":{"sessionId":"` + copilotTestID + `","version":1,"producer":"copilot-agent","copilotVersion":"1.0.102","startTime":"2026-11-25T03:11:26.010Z","context":{"cwd":"/tmp/my proj","gitRoot":"/tmp/my proj","branch":"feat/x"}},"id":"6a1e0000-0000-4000-8000-0000000000e1","timestamp":"2026-11-25T03:11:26.010Z","parentId":null}` + "\n"
	torn := s[:180] + "\n"
	p := copilotDir(t, torn+u+a, copilotWSYAML)
	out := rebuildHeader(copilotLog{}, p, []byte(torn+u+a))
	if string(out) != want+u+a {
		t.Fatalf("rebuilt:\n%s\nwant\n%s", out, want+u+a)
	}
	if v := copilotInspect(p, out); v.Status != format.Healthy {
		t.Fatalf("rebuilt file is %v", v)
	}
	if _, err := jsonv.Parse([]byte(strings.TrimSpace(want)), copilotDialect); err != nil {
		t.Fatal(err)
	}
	for name, tc := range map[string]struct{ data, ws string }{
		"line 1 whole":                            {s + u + a, copilotWSYAML},
		"the version torn away":                   {s[:90] + "\n" + u + a, copilotWSYAML},
		"the torn line is another session's":      {strings.Replace(torn, copilotTestID, "617f6bc0-e061-4d1b-a3fb-ffc4054acc49", 1) + u + a, copilotWSYAML},
		"no workspace.yaml":                       {torn + u + a, ""},
		"workspace.yaml of another session":       {torn + u + a, strings.Replace(copilotWSYAML, copilotTestID, "617f6bc0-e061-4d1b-a3fb-ffc4054acc49", 1)},
		"workspace.yaml without created_at":       {torn + u + a, "id: " + copilotTestID + "\ncwd: /tmp\n"},
		"workspace.yaml that is not a mapping":    {torn + u + a, "- a\n- b\n"},
		"no event after the torn line":            {torn, copilotWSYAML},
		"the first kept event names no parent":    {torn + strings.Replace(u, `"parentId":"6a1e0000-0000-4000-8000-0000000000e1"`, `"parentId":null`, 1), copilotWSYAML},
		"a torn line that is not a session.start": {`{"type":"user.message","data":{"content":"x` + "\n" + u, copilotWSYAML},
	} {
		p := copilotDir(t, tc.data, tc.ws)
		if out := rebuildHeader(copilotLog{}, p, []byte(tc.data)); out != nil {
			t.Errorf("%s: rebuilt\n%s", name, out)
		}
	}
	// A workspace.yaml that is a symlink (to a file the user could not read) or a FIFO is
	// not read: nothing is rebuilt, and nothing hangs.
	p = copilotDir(t, torn+u+a, "")
	secret := filepath.Join(t.TempDir(), "secret.yaml")
	os.WriteFile(secret, []byte(copilotWSYAML), 0o600)
	os.Symlink(secret, filepath.Join(filepath.Dir(p), "workspace.yaml"))
	if out := rebuildHeader(copilotLog{}, p, []byte(torn+u+a)); out != nil {
		t.Error("rebuilt from a symlinked workspace.yaml")
	}
	p = copilotDir(t, torn+u+a, "")
	if err := syscall.Mkfifo(filepath.Join(filepath.Dir(p), "workspace.yaml"), 0o600); err != nil {
		t.Fatal(err)
	}
	if out := rebuildHeader(copilotLog{}, p, []byte(torn+u+a)); out != nil {
		t.Error("rebuilt from a FIFO")
	}
	// A torn line the salvage already dropped: read from the file itself.
	p = copilotDir(t, torn+u+a, copilotWSYAML)
	if out := rebuildHeader(copilotLog{}, p, []byte(u+a)); string(out) != want+u+a {
		t.Errorf("rebuilt after the salvage:\n%s", out)
	}
}

// Copilot's own repair leaves events.jsonl.backup-before-recovery-<sha256> beside the file:
// the file is healthy, and the records the repair dropped are said to be in the backup.
func TestCopilotOwnRepairIsAWarning(t *testing.T) {
	data := copilotStart("e1") + copilotEv("user.message", `"content":"x"`, "e2", "e1")
	p := copilotDir(t, data, "")
	if v := copilotInspect(p, []byte(data)); v.Status != format.Healthy || len(v.Warnings) != 0 {
		t.Fatalf("%v", v)
	}
	os.WriteFile(filepath.Join(filepath.Dir(p), "events.jsonl.backup-before-recovery-"+strings.Repeat("ab", 32)), []byte("x"), 0o600)
	os.WriteFile(filepath.Join(filepath.Dir(p), "events.jsonl.tmp.617f6bc0-e061-4d1b-a3fb-ffc4054acc49"), []byte("x"), 0o600)
	v := copilotInspect(p, []byte(data))
	if v.Status != format.Healthy || len(v.Warnings) != 1 || !strings.Contains(v.Warnings[0], "backup-before-recovery-abab") {
		t.Fatalf("%v", v)
	}
}

func TestCopilotSamplesVerdicts(t *testing.T) {
	const file = "/home/.copilot/session-state/" + copilotTestID + "/events.jsonl"
	runSampleVerdicts(t, copilotLog{}, "../testdata/samples/copilot-cli/", file, map[string]string{
		"healthy": "", "torn_tail": format.KindTruncated, "nul_tail": format.KindTruncated,
		"garbage_line": format.KindMalformedRecord, "glued": format.KindMalformedRecord,
		"split_record": format.KindMalformedRecord, "duplicate_lines": format.KindDuplicateRecord,
		"torn_first_line": format.KindMalformedRecord, "missing_first_line": format.KindSchema,
		"missing_field": format.KindSchema, "empty": format.KindEmpty,
	})
}

// The two cases of the 520-case campaign that Copilot refused and the top-level checks
// called healthy (copilot-457, copilot-471: a flipped byte in session.shutdown's nested
// metrics): Copilot said "missing field `cacheReadTokens`" and "unknown field `c=unt`,
// expected `count` or `cost`". Both are damage at any depth now.
func TestCopilotNestedMembersCount(t *testing.T) {
	p := "../testdata/samples/copilot-cli/healthy/home/.copilot/session-state/" + copilotTestID + "/events.jsonl"
	healthy, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	if v := copilotInspect(p, healthy); v.Status != format.Healthy {
		t.Fatalf("healthy sample: %v", v)
	}
	at := strings.Index(string(healthy), `"agentMetrics"`)
	for name, tc := range map[string]struct{ old, new, want string }{
		"copilot-457": {`"outputTokens":7,"cacheReadTokens":0,`, `"outputTokens":7,"cacheRea4Tokens":0,`, "missing field `cacheReadTokens`"},
		"copilot-471": {`"requests":{"count":7`, `"requests":{"c=unt":7`, "missing field `count`"},
	} {
		i := strings.Index(string(healthy[at:]), tc.old)
		if i < 0 {
			t.Fatalf("%s: %q not in the sample", name, tc.old)
		}
		data := string(healthy[:at+i]) + tc.new + string(healthy[at+i+len(tc.old):])
		v := copilotInspect(p, []byte(data))
		if v.Kind != format.KindSchema || !strings.Contains(v.Detail, tc.want) {
			t.Errorf("%s: %v, want schema damage saying %s", name, v, tc.want)
		}
		fixed := (copilotLog{}).DropInvalid([]byte(data))
		if v := copilotInspect(p, fixed); v.Status != format.Healthy || len(fixed) != len(data)-(len(strings.SplitAfter(data, "\n")[47])) {
			t.Errorf("%s: drop-invalid-entries: %v (%d of %d bytes)", name, v, len(fixed), len(data))
		}
	}
}
