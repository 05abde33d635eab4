package main

import (
	"context"
	"crypto/sha256"
	"encoding/base64"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/sessionmedic/sessionmedic/daemon"
	"github.com/sessionmedic/sessionmedic/policy"
)

// demoApp is one app's healthy session and the way the demo damages it.
type demoApp struct {
	preset, file, how string
	files             map[string]string // relative path -> content
	damage            func(root string) error
}

func pyMsg(i int, role, text string) string {
	return fmt.Sprintf(`{"role": %q, "content": %q, "timestamp": "2026-11-21T07:42:%02d.000000"}`, role, text, i)
}

func demoApps() []demoApp {
	nbKey := "telegram:42"
	nbFile := "sessions/0123456789abcdef0123456789abcdef/" + base64.RawURLEncoding.EncodeToString([]byte(nbKey)) + ".jsonl"
	nb := `{"_type": "metadata", "key": "telegram:42", "created_at": "2026-11-21T07:42:00.000000", "updated_at": "2026-11-21T07:42:04.000000", "metadata": {}, "last_consolidated": 0}` + "\n" +
		pyMsg(1, "user", "What's the capital of Japan?") + "\n" + pyMsg(2, "assistant", "Tokyo.") + "\n" +
		pyMsg(3, "user", "And its population?") + "\n" + pyMsg(4, "assistant", "About 14 million in the city proper.") + "\n"

	copawMsg := func(id, role, text string) string {
		return fmt.Sprintf(`[{"id": %q, "name": %q, "role": %q, "content": %q, "metadata": {}, "timestamp": "2026-11-21 07:42:09.662"}, []]`, id, role, role, text)
	}
	copawDoc := func(msgs ...string) string {
		return `{"agent": {"memory": {"_compressed_summary": "", "content": [` + strings.Join(msgs, ", ") + `]}, "toolkit": {"active_groups": []}, "name": "QwenPaw", "_sys_prompt": "You are QwenPaw."}}`
	}
	c1, c2, c3 := copawMsg("m1", "user", "ping"), copawMsg("m2", "assistant", "pong"), copawMsg("m3", "user", "ping again, with a longer message")
	copawShort, copawLong := copawDoc(c1, c2), copawDoc(c1, c2, c3)

	praison := "{\n  \"session_id\": \"trip\",\n  \"messages\": [\n" +
		"    {\n      \"role\": \"user\",\n      \"content\": \"Plan a trip to Kyoto\",\n      \"timestamp\": 1795246942.69,\n      \"metadata\": {}\n    },\n" +
		"    {\n      \"role\": \"assistant\",\n      \"content\": \"Day 1: Fushimi Inari at dawn.\",\n      \"timestamp\": 1795246943.1,\n      \"metadata\": {}\n    }\n  ],\n" +
		"  \"created_at\": \"2026-11-21T07:42:22.697626+00:00\",\n  \"updated_at\": \"2026-11-21T07:42:22.708288+00:00\",\n  \"agent_name\": \"Planner\",\n  \"user_id\": null,\n  \"metadata\": {}\n}"

	ovMsg := func(id, role, text string) string {
		return fmt.Sprintf(`{"id": "msg_%s", "role": %q, "parts": [{"type": "text", "text": %q}], "created_at": "2026-11-21T07:42:27.239430+00:00"}`, id, role, text)
	}
	ovSid := "workspace/viking/default/user/default/sessions/demo/"
	archived := ovMsg("a1", "user", "Remind me of the deadline") + "\n" + ovMsg("a2", "assistant", "September 30.") + "\n"
	live := ovMsg("l1", "user", "Thanks!") + "\n" + ovMsg("l2", "assistant", "Anytime.") + "\n"

	ocEntry := func(key, id string) string {
		return fmt.Sprintf("  %q: {\n    \"sessionId\": %q,\n    \"updatedAt\": 1795247856694,\n    \"chatType\": \"direct\"\n  }", key, id)
	}
	ocStore := "{\n" + ocEntry("agent:main:main", "5901a198-0e48-4246-9962-5d3c5148bce5") + ",\n" + ocEntry("agent:main:telegram:direct:42", "22b12a33-f522-4b4e-8a49-9caac0c99f8c") + "\n}"
	ocTranscript := func(id string) string {
		return fmt.Sprintf(`{"type":"session","version":3,"id":%q,"timestamp":"2026-11-21T07:58:37.462Z","cwd":"/srv"}`+"\n"+
			`{"type":"message","id":"2981c66d","parentId":null,"timestamp":"2026-11-21T07:58:37.462Z","message":{"role":"user","content":[{"type":"text","text":"hello"}]}}`+"\n", id)
	}
	ocDir := "state/agents/main/sessions/"

	// The coding CLIs: a Claude Code transcript, a Codex rollout and a Gemini chat.
	const sid = "3f1c2a9e-5b7d-4e2f-9a1b-6c8d0e2f4a6b"
	ccFile := "projects/-srv-app/" + sid + ".jsonl"
	ccChain := func(parent, typ, uuid, text, ts string) string {
		if parent != "null" {
			parent = strconv.Quote(parent)
		}
		return fmt.Sprintf(`{"parentUuid":%s,"isSidechain":false,"type":%q,"message":{"role":%q,"content":[{"type":"text","text":%q}]},"uuid":%q,"timestamp":"2026-11-22T21:40:%sZ","cwd":"/srv/app","sessionId":%q,"version":"2.1.330","gitBranch":"main"}`,
			parent, typ, typ, text, uuid, ts, sid)
	}
	ccLines := []string{
		fmt.Sprintf(`{"type":"queue-operation","operation":"enqueue","timestamp":"2026-11-22T21:40:41.800Z","sessionId":%q}`, sid),
		ccChain("null", "user", "9d1f53e3-1c2b-4f6a-8e7d-0a1b2c3d4e5f", "What does the Makefile do?", "41.823"),
		ccChain("9d1f53e3-1c2b-4f6a-8e7d-0a1b2c3d4e5f", "assistant", "ff52d88d-2d3c-4a5b-9c8d-1e2f3a4b5c6d", "It builds the service and runs its tests.", "44.102"),
		ccChain("ff52d88d-2d3c-4a5b-9c8d-1e2f3a4b5c6d", "user", "5a6b7c8d-3e4f-4a1b-8c2d-2f3a4b5c6d7e", "thanks", "51.007"),
		ccChain("5a6b7c8d-3e4f-4a1b-8c2d-2f3a4b5c6d7e", "assistant", "0e1f2a3b-4c5d-4e6f-9a7b-3a4b5c6d7e8f", "You're welcome.", "52.311"),
	}
	cc := strings.Join(ccLines, "\n") + "\n"

	const thread = "01a20539-677f-7710-87e4-54a740761238"
	cxFile := "sessions/2026/11/22/rollout-2026-11-22T21-46-17-" + thread + ".jsonl"
	cxRec := func(ordinal int, typ, payload string) string {
		return fmt.Sprintf(`{"timestamp":"2026-11-22T21:46:%02d.468Z","ordinal":%d,"type":%q,"payload":%s}`, 17+ordinal, ordinal, typ, payload)
	}
	cxLines := []string{
		cxRec(0, "session_meta", fmt.Sprintf(`{"session_id":%q,"id":%q,"timestamp":"2026-11-22T21:46:17.468Z","cwd":"/srv/app","originator":"codex_exec","cli_version":"0.169.0","source":"exec","model_provider":"openai","history_mode":"paginated"}`, thread, thread)),
		cxRec(1, "turn_context", `{"cwd":"/srv/app","model":"gpt-5.5"}`),
		cxRec(2, "response_item", `{"type":"message","role":"user","content":[{"type":"input_text","text":"Add a health check"}]}`),
		cxRec(3, "response_item", `{"type":"message","role":"assistant","content":[{"type":"output_text","text":"Added /healthz."}]}`),
		cxRec(4, "event_msg", `{"type":"task_complete"}`),
	}
	cx := strings.Join(cxLines, "\n") + "\n"

	const gmID = "7759d9fe-6f50-4824-9ae2-297b0ba46ecd"
	gmFile := "tmp/app/chats/session-2026-11-22T21-40-7759d9fe.jsonl"
	hash := sha256.Sum256([]byte("/srv/app"))
	gm := fmt.Sprintf(`{"sessionId":%q,"projectHash":"%x","startTime":"2026-11-22T21:40:53.398Z","lastUpdated":"2026-11-22T21:40:53.398Z","kind":"main"}`, gmID, hash) + "\n" +
		`{"id":"a30a58ba-2c1d-4e5f-8a9b-0c1d2e3f4a5b","timestamp":"2026-11-22T21:40:53.417Z","type":"user","content":[{"text":"Summarise the changelog"}]}` + "\n" +
		`{"$set":{"lastUpdated":"2026-11-22T21:40:53.417Z"}}` + "\n" +
		`{"id":"b83b78a4-3a19-4c14-a4b9-cbb523166db0","timestamp":"2026-11-22T21:40:58.120Z","type":"gemini","content":"Three fixes and one new flag.","model":"gemini-3.1-pro-preview"}` + "\n" +
		`{"$set":{"lastUpdated":"2026-11-22T21:40:58.120Z"}}` + "\n"

	const piID = "01a20d45-b047-74a5-9793-8344620699e6"
	piFile := "--srv-app--/2026-11-24T11-16-40-647Z_" + piID + ".jsonl"
	piLines := []string{
		`{"type":"session","version":3,"id":"` + piID + `","timestamp":"2026-11-24T11:16:40.647Z","cwd":"/srv/app"}`,
		`{"type":"model_change","id":"cc67a33f","parentId":null,"timestamp":"2026-11-24T11:16:40.650Z","provider":"mock","modelId":"mock-model"}`,
		`{"type":"message","id":"729b929a","parentId":"cc67a33f","timestamp":"2026-11-24T11:16:41.002Z","message":{"role":"user","content":[{"type":"text","text":"Summarise the changelog"}],"timestamp":1795518201002}}`,
		`{"type":"message","id":"6ea95459","parentId":"729b929a","timestamp":"2026-11-24T11:16:43.517Z","message":{"role":"assistant","content":[{"type":"text","text":"Three fixes and one new flag."}],"provider":"mock","model":"mock-model","stopReason":"stop","timestamp":1795518203517}}`,
		`{"type":"message","id":"bd477c85","parentId":"6ea95459","timestamp":"2026-11-24T11:16:50.120Z","message":{"role":"user","content":[{"type":"text","text":"Which flag?"}],"timestamp":1795518210120}}`,
	}
	pi := strings.Join(piLines, "\n") + "\n"

	const qwID = "5c1e0d2a-7b3f-4e8a-9d6c-2f4b8a0e1c3d"
	qwFile := "projects/-srv-app/chats/" + qwID + ".jsonl"
	qwRec := func(uuid, parent, typ, ts, rest string) string {
		if parent != "null" {
			parent = strconv.Quote(parent)
		}
		return fmt.Sprintf(`{"uuid":%q,"parentUuid":%s,"sessionId":%q,"timestamp":"2026-11-25T03:10:%sZ","type":%q,"cwd":"/srv/app","version":"0.24.4",%s}`,
			uuid, parent, qwID, ts, typ, rest)
	}
	qwLines := []string{
		qwRec("d2095b93-8c1e-4d7a-9f3b-1a2b3c4d5e6f", "null", "user", "41.100", `"provenance":"real_user","message":{"role":"user","parts":[{"text":"What is in notes.txt?"}]}`),
		qwRec("c6738418-2d4f-4e6a-8b1c-3d4e5f6a7b8c", "d2095b93-8c1e-4d7a-9f3b-1a2b3c4d5e6f", "assistant", "43.250", `"provenance":"assistant_output","model":"qwen3-coder","message":{"role":"model","parts":[{"functionCall":{"id":"call_1","name":"read_file","args":{"file_path":"/srv/app/notes.txt"}}}]}`),
		qwRec("be695539-fabc-48c0-b605-1ef6fc330c90", "c6738418-2d4f-4e6a-8b1c-3d4e5f6a7b8c", "tool_result", "43.410", `"provenance":"tool_result","message":{"role":"user","parts":[{"functionResponse":{"id":"call_1","name":"read_file","response":{"output":"ship on Friday\nthen rest\n"}}}]}`),
		qwRec("b0560aa6-4e5f-4a6b-8c7d-5e6f7a8b9c0d", "be695539-fabc-48c0-b605-1ef6fc330c90", "assistant", "45.020", `"provenance":"assistant_output","model":"qwen3-coder","message":{"role":"model","parts":[{"text":"It says to ship on Friday, then rest."}]}`),
	}
	qw := strings.Join(qwLines, "\n") + "\n"

	const cpID = "568f5a60-7fc4-4a49-a663-724cd54a5984"
	cpFile := "session-state/" + cpID + "/events.jsonl"
	cpLines := []string{
		`{"type":"session.start","data":{"sessionId":"` + cpID + `","version":1,"producer":"copilot-agent","copilotVersion":"1.0.102","startTime":"2026-11-25T03:11:26.010Z","selectedModel":"gpt-5","contextTier":null,"context":{"cwd":"/srv/app"},"alreadyInUse":false,"remoteSteerable":false},"id":"9275065e-3a4d-44dd-8be9-150df127f310","timestamp":"2026-11-25T03:11:26.061Z","parentId":null}`,
		`{"type":"user.message","data":{"content":"Summarise the changelog","messageId":"70ef97c0-6f11-4349-817d-c79a299ac223","delivery":"idle","interactionId":"28ba648f-6367-4145-b815-df9b6f785163","turnId":"0"},"id":"750e4b5c-803d-45de-a48d-f00fc2cacfa7","timestamp":"2026-11-25T03:11:26.179Z","parentId":"9275065e-3a4d-44dd-8be9-150df127f310"}`,
		`{"type":"assistant.turn_start","data":{"turnId":"0","interactionId":"28ba648f-6367-4145-b815-df9b6f785163"},"id":"81c6c8db-7b1c-4829-bdd0-e01052c0da6c","timestamp":"2026-11-25T03:11:26.194Z","parentId":"750e4b5c-803d-45de-a48d-f00fc2cacfa7"}`,
		`{"type":"assistant.message","data":{"messageId":"ac52af5d-99a4-4bb9-9e49-12c7fcdd2a9f","content":"Three fixes and one new flag.","toolRequests":[],"interactionId":"28ba648f-6367-4145-b815-df9b6f785163","turnId":"0"},"id":"b257f839-52c5-472e-b5c4-5e1a857875e7","timestamp":"2026-11-25T03:11:26.301Z","parentId":"81c6c8db-7b1c-4829-bdd0-e01052c0da6c"}`,
		`{"type":"assistant.turn_end","data":{"turnId":"0"},"id":"333fafa7-9677-432b-a02f-a23efe6e6a0d","timestamp":"2026-11-25T03:11:26.333Z","parentId":"b257f839-52c5-472e-b5c4-5e1a857875e7"}`,
	}
	cp := strings.Join(cpLines, "\n") + "\n"

	return []demoApp{
		{preset: "copaw", file: "sessions/console/default_console--default.json", how: "two writers race: a shorter save lands over a longer one",
			files: map[string]string{"sessions/console/default_console--default.json": copawShort},
			damage: func(root string) error {
				return os.WriteFile(filepath.Join(root, "sessions/console/default_console--default.json"), []byte(copawShort+copawLong[len(copawShort):]), 0o644)
			}},
		{preset: "nanobot", file: nbFile, how: "a crash mid-write tears the last line",
			files: map[string]string{nbFile: nb, "sessions/0123456789abcdef0123456789abcdef/.workspace": "/srv/workspace\n"},
			damage: func(root string) error {
				return os.WriteFile(filepath.Join(root, nbFile), []byte(nb[:len(nb)-20]), 0o644)
			}},
		{preset: "praisonai", file: "sessions/trip.json", how: "a crash mid-write truncates the file",
			files: map[string]string{"sessions/trip.json": praison, "sessions/trip.json.lock": ""},
			damage: func(root string) error {
				return os.WriteFile(filepath.Join(root, "sessions/trip.json"), []byte(praison[:len(praison)/2]), 0o600)
			}},
		{preset: "openviking", file: ovSid + "messages.jsonl", how: "a commit's clear is lost: archived messages are live again",
			files: map[string]string{
				ovSid + "messages.jsonl":                     live,
				ovSid + ".meta.json":                         `{"session_id": "demo", "message_count": 2, "commit_count": 1}`,
				ovSid + "history/archive_001/messages.jsonl": archived,
				ovSid + "history/archive_001/.meta.json":     `{"phase1": {"status": "ready", "retained_message_ids": ["msg_l1", "msg_l2"]}}`,
				ovSid + "history/archive_001/.done":          `{"starting_message_id": "msg_a1", "ending_message_id": "msg_a2"}`,
			},
			damage: func(root string) error {
				return os.WriteFile(filepath.Join(root, ovSid+"messages.jsonl"), []byte(archived+live), 0o644)
			}},
		{preset: "openclaw", file: ocDir + "sessions.json", how: "a rotation renames the store away and dies",
			files: map[string]string{ocDir + "sessions.json": ocStore,
				ocDir + "5901a198-0e48-4246-9962-5d3c5148bce5.jsonl": ocTranscript("5901a198-0e48-4246-9962-5d3c5148bce5"),
				ocDir + "22b12a33-f522-4b4e-8a49-9caac0c99f8c.jsonl": ocTranscript("22b12a33-f522-4b4e-8a49-9caac0c99f8c")},
			damage: func(root string) error {
				return os.Rename(filepath.Join(root, ocDir+"sessions.json"), filepath.Join(root, fmt.Sprintf("%ssessions.json.bak.%d", ocDir, time.Now().UnixMilli())))
			}},
		{preset: "claude-code", file: ccFile, how: "two batches race: a record lands glued to the one before (Claude drops both)",
			files: map[string]string{ccFile: cc},
			damage: func(root string) error {
				glued := strings.Join(ccLines[:3], "\n") + "\n" + ccLines[3] + strings.Join(ccLines[4:], "\n") + "\n"
				return os.WriteFile(filepath.Join(root, ccFile), []byte(glued), 0o600)
			}},
		{preset: "codex", file: cxFile, how: "an upgrade writes a last record without an ordinal (Codex refuses to resume)",
			files: map[string]string{cxFile: cx, "thread-writer-locks/.coordination.lock": ""},
			damage: func(root string) error {
				return os.WriteFile(filepath.Join(root, cxFile), []byte(strings.Replace(cx, `"ordinal":4,`, "", 1)), 0o644)
			}},
		{preset: "gemini-cli", file: gmFile, how: "a crash tears the first line (Gemini's next start would delete the chat)",
			files: map[string]string{gmFile: gm, "tmp/app/.project_root": "/srv/app"},
			damage: func(root string) error {
				return os.WriteFile(filepath.Join(root, gmFile), []byte(gm[:100]+"\n"+gm[strings.IndexByte(gm, '\n')+1:]), 0o644)
			}},
		{preset: "pi", file: piFile, how: "an entry lands glued to the one before (pi would drop it and everything before it)",
			files: map[string]string{piFile: pi},
			damage: func(root string) error {
				glued := strings.Join(piLines[:3], "\n") + "\n" + piLines[3] + strings.Join(piLines[4:], "\n") + "\n"
				return os.WriteFile(filepath.Join(root, piFile), []byte(glued), 0o644)
			}},
		{preset: "copilot-cli", file: cpFile, how: "two writers race: an event lands glued to the one before (Copilot would drop both, then rewrite the file)",
			files: map[string]string{cpFile: cp, "session-state/" + cpID + "/workspace.yaml": "id: " + cpID + "\ncwd: /srv/app\ncreated_at: 2026-11-25T03:11:26.010Z\n"},
			damage: func(root string) error {
				glued := strings.Join(cpLines[:3], "\n") + "\n" + cpLines[3] + strings.Join(cpLines[4:], "\n") + "\n"
				return os.WriteFile(filepath.Join(root, cpFile), []byte(glued), 0o600)
			}},
		{preset: "qwen-code", file: qwFile, how: "a tool's output lands with a raw newline (Qwen would drop the record and everything before it)",
			files: map[string]string{qwFile: qw},
			damage: func(root string) error {
				return os.WriteFile(filepath.Join(root, qwFile), []byte(strings.Replace(qw, `Friday\nthen`, "Friday\nthen", 1)), 0o644)
			}},
	}
}

// demoDir is a new temp dir, or keep (made absolute, created if missing), which must be empty.
func demoDir(keep string) (string, error) {
	if keep == "" {
		return os.MkdirTemp("", "sessionmedic-demo-")
	}
	dir, err := filepath.Abs(keep)
	if err != nil {
		return "", err
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", argError{fmt.Errorf("-keep: %w", err)}
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		return "", argError{fmt.Errorf("-keep: %w", err)}
	}
	if len(entries) > 0 {
		return "", argError{fmt.Errorf("-keep: %s is not empty", dir)}
	}
	return dir, nil
}

// eventTap passes the daemon's log records to the demo as they happen.
type eventTap struct {
	ch    chan slog.Record
	attrs []slog.Attr
}

func (h *eventTap) Enabled(context.Context, slog.Level) bool { return true }
func (h *eventTap) Handle(_ context.Context, r slog.Record) error {
	r = r.Clone()
	r.AddAttrs(h.attrs...)
	select {
	case h.ch <- r:
	default:
	}
	return nil
}
func (h *eventTap) WithAttrs(as []slog.Attr) slog.Handler {
	return &eventTap{ch: h.ch, attrs: append(append([]slog.Attr{}, h.attrs...), as...)}
}
func (h *eventTap) WithGroup(string) slog.Handler { return h }

func attr(r slog.Record, key string) string {
	var v string
	r.Attrs(func(a slog.Attr) bool {
		if a.Key == key {
			v = a.Value.String()
			return false
		}
		return true
	})
	return v
}

// cmdDemo lays out healthy sessions of every app in a temp dir (or -keep DIR, left in place),
// runs the daemon on them, damages one file of each app the way that app damages it, and
// shows each heal.
func cmdDemo(ctx context.Context, args []string, stdout, stderr io.Writer) (int, error) {
	fs := flag.NewFlagSet("demo", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	keep := fs.String("keep", "", "leave the demonstration tree in `DIR` (created if missing; must be empty)")
	pos, err := parseInterleaved(fs, args)
	if err != nil {
		return 0, err
	}
	if len(pos) > 0 {
		return 0, usageError{"demo takes no arguments"}
	}
	dir, err := demoDir(*keep)
	if err != nil {
		return 0, err
	}
	if *keep == "" {
		defer os.RemoveAll(dir)
	} else {
		defer fmt.Fprintf(stdout, "the demonstration tree is kept in %s\n", dir)
	}
	apps := demoApps()
	var rules []policy.Rule
	for _, a := range apps {
		root := filepath.Join(dir, a.preset)
		for rel, content := range a.files {
			p := filepath.Join(root, rel)
			if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
				return 0, err
			}
			if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
				return 0, err
			}
		}
		r, _ := policy.PresetRule(a.preset, policy.SystemEnv())
		r.Name, r.Paths, r.Settle, r.MaxWait = a.preset, []string{root}, 300*time.Millisecond, 3*time.Second
		rules = append(rules, r)
	}
	cfg := &policy.Config{Version: 1, StateDir: filepath.Join(dir, "state"), Rules: rules, Source: "demo"}
	fmt.Fprintf(stdout, "sessionmedic demo in %s: healthy sessions of %d apps, settle 300ms\n", dir, len(apps))

	tap := &eventTap{ch: make(chan slog.Record, 256)}
	ready := make(chan struct{})
	dctx, cancel := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() {
		done <- daemon.Run(dctx, daemon.Options{Load: func() (*policy.Config, []string, error) { return cfg, nil, nil },
			Source: "demo", Log: slog.New(tap), Ready: ready, Version: buildVersion(), Notify: func(string) error { return nil }})
	}()
	stop := func() error { cancel(); return <-done }
	select {
	case <-ready:
	case err := <-done:
		return 0, err
	case <-time.After(30 * time.Second):
		stop()
		return 0, fmt.Errorf("demo: the daemon did not finish its first scan")
	}
	fmt.Fprintln(stdout, "first scan finished: every file healthy, last-good copies kept")
	healed, lost := 0, 0
	for _, a := range apps {
		path := filepath.Join(dir, a.preset, a.file)
		want, _ := os.ReadFile(path)
		fmt.Fprintf(stdout, "\n%-11s %s\n", a.preset, a.how)
		start := time.Now()
		if err := a.damage(filepath.Join(dir, a.preset)); err != nil {
			stop()
			return 0, err
		}
		deadline := time.After(15 * time.Second)
	wait:
		for {
			select {
			case r := <-tap.ch:
				if r.Message == "file.heal_refused" || (r.Message == "file.healed" && attr(r, "path") == path) {
					if r.Message == "file.heal_refused" {
						fmt.Fprintf(stdout, "            refused: %s\n", attr(r, "reason"))
						break wait
					}
					got, _ := os.ReadFile(path)
					same := "identical to the healthy original"
					if string(got) != string(want) {
						same = "differs from the healthy original"
					}
					kept := "the damaged bytes are in quarantine"
					if attr(r, "quarantine") == "" {
						kept = "nothing to quarantine: the file was gone"
					}
					fmt.Fprintf(stdout, "            damaged: %s -> healed with %s in %v; %s; %s\n",
						attr(r, "kind"), attr(r, "strategy"), time.Since(start).Round(time.Millisecond), same, kept)
					if same == "identical to the healthy original" {
						healed++
					}
					var n int
					fmt.Sscan(attr(r, "lost_records"), &n)
					lost += n
					break wait
				}
			case <-deadline:
				fmt.Fprintln(stdout, "            not healed within 15s")
				break wait
			case err := <-done:
				return 0, fmt.Errorf("demo: the daemon stopped: %v", err)
			}
		}
	}
	if err := stop(); err != nil {
		return 0, err
	}
	fmt.Fprintf(stdout, "\nsummary: %d of %d damaged sessions healed back to their healthy bytes, %d records lost\n", healed, len(apps), lost)
	if healed != len(apps) {
		return exitDamage, nil
	}
	return exitOK, nil
}
