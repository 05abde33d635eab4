package apps

import (
	"bufio"
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/sessionmedic/sessionmedic/heal/format"
	"github.com/sessionmedic/sessionmedic/heal/jsonv"
	"github.com/sessionmedic/sessionmedic/heal/lock"
)

const (
	gemSamples = "../testdata/samples/gemini-cli/"
	gemChat    = "/home/.gemini/tmp/proj/chats/session-2026-11-22T21-40-7759d9fe.jsonl"
	gemID      = "abcdefgh-1111-2222-3333-444455556666"
	gemName    = "session-2026-11-22T21-40-abcdefgh.jsonl"
	gemUser    = `{"id":"u1","timestamp":"2026-11-22T21:40:54.000Z","type":"user","content":[{"text":"hello"}]}` + "\n"
	gemContext = `{"$set":{"messages":[{"id":"c1","timestamp":"2026-11-22T21:40:53.399Z","type":"user","content":[{"text":"<session_context>\nx</session_context>"}]}]}}` + "\n"
)

// gemProject lays out tmp/proj/ with .project_root = root (none when root is "") and
// returns the project and chats directories.
func gemProject(t *testing.T, root string) (project, chats string) {
	t.Helper()
	project = filepath.Join(t.TempDir(), "tmp", "proj")
	chats = filepath.Join(project, "chats")
	if err := os.MkdirAll(chats, 0o755); err != nil {
		t.Fatal(err)
	}
	if root != "" {
		os.WriteFile(filepath.Join(project, ".project_root"), []byte(root), 0o644)
	}
	return project, chats
}

func gemHash(root string) string {
	s := sha256.Sum256([]byte(root))
	return hex.EncodeToString(s[:])
}

func gemMeta(id, hash, kind string) string {
	return `{"sessionId":"` + id + `","projectHash":"` + hash + `","startTime":"2026-11-22T21:40:53.398Z","lastUpdated":"2026-11-22T21:40:53.398Z","kind":"` + kind + `"}` + "\n"
}

func gemInspect(path string, data []byte) format.Verdict {
	return format.Inspect(geminiLog{}, format.File{Path: path}, data)
}

func TestGeminiChecklist(t *testing.T) {
	_, chats := gemProject(t, "/tmp/demo/p")
	h := gemHash("/tmp/demo/p")
	main := filepath.Join(chats, gemName)
	sub := filepath.Join(chats, gemID, "sub-1.jsonl")
	ok, warn, schema := "", "warn", format.KindSchema
	for _, c := range []struct {
		name, path, data, want string
	}{
		{"healthy", main, gemMeta(gemID, h, "main") + gemContext + gemUser, ok},
		{"blank lines", main, "\n" + gemMeta(gemID, h, "main") + "\n" + gemUser, ok},
		{"id8 differs", main, gemMeta("zbcdefgh-1", h, "main") + gemUser, schema},
		{"sanitised id8", filepath.Join(chats, "session-2026-11-22T21-40-ab_defgh.jsonl"), gemMeta("ab.defgh-1", h, "main") + gemUser, ok},
		{"hash differs", main, gemMeta(gemID, gemHash("/elsewhere"), "main") + gemUser, schema},
		{"subagent at top", main, gemMeta(gemID, h, "subagent") + gemUser, schema},
		{"no kind", main, strings.Replace(gemMeta(gemID, h, "main"), `,"kind":"main"`, "", 1) + gemUser, schema},
		{"bad time", main, strings.Replace(gemMeta(gemID, h, "main"), `"startTime":"2026`, `"startTime":"x2026`, 1) + gemUser, schema},
		{"line 1 a message", main, gemUser + gemUser, schema},
		{"no record", main, "\n\n", format.KindEmpty},
		{"subagent", sub, gemMeta("sub-1", h, "subagent") + gemContext, ok},
		{"subagent named otherwise", sub, gemMeta("sub-2", h, "subagent") + gemUser, schema},
		{"main nested", sub, gemMeta("sub-1", h, "main") + gemUser, schema},
		{"rewind known", main, gemMeta(gemID, h, "main") + gemUser + gemUser + `{"$rewindTo":"u1"}` + "\n" + gemUser, ok},
		{"rewind into checkpoint", main, gemMeta(gemID, h, "main") + gemContext + gemUser + `{"$rewindTo":"c1"}` + "\n" + gemUser, ok},
		{"rewind unknown", main, gemMeta(gemID, h, "main") + gemUser + `{"$rewindTo":"nope"}` + "\n", schema},
		{"rewind dropped", main, gemMeta(gemID, h, "main") + gemUser + `{"$rewindTo":"u1"}` + "\n" + `{"$rewindTo":"u1"}` + "\n", schema},
		{"rewind not string", main, gemMeta(gemID, h, "main") + gemUser + `{"$rewindTo":1}` + "\n", schema},
		{"set not object", main, gemMeta(gemID, h, "main") + gemUser + `{"$set":[1]}` + "\n", schema},
		// The loader ignores a record of none of its kinds, and merges a metadata record a
		// resume appends (its messages added): seen in loadConversationRecord of 0.61.0.
		{"unknown record", main, gemMeta(gemID, h, "main") + gemUser + `{"type":"user"}` + "\n", warn},
		{"resumed: metadata again", main, gemMeta(gemID, h, "main") + gemUser + gemMeta(gemID, h, "main") + gemUser, ok},
		{"metadata again, other id", main, gemMeta(gemID, h, "main") + gemUser + gemMeta("zbcdefgh-1", h, "main") + gemUser, schema},
		{"metadata record's messages", main, gemMeta(gemID, h, "main") + strings.TrimSuffix(gemMeta(gemID, h, "main"), "}\n") + `,"messages":[{"id":"m","type":"user","content":"hi"}]}` + "\n", ok},
		{"$set changes the kind", main, gemMeta(gemID, h, "main") + gemUser + `{"$set":{"kind":"subagent"}}` + "\n", schema},
		{"only context", main, gemMeta(gemID, h, "main") + gemContext, warn},
		{"rewound to nothing", main, gemMeta(gemID, h, "main") + gemUser + `{"$rewindTo":"u1"}` + "\n", warn},
		{"gemini thoughts", main, gemMeta(gemID, h, "main") + `{"id":"g","type":"gemini","content":"","thoughts":[{"subject":"s"}]}` + "\n", ok},
		{"empty gemini", main, gemMeta(gemID, h, "main") + `{"id":"g","type":"gemini","content":"","thoughts":[],"toolCalls":[]}` + "\n", warn},
		{"outside the layout", "/x/s.jsonl", gemMeta("anything", "h", "main") + gemContext, ok},
	} {
		v := gemInspect(c.path, []byte(c.data))
		got := v.Kind
		if v.Status == format.Healthy {
			got = ""
			if len(v.Warnings) > 0 {
				got = warn
			}
		}
		if got != c.want {
			t.Errorf("%s: got %q (%s %s %v), want %q", c.name, got, v.Status, v.Detail, v.Warnings, c.want)
		}
	}
}

func TestGeminiNoProjectRootSkipsTheHash(t *testing.T) {
	_, chats := gemProject(t, "")
	v := gemInspect(filepath.Join(chats, gemName), []byte(gemMeta(gemID, "whatever", "main")+gemUser))
	if v.Status != format.Healthy {
		t.Errorf("without .project_root: %s", v)
	}
}

func TestGeminiSamples(t *testing.T) {
	dir := filepath.Dir(gemSamples + "stub_sibling_27368" + gemChat)
	for _, n := range []string{"session-2026-11-22T21-40-7759d9fe.jsonl", "session-2026-11-22T21-41-7759d9fe.jsonl"} {
		b, _ := os.ReadFile(filepath.Join(dir, n))
		v := gemInspect(filepath.Join(dir, n), b)
		if v.Status != format.Healthy || !strings.Contains(strings.Join(v.Warnings, "|"), "#27368") {
			t.Errorf("stub sibling %s: %s %v, want healthy with the #27368 warning", n, v, v.Warnings)
		}
	}
	p := gemSamples + "healthy" + gemChat
	b, _ := os.ReadFile(p)
	if v := gemInspect(p, b); v.Status != format.Healthy || len(v.Warnings) > 0 {
		t.Errorf("healthy: %s %v", v, v.Warnings)
	}
	// Streaming and incremental judgement agree with the full one on every sample.
	for _, c := range []string{"healthy", "torn_tail", "glued_after_resume", "bad_middle_line", "torn_metadata", "nul_tail", "empty"} {
		b, _ := os.ReadFile(gemSamples + c + gemChat)
		want := gemInspect("/x/s.jsonl", b)
		got := format.StreamLines(bufio.NewReaderSize(bytes.NewReader(b), 64), geminiLog{})
		if got.Status != want.Status || got.Kind != want.Kind || got.Offset != want.Offset {
			t.Errorf("%s: stream %s, in memory %s", c, got, want)
		}
	}
}

// A record the incremental check accepts never turns a healthy file damaged.
func TestGeminiAppendedAgreesWithFull(t *testing.T) {
	base := gemMeta(gemID, "h", "main") + gemContext + gemUser
	for _, rec := range []string{gemUser, `{"$set":{"lastUpdated":"x"}}`, `{"$set":1}`, `{"$rewindTo":"u1"}`, `{"$rewindTo":"zz"}`,
		`{"type":"user"}`, gemMeta(gemID, "h", "main"), `{"id":7}`} {
		rec = strings.TrimSuffix(rec, "\n")
		full := gemInspect("/x/s.jsonl", []byte(base+rec+"\n")).Status == format.Healthy
		if inc := (geminiLog{}).AppendedOK([]byte(rec)); inc && !full {
			t.Errorf("%s: appended OK but the full check finds damage", rec)
		}
		if strings.HasPrefix(rec, `{"$rewindTo"`) && (geminiLog{}).AppendedOK([]byte(rec)) {
			t.Errorf("%s: a rewind needs a full pass", rec)
		}
		if (geminiLog{}).RecordProblem([]byte(rec), false) == "" != (full || strings.HasPrefix(rec, `{"$rewindTo":"zz"`)) {
			t.Errorf("%s: the record check and the full check disagree", rec)
		}
	}
}

func TestGeminiSplit(t *testing.T) {
	set := `{"$set":{"sessionId":"7759d9fe-6f50"}}`
	for _, c := range []struct{ line, want string }{
		{`{"$set":{"lastUpdated":"2` + set, set},
		{"\x00\x00\x00" + gemUser[:len(gemUser)-1], gemUser[:len(gemUser)-1]},
		{`{"id":"x","type":"us` + `{"$rewindTo":"a"}{"$set":{}}`, `{"$rewindTo":"a"}` + "\n" + `{"$set":{}}`},
		{`{"$set":{"messages":[{"id":"a","type":"user","content":[]}],"x":`, ""},
		{`{"$set":{"x":{"$set":{}},"y":`, ""},
		{"\x00\x00", ""},
	} {
		var got []string
		for _, r := range format.SplitLine(geminiLog{}, []byte(c.line)) {
			got = append(got, string(r))
		}
		if strings.Join(got, "\n") != c.want {
			t.Errorf("SplitLine(%q) = %q, want %q", c.line, got, c.want)
		}
	}
}

func TestGeminiRebuildHeader(t *testing.T) {
	p := gemSamples + "torn_metadata" + gemChat
	torn, _ := os.ReadFile(p)
	healthy, _ := os.ReadFile(gemSamples + "healthy" + gemChat)
	want := bytes.ReplaceAll(healthy[:bytes.IndexByte(healthy, '\n')+1], []byte("53.398Z"), []byte("53.399Z"))
	want = append(want, healthy[bytes.IndexByte(healthy, '\n')+1:]...)
	if got := rebuildHeader(geminiLog{}, p, torn); !bytes.Equal(got, want) {
		t.Errorf("torn line 1 not replaced by the rebuilt header:\n%.300s", got)
	}
	rest := torn[bytes.IndexByte(torn, '\n')+1:]
	if got := rebuildHeader(geminiLog{}, p, rest); !bytes.Equal(got, want) {
		t.Errorf("missing line 1 not prepended:\n%.300s", got)
	}
	if got := rebuildHeader(geminiLog{}, p, healthy); got != nil {
		t.Error("a header that is there was rebuilt")
	}

	_, chats := gemProject(t, "/tmp/demo/p")
	main := filepath.Join(chats, gemName)
	setID := func(id string) string { return `{"$set":{"sessionId":"` + id + `"}}` + "\n" }
	for _, c := range []struct {
		name, data string
		ok         bool
	}{
		{"id from $set", "{\"sessionId\":\"abc\n" + gemContext + gemUser + setID(gemID), true},
		{"no id", "{\"sessionId\":\"abc\n" + gemContext + gemUser, false},
		{"id of another session", "{\"sessionId\":\"abc\n" + gemUser + setID("zzzzzzzz-1"), false},
		{"two ids", "{\"sessionId\":\"abc\n" + gemUser + setID(gemID) + setID("abcdefgh-9"), false},
		{"no timestamp", "{\"sessionId\":\"abc\n" + `{"id":"u","type":"user","content":"x"}` + "\n" + setID(gemID), false},
	} {
		got := rebuildHeader(geminiLog{}, main, []byte(c.data))
		if (got != nil) != c.ok {
			t.Errorf("%s: rebuilt %v, want %v", c.name, got != nil, c.ok)
			continue
		}
		if got == nil {
			continue
		}
		hdr := `{"sessionId":"` + gemID + `","projectHash":"` + gemHash("/tmp/demo/p") + `","startTime":"2026-11-22T21:40:53.399Z","lastUpdated":"2026-11-22T21:40:53.399Z","kind":"main"}` + "\n"
		if string(got) != hdr+c.data[strings.IndexByte(c.data, '\n')+1:] {
			t.Errorf("%s: got\n%s", c.name, got)
		}
		if v := gemInspect(main, got); v.Status != format.Healthy {
			t.Errorf("%s: rebuilt file is %s", c.name, v)
		}
	}
	// The subagents' chats/<id>/ directory names the session.
	os.Mkdir(filepath.Join(chats, gemID), 0o755)
	if got := rebuildHeader(geminiLog{}, main, []byte(gemUser)); !bytes.HasPrefix(got, []byte(`{"sessionId":"`+gemID+`"`)) {
		t.Errorf("id from the subagents' directory: %q", got)
	}
	if got := rebuildHeader(geminiLog{}, filepath.Join(chats, gemID, "s.jsonl"), []byte(gemUser)); got != nil {
		t.Error("a subagent's header was rebuilt")
	}
	_, bare := gemProject(t, "")
	if got := rebuildHeader(geminiLog{}, filepath.Join(bare, gemName), []byte(gemUser+setID(gemID))); got != nil {
		t.Error("rebuilt without .project_root")
	}
}

func TestGeminiRestore(t *testing.T) {
	healthy, _ := os.ReadFile(gemSamples + "healthy" + gemChat)
	stub, _ := os.ReadFile(gemSamples + "stub_sibling_27368/home/.gemini/tmp/proj/chats/session-2026-11-22T21-41-7759d9fe.jsonl")
	last := time.Date(2026, 11, 22, 21, 42, 53, 594e6, time.UTC)
	day := 24 * time.Hour
	for _, c := range []struct {
		name string
		data []byte
		now  time.Time
		want bool
	}{
		{"fresh", healthy, last.Add(time.Minute), true},
		{"29 days", healthy, last.Add(29 * day), true},
		{"31 days", healthy, last.Add(31 * day), false},
		{"no resumable message", stub, last, false},
		{"garbage", []byte("nope\n"), last, false},
	} {
		if got := (geminiLog{}).Restore(bytes.NewReader(c.data), int64(len(c.data)), c.now); got != c.want {
			t.Errorf("%s: %v, want %v", c.name, got, c.want)
		}
	}
}

func TestGeminiLock(t *testing.T) {
	ctx := context.Background()
	_, bare := gemProject(t, "")
	if l, err := lockGeminiCLI(ctx, filepath.Join(bare, gemName), geminiLog{}, format.LockParams{}); err != nil || l != (format.Unlocked{}) {
		t.Errorf("no .project_root: %v %v", l, err)
	}
	if runtime.GOOS != "linux" {
		t.Skip("liveness needs /proc")
	}
	root := t.TempDir()
	_, chats := gemProject(t, root)
	main, sub := filepath.Join(chats, gemName), filepath.Join(chats, gemID, "s.jsonl")
	if l, err := lockGeminiCLI(ctx, main, geminiLog{}, format.LockParams{}); err != nil || l != (format.Unlocked{}) {
		t.Errorf("no Gemini process: %v %v", l, err)
	}
	src, err := exec.LookPath("sleep")
	if err != nil {
		t.Skip("no sleep binary")
	}
	b, _ := os.ReadFile(src)
	bin := filepath.Join(t.TempDir(), "gemini")
	os.WriteFile(bin, b, 0o755)
	cmd := exec.Command(bin, "60")
	cmd.Dir = root
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { cmd.Process.Kill(); cmd.Wait() }()
	for deadline := time.Now().Add(5 * time.Second); !lock.GeminiLive(root); time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("the Gemini process is not seen")
		}
	}
	for _, p := range []string{main, sub} {
		if _, err := lockGeminiCLI(ctx, p, geminiLog{}, format.LockParams{Wait: 100 * time.Millisecond}); !errors.Is(err, lock.ErrBusy) {
			t.Errorf("%s with a Gemini process in the project: %v, want busy", p, err)
		}
	}
	cmd.Process.Kill()
	cmd.Wait()
	if l, err := lockGeminiCLI(ctx, main, geminiLog{}, format.LockParams{Wait: 100 * time.Millisecond}); err != nil || l != (format.Unlocked{}) {
		t.Errorf("after the process ended: %v %v", l, err)
	}
}

// A rule root that is a symlink named chats stands for the directory it points to: the
// project's .project_root is found beside the real chats directory.
func TestGeminiSymlinkedChats(t *testing.T) {
	_, chats := gemProject(t, "/tmp/demo/p")
	link := filepath.Join(t.TempDir(), "chats")
	if err := os.Symlink(chats, link); err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(link, gemName)
	if v := gemInspect(p, []byte(gemMeta(gemID, gemHash("/elsewhere"), "main")+gemUser)); v.Kind != format.KindSchema {
		t.Errorf("hash mismatch through the link: %s", v)
	}
	if got := rebuildHeader(geminiLog{}, p, []byte(gemUser+`{"$set":{"sessionId":"`+gemID+`"}}`+"\n")); got == nil {
		t.Error("no header rebuilt through the link")
	}
}

// geminiRestoreHeld is Restore as it read the copy held whole (format.Split): the reference
// the streamed reading keeps to.
func geminiRestoreHeld(lastGood []byte, now time.Time) bool {
	var r geminiReplay
	var newest time.Time
	for _, l := range format.Split(lastGood, geminiLog{}) {
		if l.Val == nil {
			continue
		}
		for _, lu := range []*jsonv.Value{l.Val.Get("lastUpdated"), l.Val.Get("$set").Get("lastUpdated")} {
			if t, err := time.Parse(time.RFC3339Nano, strOf(lu)); err == nil && t.After(newest) {
				newest = t
			}
		}
		r.apply(l.Val, nil)
	}
	return r.resumable() && !newest.IsZero() && !newest.Before(now.Add(-geminiMaxAge))
}

// Restore reads the copy streaming, lines over the line window as their skeletons, and says
// what the held reading says: of every sample chat, each cut at random places and with lines
// dropped, at times around its age limit.
func TestGeminiRestoreStreamedAsHeld(t *testing.T) {
	files, _ := filepath.Glob(gemSamples + "*/home/.gemini/tmp/*/chats/*.jsonl")
	if len(files) < 5 {
		t.Fatalf("%d sample chats", len(files))
	}
	rng := rand.New(rand.NewPCG(9, 3))
	last := time.Date(2026, 11, 22, 21, 42, 53, 594e6, time.UTC)
	yes := 0
	for _, f := range files {
		data, _ := os.ReadFile(f)
		for k := range 12 {
			chat := data
			switch k % 3 {
			case 1:
				chat = chat[:rng.IntN(len(chat)+1)]
			case 2:
				lines := bytes.SplitAfter(chat, []byte("\n"))
				i := rng.IntN(len(lines))
				chat = bytes.Join(append(lines[:i:i], lines[i+1:]...), nil)
			}
			now := last.Add(time.Duration(rng.IntN(62)-1) * 24 * time.Hour)
			want := geminiRestoreHeld(chat, now)
			if want {
				yes++
			}
			for _, w := range []int{0, 1, 64, 700} {
				restore := func() {}
				if w > 0 {
					restore = format.SetLineWindow(w)
				}
				got := (geminiLog{}).Restore(bytes.NewReader(chat), int64(len(chat)), now)
				restore()
				if got != want {
					t.Fatalf("%s (%d bytes), window %d, at %v: %v, held %v", f, len(chat), w, now, got, want)
				}
			}
		}
	}
	if yes == 0 {
		t.Fatal("no chat was restorable: the test compares nothing")
	}
}
