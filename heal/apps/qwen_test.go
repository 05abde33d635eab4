package apps

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/sessionmedic/sessionmedic/heal/format"
	"github.com/sessionmedic/sessionmedic/heal/lock"
)

const (
	qwenTestID   = "2e7f8d81-0fed-4f4d-93ed-de324a5bf18d"
	qwenTestPath = "/h/.qwen/projects/-tmp-demo-proj/chats/" + qwenTestID + ".jsonl"
	qwenSamples  = "../testdata/samples/qwen-code/"
)

func qwenRec(uuid, parent, typ string) string {
	p := "null"
	if parent != "" {
		p = `"` + parent + `"`
	}
	return `{"uuid":"` + uuid + `","parentUuid":` + p + `,"sessionId":"` + qwenTestID + `","timestamp":"2026-11-25T03:10:51.278Z","type":"` + typ + `","cwd":"/tmp/demo/proj","version":"0.24.4","message":{"role":"user","parts":[{"text":"hi ` + uuid + `"}]}}` + "\n"
}

func qwenInspect(path string, data []byte) format.Verdict {
	return format.Inspect(qwenLog{}, format.File{Path: path}, data)
}

func TestQwenChecklist(t *testing.T) {
	a, b, c := qwenRec("aaaaaaaa", "", "user"), qwenRec("bbbbbbbb", "aaaaaaaa", "system"), qwenRec("cccccccc", "bbbbbbbb", "assistant")
	runChecklist(t, qwenLog{}, func(tc checklistCase) string {
		if strings.HasPrefix(tc.name, "a file not named") {
			return "/elsewhere/notes.jsonl"
		}
		return qwenTestPath
	}, func(tc checklistCase) bool { return !strings.Contains(tc.name, "another session") }, []checklistCase{
		{name: "healthy", data: a + b + c},
		{name: "fragments: records sharing a uuid with other parts", data: a + b + c + strings.Replace(c, "hi", "more", 1)},
		{name: "a branch (a rewind)", data: a + b + c + qwenRec("dddddddd", "aaaaaaaa", "user")},
		{name: "a tool_result record", data: a + qwenRec("bbbbbbbb", "aaaaaaaa", "tool_result")},
		{name: "invalid UTF-8 in a string (Node decodes it lossily)", data: a + strings.Replace(b, "hi", "h\xffi", 1)},
		{name: "a raw U+2028 in a string", data: a + strings.Replace(b, "hi", "h\u2028i", 1)},
		{name: "parent appears only later", data: b + a},
		{name: "the first record's parent is gone (line 1 was lost)", data: b + c, warn: "first record's parent"},
		{name: "a file not named by its session id", data: a + b},
		{name: "empty", data: "", kind: format.KindEmpty},
		{name: "only blank lines", data: "\n\n", kind: format.KindEmpty},
		{name: "a re-appended assistant line", data: a + b + c + c, kind: format.KindDuplicateRecord},
		{name: "a re-appended user line", data: a + a + b, kind: format.KindDuplicateRecord},
		{name: "a re-appended system line (Qwen sends it once)", data: a + b + b + c, warn: "repeat an earlier one"},
		{name: "a re-appended function call (Qwen sends it once)", data: a + b + strings.Replace(c, `{"text":"hi cccccccc"}`, `{"functionCall":{"id":"call_1","name":"read_file","args":{}}}`, 1) + strings.Replace(c, `{"text":"hi cccccccc"}`, `{"functionCall":{"id":"call_1","name":"read_file","args":{}}}`, 1), warn: "repeat an earlier one"},
		{name: "a tool result that answers no call (qwen-261: Qwen drops it and the call)", data: a + b + strings.Replace(c, `{"text":"hi cccccccc"}`, `{"functionCall":{"id":"call_1","name":"read_file","args":{}}}`, 1) + strings.Replace(qwenRec("dddddddd", "cccccccc", "tool_result"), `{"text":"hi dddddddd"}`, `{"functionResponse":{"id":"call_#","name":"read_file","response":{"output":"x"}}}`, 1), warn: "1 tool result(s) answer no call"},
		{name: "a tool call answered", data: a + b + strings.Replace(c, `{"text":"hi cccccccc"}`, `{"functionCall":{"id":"call_1","name":"read_file","args":{}}}`, 1) + strings.Replace(qwenRec("dddddddd", "cccccccc", "tool_result"), `{"text":"hi dddddddd"}`, `{"functionResponse":{"id":"call_1","name":"read_file","response":{"output":"x"}}}`, 1)},
		{name: "a re-appended tool_result line (Qwen sends it once)", data: a + qwenRec("bbbbbbbb", "aaaaaaaa", "tool_result") + qwenRec("bbbbbbbb", "aaaaaaaa", "tool_result"), warn: "repeat an earlier one"},
		{name: "a record of another session", data: a + strings.Replace(b, qwenTestID, "617f6bc0-e061-4d1b-a3fb-ffc4054acc49", 1), kind: format.KindSchema},
		{name: "record without uuid", data: a + strings.Replace(b, `"uuid":"bbbbbbbb",`, ``, 1), kind: format.KindSchema},
		{name: "record without parentUuid", data: a + strings.Replace(b, `"parentUuid":"aaaaaaaa",`, ``, 1), kind: format.KindSchema},
		{name: "record with a numeric parentUuid", data: a + strings.Replace(b, `"parentUuid":"aaaaaaaa"`, `"parentUuid":7`, 1), kind: format.KindSchema},
		{name: "record without sessionId", data: a + strings.Replace(b, `"sessionId":"`+qwenTestID+`",`, ``, 1), kind: format.KindSchema},
		{name: "record of an unknown type", data: a + strings.Replace(b, `"type":"system"`, `"type":"gemini"`, 1), kind: format.KindSchema},
		{name: "record without timestamp", data: a + strings.Replace(b, `"timestamp":"2026-11-25T03:10:51.278Z",`, ``, 1), kind: format.KindSchema},
		{name: "history gap", data: a + c, kind: format.KindSchema},
		{name: "torn tail", data: a + b[:40], kind: format.KindTruncated},
		{name: "glued stub", data: a + b[:40] + c, kind: format.KindMalformedRecord},
		{name: "a non-object line", data: a + "[1,2]\n", kind: format.KindMalformedRecord},
		{name: "a NUL run", data: a + strings.Repeat("\x00", 30) + "\n" + b, kind: format.KindMalformedRecord},
	})
}

// The salvage keeps the first of byte-identical lines, rejoins a record a raw newline split,
// and splits a stub from the record glued onto it; the result is healthy.
func TestQwenSalvage(t *testing.T) {
	a, b, c := qwenRec("aaaaaaaa", "", "user"), qwenRec("bbbbbbbb", "aaaaaaaa", "assistant"), qwenRec("cccccccc", "bbbbbbbb", "user")
	split := strings.Replace(b, `"text":"hi `, `"text":"two`+"\n"+`lines `, 1)
	runSalvage(t, qwenLog{}, qwenTestPath, map[string]struct{ in, want string }{
		"duplicates": {a + b + c + b + c, a + b + c},
		"split":      {a + split + c, a + strings.Replace(split, "\n", `\n`, 1) + c},
		"glued":      {a + b[:60] + b + c, a + b + c},
	})
}

func TestQwenSamplesVerdicts(t *testing.T) {
	const file = "/home/.qwen/projects/-tmp-oracle-proj/chats/" + qwenTestID + ".jsonl"
	runSampleVerdicts(t, qwenLog{}, qwenSamples, file, map[string]string{
		"healthy": "", "torn_tail": format.KindTruncated, "nul_tail": format.KindTruncated,
		"garbage_line": format.KindMalformedRecord, "glued": format.KindMalformedRecord,
		"split_record": format.KindMalformedRecord, "duplicate_lines": format.KindDuplicateRecord,
		"torn_first_line": format.KindMalformedRecord, "empty": format.KindEmpty, "history_gap": format.KindSchema,
	})
}

func TestQwenAppendedOK(t *testing.T) {
	for rec, want := range map[string]bool{
		strings.TrimSuffix(qwenRec("aaaaaaaa", "bbbbbbbb", "assistant"), "\n"): true,
		strings.TrimSuffix(qwenRec("aaaaaaaa", "", "user"), "\n"):              true,
		`{"uuid":"aaaaaaaa","parentUuid":null,"type":"user"}`:                  false,
		`{"type":"message","id":"aaaaaaaa","parentId":null}`:                   false,
	} {
		if got := (qwenLog{}).AppendedOK([]byte(rec)); got != want {
			t.Errorf("AppendedOK(%s) = %v, want %v", rec, got, want)
		}
	}
}

func TestQwenArgv(t *testing.T) {
	for _, tc := range []struct {
		argv []string
		want bool
	}{
		{[]string{"qwen", "--resume", qwenTestID}, true},
		{[]string{"/usr/local/bin/qwen"}, true},
		{[]string{"node", "/usr/local/bin/qwen", "-p", "x"}, true},
		{[]string{"node", "--expose-gc", "/usr/lib/node_modules/@qwen-code/qwen-code/cli.js"}, true},
		{[]string{"node", "/srv/app.js"}, false},
		{[]string{"qwen-helper"}, false},
		{nil, false},
	} {
		if got := lock.QwenArgv(tc.argv); got != tc.want {
			t.Errorf("QwenArgv(%q) = %v, want %v", tc.argv, got, tc.want)
		}
	}
}

// The project's scheduler lock names the session for a running pid: busy, with the pid in
// the reason; for a dead pid or another session: free. The lock is found as Qwen lays it
// out: <runtime>/tmp/<sha256 of the project root>/scheduled_tasks.lock.
func TestQwenSchedulerLockIsLiveness(t *testing.T) {
	rt := t.TempDir()
	cwd := filepath.Join(t.TempDir(), "nobody-works-here")
	chats := filepath.Join(rt, "projects", "-proj", "chats")
	if err := os.MkdirAll(chats, 0o755); err != nil {
		t.Fatal(err)
	}
	// An id of this run's own, that no real Qwen process names.
	id := fmt.Sprintf("%08x-0000-4000-8000-%012x", os.Getpid(), time.Now().UnixNano()&0xffffffffffff)
	path := filepath.Join(chats, id+".jsonl")
	rec := strings.ReplaceAll(strings.Replace(qwenRec("aaaaaaaa", "", "user"), "/tmp/demo/proj", cwd, 1), qwenTestID, id)
	if err := os.WriteFile(path, []byte(rec), 0o644); err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(rt, "tmp", qwenProjectHash(cwd))
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	writeLock := func(pid int, sid string) {
		body := `{"pid":` + strconv.Itoa(pid) + `,"sessionId":"` + sid + `","lockId":"x"}`
		if err := os.WriteFile(filepath.Join(dir, "scheduled_tasks.lock"), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	take := func() error {
		_, err := lockQwenCode(context.Background(), path, qwenLog{}, format.LockParams{})
		return err
	}
	if err := take(); err != nil {
		t.Fatalf("no scheduler lock: %v", err)
	}
	writeLock(os.Getpid(), id)
	err := take()
	if !errors.Is(err, lock.ErrBusy) || !strings.Contains(err.Error(), strconv.Itoa(os.Getpid())) {
		t.Fatalf("a running pid's scheduler lock of the session: %v", err)
	}
	writeLock(os.Getpid(), "617f6bc0-e061-4d1b-a3fb-ffc4054acc49")
	if err := take(); err != nil {
		t.Errorf("another session's scheduler lock: %v", err)
	}
	writeLock(deadPID(t), id)
	if err := take(); err != nil {
		t.Errorf("a dead pid's scheduler lock: %v", err)
	}
	// A lock that is a symlink (to a body naming the session for a running pid) or a FIFO
	// says nothing, and never hangs the look.
	lockPath := filepath.Join(dir, "scheduled_tasks.lock")
	elsewhere := filepath.Join(t.TempDir(), "body")
	if err := os.WriteFile(elsewhere, []byte(`{"pid":`+strconv.Itoa(os.Getpid())+`,"sessionId":"`+id+`"}`), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Remove(lockPath); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(elsewhere, lockPath); err != nil {
		t.Fatal(err)
	}
	if err := take(); err != nil {
		t.Errorf("a symlinked scheduler lock: %v", err)
	}
	if err := os.Remove(lockPath); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Mkfifo(lockPath, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := take(); err != nil {
		t.Errorf("a FIFO as scheduler lock: %v", err)
	}
}

func qwenProjectHash(root string) string {
	sum := sha256.Sum256([]byte(root))
	return hex.EncodeToString(sum[:])
}

// deadPID is the pid of a process that ran and was reaped.
func deadPID(t *testing.T) int {
	t.Helper()
	cmd := exec.Command("true")
	if err := cmd.Run(); err != nil {
		t.Skipf("cannot run true: %v", err)
	}
	return cmd.Process.Pid
}
