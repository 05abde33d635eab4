package apps

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/sessionmedic/sessionmedic/heal/format"
	"github.com/sessionmedic/sessionmedic/heal/jsonv"
	"github.com/sessionmedic/sessionmedic/heal/lock"
)

const (
	ccSID     = "7c2e1b4a-9d3f-4e8a-b6c1-2f5a8d9e0b13"
	ccHealthy = "../testdata/samples/claude-code/healthy/home/.claude/projects/-tmp-demo-proj/" + ccSID + ".jsonl"
	ccOrphan  = "../testdata/samples/claude-code/orphan_tool_use/home/.claude/projects/-tmp-demo-proj/" + ccSID + ".jsonl"
	ccPath    = "/home/u/.claude/projects/-tmp-demo-proj/" + ccSID + ".jsonl"
)

// Records as Claude writes them, shortened.
const (
	ccMeta   = `{"type":"queue-operation","operation":"dequeue","timestamp":"2026-11-22T21:40:31.440Z","sessionId":"` + ccSID + `"}`
	ccUser   = `{"parentUuid":null,"isSidechain":false,"type":"user","message":{"role":"user","content":"thanks"},"uuid":"u1","sessionId":"` + ccSID + `"}`
	ccAsst   = `{"parentUuid":"u1","isSidechain":false,"message":{"role":"assistant","content":[{"type":"text","text":"pong"}]},"type":"assistant","uuid":"a1","sessionId":"` + ccSID + `"}`
	ccAttach = `{"parentUuid":"u1","isSidechain":false,"attachment":{"type":"date","date":"2026-11-22"},"type":"attachment","uuid":"t1","sessionId":"` + ccSID + `"}`
)

func ccProfile() format.Profile { return Registry().Profile("claude-code", ccPath) }

func ccRead(t *testing.T, p string) []byte {
	t.Helper()
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func ccLines(recs ...string) []byte { return []byte(strings.Join(recs, "\n") + "\n") }

func TestClaudeCodeIsAllItSays(t *testing.T) {
	p := ccProfile()
	if p.Name() != "claude-code" || !p.JSONL() || !p.EmptyIsDamage() || !p.AppendOnly() || p.Plain() || p.Dialect() != (claudeCodeLog{}).Dialect() {
		t.Fatal("the claude-code profile is not a strict, append-only JSONL profile with a checklist")
	}
	for _, ok := range []bool{
		is[format.RecordChecker](p), is[format.Splitter](p), is[format.PrefixJudge](p),
	} {
		if !ok {
			t.Fatal("the claude-code profile lacks an ability")
		}
	}
	if Registry().LockProtocol("claude-code") == nil {
		t.Fatal("no claude-code lock protocol")
	}
}

func is[T any](p format.Profile) bool { _, ok := p.(T); return ok }

func TestClaudeCodeChecklist(t *testing.T) {
	p := ccProfile()
	for name, tc := range map[string]struct {
		data    string
		kind    string // "" healthy
		warning string // a substring of the warnings
	}{
		"the healthy sample":         {string(ccRead(t, ccHealthy)), "", ""},
		"the orphan_tool_use sample": {string(ccRead(t, ccOrphan)), "", "toolu_01MockToolUse0004"},
		"attachment without message": {string(ccLines(ccMeta, ccUser, ccAttach, ccAsst)), "", ""},
		"blank lines and CRLF":       {"\n" + ccMeta + "\r\n\n" + ccUser + "\r\n", "", ""},
		"meta records only":          {string(ccLines(ccMeta, ccMeta)), format.KindSchema, ""},
		"blank lines only":           {"\n\n", format.KindSchema, ""},
		"record without type":        {string(ccLines(ccUser, `{"sessionId":"x"}`)), format.KindSchema, ""},
		// Claude Code 2.1.330 resumes all three and sends every message (the oracle).
		"chain record without uuid":      {string(ccLines(ccMeta, strings.Replace(ccUser, `"uuid":"u1",`, "", 1))), "", ""},
		"chain record without sessionId": {string(ccLines(strings.Replace(ccAttach, `,"sessionId":"`+ccSID+`"`, "", 1), ccUser)), "", ""},
		"parentUuid a number":            {string(ccLines(strings.Replace(ccUser, `"parentUuid":null`, `"parentUuid":7`, 1))), "", ""},
		"user without message":           {string(ccLines(strings.Replace(ccUser, `"message":{"role":"user","content":"thanks"},`, "", 1))), format.KindSchema, ""},
		"dangling parent":                {string(ccLines(ccUser, strings.Replace(ccAsst, `"parentUuid":"u1"`, `"parentUuid":"gone"`, 1))), "", format.KindDanglingReference},
		"foreign session":                {string(ccLines(ccUser, strings.Replace(ccAsst, ccSID, "0d1f7f0e-0000-4000-8000-000000000000", 1))), "", "another session"},
		"assistant without content":      {string(ccLines(ccUser, strings.Replace(ccAsst, `,"content":[{"type":"text","text":"pong"}]`, "", 1))), "", "without role or content"},
		// Claude skips a message whose content is null, without a word: the loss is said.
		"assistant content null": {string(ccLines(ccUser, strings.Replace(ccAsst, `"content":[{"type":"text","text":"pong"}]`, `"content":null`, 1))), "", "Claude skips them"},
		"user content null":      {string(ccLines(ccAsst, strings.Replace(ccUser, `"content":"thanks"`, `"content":null`, 1))), "", "Claude skips them"},
		"torn last line":         {string(ccLines(ccUser)) + ccMeta[:40], format.KindTruncated, ""},
		"glued records":          {ccUser + ccAsst + "\n", format.KindMalformedRecord, ""},
		"NUL is not whitespace":  {string(ccLines(ccUser)) + "\x00" + ccMeta + "\n", format.KindMalformedRecord, ""},
	} {
		t.Run(name, func(t *testing.T) {
			v := format.Inspect(p, format.File{Path: ccPath}, []byte(tc.data))
			if got := map[bool]string{true: "", false: v.Kind}[v.Status == format.Healthy]; got != tc.kind {
				t.Fatalf("got %s %q (%s), want %q", v.Status, v.Kind, v.Detail, tc.kind)
			}
			w := strings.Join(v.Warnings, "\n")
			if tc.warning == "" && w != "" && tc.kind == "" {
				t.Errorf("unexpected warnings: %s", w)
			}
			if !strings.Contains(w, tc.warning) {
				t.Errorf("warnings %q lack %q", w, tc.warning)
			}
			// Streaming agrees, but for a file with records and no turn (see the report).
			if name == "meta records only" {
				return
			}
			s := format.StreamLines(bufio.NewReaderSize(strings.NewReader(tc.data), 16), p)
			if s.Status != v.Status || s.Kind != v.Kind || s.Offset != v.Offset {
				t.Errorf("stream %s %s@%d, in memory %s %s@%d", s.Status, s.Kind, s.Offset, v.Status, v.Kind, v.Offset)
			}
		})
	}
}

// Records appended to a healthy transcript are accepted exactly when the full check accepts
// the longer file.
func TestClaudeCodeAppendedAgreesWithFullCheck(t *testing.T) {
	p := ccProfile()
	healthy := ccRead(t, ccHealthy)
	for _, tail := range []string{
		ccMeta + "\n", ccUser + "\n" + ccAsst + "\n", ccAttach + "\n",
		`{"type":"file-history-snapshot","messageId":"m"}` + "\n",
		strings.Replace(ccUser, `"uuid":"u1",`, "", 1) + "\n",
		`{"sessionId":"x"}` + "\n",
	} {
		full := format.Inspect(p, format.File{Path: ccPath}, append(append([]byte{}, healthy...), tail...))
		if got := format.AppendedValid(p, []byte(tail)); got != (full.Status == format.Healthy) {
			t.Errorf("%s: appended %v, full check %s %s", tail, got, full.Status, full.Detail)
		}
	}
}

func TestClaudeCodeSplit(t *testing.T) {
	p := ccProfile()
	torn := ccAsst[:strings.Index(ccAsst, `]},"type"`)] // cut just after a complete content block
	for name, tc := range map[string]struct {
		line string
		want []string
	}{
		"torn stub and a record":                          {ccMeta[:69] + ccUser, []string{ccUser}},
		"}{ between two records":                          {ccMeta + ccUser, []string{ccMeta, ccUser}},
		"three records":                                   {ccUser + ccAttach + ccAsst, []string{ccUser, ccAttach, ccAsst}},
		"NULs before a record":                            {"\x00\x00\x00" + ccUser, []string{ccUser}},
		"NULs between two records":                        {ccMeta + "\x00\x00" + ccUser, []string{ccMeta, ccUser}},
		"a value nested in the torn record ends the line": {torn, nil},
		"a nested value, then a record":                   {torn + ccMeta, []string{ccMeta}},
		"a nested chain-like value without sessionId":     {`{"type":"x","data":{"parentUuid":null,"type":"user","uuid":"u","message":{}}` + ccMeta, []string{ccMeta}},
		"a torn stub alone":                               {ccUser[:100], nil},
		"a record and trailing garbage":                   {ccUser + `{"type":"pr-li`, nil},
		"a whole object that is no Claude record":         {ccMeta[:30] + `{"type":"text","text":"hi"}`, nil},
		"a chain record without uuid is not whole":        {ccMeta[:30] + strings.Replace(ccUser, `"uuid":"u1",`, "", 1), nil},
	} {
		t.Run(name, func(t *testing.T) {
			got := format.SplitLine(p, []byte(tc.line))
			if len(got) != len(tc.want) {
				t.Fatalf("got %d records %q, want %d", len(got), got, len(tc.want))
			}
			for i := range got {
				if string(got[i]) != tc.want[i] {
					t.Errorf("record %d: %s, want %s", i, got[i], tc.want[i])
				}
			}
		})
	}
}

// The salvage of a glued line keeps the record bytes as they are and adds only '\n'.
func TestClaudeCodeSalvageAddsOnlyNewlines(t *testing.T) {
	p := ccProfile()
	data := []byte(ccMeta + "\n" + ccMeta[:50] + ccUser + ccAsst + "\n" + "\x00\x00" + ccAttach + "\n")
	got := format.Salvage(p, ccPath, data)
	if want := ccLines(ccMeta, ccUser, ccAsst, ccAttach); !bytes.Equal(got, want) {
		t.Fatalf("salvage:\n%s\nwant:\n%s", got, want)
	}
}

func TestClaudeCodePrefixJudge(t *testing.T) {
	p := ccProfile()
	healthy := ccRead(t, ccHealthy)
	lines := bytes.SplitAfter(healthy, []byte("\n"))
	upTo := func(n int) []byte { return bytes.Join(lines[:n], nil) }
	for name, tc := range map[string]struct {
		data      []byte
		lastGood  []byte
		truncated bool
	}{
		"meta records missing (lines 31–32)": {upTo(30), healthy, false},
		"only the final assistant row":       {ccLines(ccMeta, ccUser), ccLines(ccMeta, ccUser, ccAsst), false},
		"a user row missing":                 {upTo(27), healthy, true},
		"the final assistant row and metas":  {upTo(29), healthy, true},
		"two assistant rows":                 {ccLines(ccUser), ccLines(ccUser, ccAsst, ccAsst), true},
		"one attachment row":                 {ccLines(ccUser), ccLines(ccUser, ccAttach), true},
	} {
		t.Run(name, func(t *testing.T) {
			v := format.Inspect(p, format.File{Path: ccPath, LastGood: tc.lastGood}, tc.data)
			if got := v.Status == format.Damaged && v.Kind == format.KindTruncated; got != tc.truncated {
				t.Fatalf("got %s %s (%s), want truncated=%v", v.Status, v.Kind, v.Detail, tc.truncated)
			}
			if !tc.truncated && (v.Status != format.Healthy || len(v.Warnings) == 0) {
				t.Errorf("want healthy with a warning, got %s %v", v.Status, v.Warnings)
			}
		})
	}
}

func TestClaudeSessionFromPath(t *testing.T) {
	for path, want := range map[string][2]string{
		"/h/.claude/projects/-tmp-p/" + ccSID + ".jsonl":                            {"/h/.claude", ccSID},
		"/h/.claude/projects/-tmp-p/" + ccSID + "/subagents/agent-a1b2.jsonl":       {"/h/.claude", ccSID},
		"/h/.claude/projects/-tmp-p/" + ccSID + "/subagents/sub/x/agent-a1b2.jsonl": {"/h/.claude", ccSID},
		"/h/cfg/projects/-tmp-p/agent-notasub.jsonl":                                {"/h/cfg", "agent-notasub"},
		"/h/.claude/elsewhere/" + ccSID + ".jsonl":                                  {"", ""},
		"/h/.claude/projects/" + ccSID + ".jsonl":                                   {"", ""},
	} {
		cfg, sid, ok := claudeLayout(path)
		if cfg != want[0] || sid != want[1] || ok != (want[0] != "") {
			t.Errorf("%s: %q %q %v, want %q %q", path, cfg, sid, ok, want[0], want[1])
		}
	}
	// Through a symlinked rule root, the layout is where the link points.
	root := t.TempDir()
	slug := filepath.Join(root, "cfg", "projects", "-tmp-p")
	os.MkdirAll(slug, 0o700)
	link := filepath.Join(root, "rule-root")
	if err := os.Symlink(slug, link); err != nil {
		t.Fatal(err)
	}
	cfg, sid, ok := claudeSession(filepath.Join(link, ccSID+".jsonl"))
	if real, _ := filepath.EvalSymlinks(filepath.Join(root, "cfg")); !ok || cfg != real || sid != ccSID {
		t.Errorf("through a link: %q %q %v", cfg, sid, ok)
	}
}

// The registered protocol finds the registry from the transcript's path: a live entry makes
// it busy, a stale one lets the heal go on with no lock.
func TestClaudeCodeLockProtocol(t *testing.T) {
	root := t.TempDir()
	cfg := filepath.Join(root, "cfg")
	sub := filepath.Join(cfg, "projects", "-tmp-p", ccSID, "subagents")
	os.MkdirAll(sub, 0o700)
	os.MkdirAll(filepath.Join(cfg, "sessions"), 0o700)
	take := Registry().LockProtocol("claude-code")
	for _, path := range []string{filepath.Join(cfg, "projects", "-tmp-p", ccSID+".jsonl"), filepath.Join(sub, "agent-x.jsonl")} {
		entry := filepath.Join(cfg, "sessions", "1.json")
		os.WriteFile(entry, []byte(`{"pid":1,"sessionId":"`+ccSID+`","procStart":"1","pidDomain":"linux:other-host:pid:[1]"}`), 0o600)
		if _, err := take(context.Background(), path, ccProfile(), format.LockParams{}); !errors.Is(err, lock.ErrBusy) {
			t.Errorf("%s, an entry of another pid domain: %v, want busy", path, err)
		}
		start, ok := lock.ProcessStart(os.Getpid())
		if !ok {
			continue // no start times here: any entry naming the session is live
		}
		os.Remove(entry)
		os.WriteFile(filepath.Join(cfg, "sessions", strconv.Itoa(os.Getpid())+".json"),
			[]byte(`{"pid":`+strconv.Itoa(os.Getpid())+`,"sessionId":"`+ccSID+`","procStart":"`+strconv.FormatUint(start+1, 10)+`"}`), 0o600)
		l, err := take(context.Background(), path, ccProfile(), format.LockParams{})
		if _, unlocked := l.(format.Unlocked); err != nil || !unlocked {
			t.Errorf("%s, a stale entry: %v %v, want no lock", path, l, err)
		}
	}
}

// FuzzClaudeFields: a transcript judged on the members claudeFields builds gives every
// record's finding, the warnings and the end the whole tree of the levels it reads
// (jsonv.ParseDepth, four levels: record, message, content, block) gives; and so does one
// judged on each record's skeleton of what the checks read (SkeletonFields), as a long
// record may be.
func FuzzClaudeFields(f *testing.F) {
	files, _ := filepath.Glob("../testdata/samples/claude-code/*/home/.claude/projects/*/*.jsonl")
	for _, p := range files {
		if b, err := os.ReadFile(p); err == nil {
			f.Add(b)
		}
	}
	f.Add(ccLines(ccMeta, ccUser, ccAsst, ccAttach))
	f.Add(ccLines(
		`{"type":"assistant","message":{"role":"assistant","content":[{"type":"tool_use","id":"t\u0031","input":{"x":"y\n"}},{"type":"tool_use","id":"t2"}]},"uuid":"a","parentUuid":"zz"}`,
		`{"type":"user","message":{"content":[{"type":"tool_result","tool_use_id":"t1","content":"out\"put"}]},"uuid":"b","parentUuid":"a","sessionId":"other"}`,
		`{"type":"user","message":{"role":"user","content":null},"type":"assistant","message":{"content":"x"}}`,
		`{"type":"user","message":"text","uuid":1,"sessionId":"`+ccSID+`"}`,
		`{"type":"assistant","message":{"role":null,"content":[1,"a",{"type":"tool_use"}]},"message":{"role":"r","content":[{"type":"tool_use","id":"dup","id":"last"}]}}`,
	))
	f.Add(ccLines(ccUser,
		`{"type":"assistant","message":{"role":"assistant","content":[{"type":"tool_use","id":"t9"},{"type":"tool_use","id":"t8"}]},"uuid":"a9","parentUuid":"u1"}`,
		`{"type":"user","message":{"role":"user","content":[{"type":"tool_result","tool_use_id":"t9","content":[{"type":"text","text":"done"}]}]},"uuid":"u9","parentUuid":"a9"}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		if len(b) > 1<<16 {
			return
		}
		got := claudeCodeLog{}.NewSequence(ccPath).(*claudeSequence)
		gotValid := claudeCodeLog{}.NewSequence(ccPath).(*claudeSequence) // fed by RecordValid where Valid passes
		want := claudeCodeLog{}.NewSequence(ccPath).(*claudeSequence)
		pruned := claudeCodeLog{}.NewSequence(ccPath).(*claudeSequence) // fed each record's skeleton of what the checks read
		for _, rec := range bytes.Split(b, []byte("\n")) {
			g := got.Record(rec)
			sk := rec
			if jsonv.Valid(rec, nodeDialect) == nil {
				var err error
				if sk, err = jsonv.FieldsSkeleton(bytes.NewReader(rec), nodeDialect, claudeCodeLog{}.SkeletonFields(), 1<<20, 1<<20); err != nil {
					t.Fatal(err)
				}
				vr, _ := jsonv.Parse(rec, nodeDialect)
				vs, _ := jsonv.Parse(sk, nodeDialect)
				if (claudeCodeLog{}).Whole(vr) != (claudeCodeLog{}).Whole(vs) {
					t.Fatalf("record %q whole: %v, its skeleton %q not", rec, (claudeCodeLog{}).Whole(vr), sk)
				}
			}
			if p := pruned.Record(sk); p != g {
				t.Fatalf("record %q: %q, its skeleton %q: %q", rec, g, sk, p)
			}
			if p, q := (claudeCodeLog{}).RecordProblem(rec, false), (claudeCodeLog{}).RecordProblem(sk, false); p != q {
				t.Fatalf("record %q: RecordProblem %q, of its skeleton %q: %q", rec, p, sk, q)
			}
			gv := g
			if jsonv.Valid(rec, nodeDialect) == nil {
				gv = gotValid.RecordValid(rec)
			} else {
				gotValid.Record(rec)
			}
			if gv != g {
				t.Fatalf("record %q: RecordValid %q, Record %q", rec, gv, g)
			}
			w := ""
			if v, err := jsonv.ParseDepth(rec, nodeDialect, 4); err != nil {
				w = err.Error()
			} else {
				w = want.record(v)
			}
			if g != w {
				t.Fatalf("record %q: %q, the whole tree says %q", rec, g, w)
			}
			if p := (claudeCodeLog{}).RecordProblem(rec, false); (p == "") != (w == "") {
				t.Fatalf("record %q: RecordProblem %q, the sequence %q", rec, p, w)
			}
		}
		if g, w := got.End(), want.End(); g != w {
			t.Fatalf("End %q, the whole tree says %q", g, w)
		}
		if g, w := strings.Join(gotValid.Warnings(), "|"), strings.Join(want.Warnings(), "|"); g != w || gotValid.End() != want.End() {
			t.Fatalf("fed by RecordValid: warnings %q, the whole tree says %q", g, w)
		}
		if g, w := strings.Join(got.Warnings(), "|"), strings.Join(want.Warnings(), "|"); g != w {
			t.Fatalf("warnings %q, the whole tree says %q", g, w)
		}
		if g, w := strings.Join(pruned.Warnings(), "|"), strings.Join(want.Warnings(), "|"); g != w || pruned.End() != want.End() {
			t.Fatalf("fed the skeletons: warnings %q, the whole tree says %q", g, w)
		}
	})
}
