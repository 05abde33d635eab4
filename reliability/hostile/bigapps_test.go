//go:build linux

package hostile

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// appRSSLimit bounds the peak RSS of a check or a heal of one app file of any size: 64 MiB
// above the process's own ~12 MiB (DESIGN §10), with room for the collector's slack.
const appRSSLimit = 96 << 20

// appFile writes, at p, about size bytes of an app's file whose every record (message,
// element) is rec(i), between head and tail, and returns the bytes it wrote last (the tail).
func appFile(t *testing.T, p string, size int64, head string, rec func(i int) string, sep, tail string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	f, err := os.Create(p)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	w := bufio.NewWriterSize(f, 1<<20)
	n := int64(len(head))
	w.WriteString(head)
	for i := 0; n < size; i++ {
		if i > 0 {
			w.WriteString(sep)
			n += int64(len(sep))
		}
		r := rec(i)
		w.WriteString(r)
		n += int64(len(r))
	}
	w.WriteString(tail)
	if err := w.Flush(); err != nil {
		t.Fatal(err)
	}
}

// text is a message's content: prose with escapes and multi-byte characters.
func text(i int) string {
	return strings.Repeat(`word \"quoted\" línea\n 中文 `, 10+i%40)
}

// TestHugeAppFiles: a damaged 128 MB file of each app whose checklist reads more than lines
// — a CoPaw and a PraisonAI session document with another writer's bytes after them, a
// Gemini CLI chat and a nanobot session with a torn last line — is checked and healed by the
// real binary within appRSSLimit, and healed to the file before the damage.
func TestHugeAppFiles(t *testing.T) {
	const size = 128 << 20
	type appCase struct {
		preset, rel string
		write       func(t *testing.T, p string) (healthy []byte)
		kind        string
	}
	doc := func(head string, rec func(int) string, sep, tail, garbage string) func(t *testing.T, p string) []byte {
		return func(t *testing.T, p string) []byte {
			appFile(t, p, size, head, rec, sep, tail)
			f, err := os.OpenFile(p, os.O_WRONLY|os.O_APPEND, 0)
			if err != nil {
				t.Fatal(err)
			}
			defer f.Close()
			st, _ := f.Stat()
			f.WriteString(garbage)
			return []byte(fmt.Sprint(st.Size())) // the healed file is the first st.Size() bytes
		}
	}
	torn := func(head string, rec func(int) string) func(t *testing.T, p string) []byte {
		return func(t *testing.T, p string) []byte {
			appFile(t, p, size, head, rec, "", "")
			f, err := os.OpenFile(p, os.O_WRONLY|os.O_APPEND, 0)
			if err != nil {
				t.Fatal(err)
			}
			defer f.Close()
			st, _ := f.Stat()
			f.WriteString(`{"id":"torn","role":"user","con`)
			return []byte(fmt.Sprint(st.Size()))
		}
	}
	cases := []appCase{
		{"copaw", "copaw/sessions/console/default_console--default.json", doc(`{"agent": {"memory": {"_compressed_summary": "", "content": [`,
			func(i int) string {
				return fmt.Sprintf(`[{"id": "m%07d", "name": "user", "role": "user", "content": "%s", "metadata": {}}, []]`, i, text(i))
			}, ", ", `]}, "name": "QwenPaw"}}`, `ion-2"}]}}`), "trailing-garbage"},
		{"praisonai", "praisonai/sessions/c86cb912-1e05-4283-90df-f0a7cc101d65.json", doc("{\n  \"session_id\": \"c86cb912-1e05-4283-90df-f0a7cc101d65\",\n  \"messages\": [",
			func(i int) string {
				return fmt.Sprintf("\n    {\n      \"role\": \"user\",\n      \"content\": \"%s\",\n      \"metadata\": {}\n    }", text(i))
			}, ",", "\n  ],\n  \"metadata\": {}\n}", "\n  }\n}"), "trailing-garbage"},
		{"gemini-cli", "home/.gemini/tmp/proj/chats/session-2026-11-22T21-40-7759d9fe.jsonl", torn(
			`{"sessionId":"7759d9fe-6f50-4824-9ae2-297b0ba46ecd","projectHash":"342670b99fa44fb66b2f3d357f6058dc84472b699facf440efe047fbfb07d363","startTime":"2026-11-22T21:40:53.398Z","lastUpdated":"2026-11-22T21:40:53.398Z","kind":"main"}`+"\n",
			func(i int) string {
				return fmt.Sprintf(`{"id":"%08x-0000-4000-8000-000000000000","timestamp":"2026-11-22T21:41:58.581Z","type":"user","content":[{"text":"%s"}]}`+"\n", i, text(i)) +
					`{"$set":{"lastUpdated":"2026-11-22T21:41:58.581Z"}}` + "\n"
			}), "truncated"},
		{"nanobot", "nanobot/sessions/cli_direct.jsonl", torn(
			`{"_type": "metadata", "key": "cli:direct", "created_at": "2026-11-21T07:42:09", "updated_at": "2026-11-21T07:42:09", "metadata": {}, "last_consolidated": 0}`+"\n",
			func(i int) string {
				return fmt.Sprintf(`{"role": "user", "content": "%s", "timestamp": "2026-11-21T07:42:09"}`+"\n", text(i))
			}), "truncated"},
	}
	figs := map[string]any{}
	for _, c := range cases {
		t.Run(c.preset, func(t *testing.T) {
			dir := t.TempDir()
			p := filepath.Join(dir, c.rel)
			keep := c.write(t, p)
			var want int64
			fmt.Sscan(string(keep), &want)
			home := filepath.Join(dir, "home")
			os.MkdirAll(filepath.Join(home, ".gemini", "tmp", "proj"), 0o755)
			os.WriteFile(filepath.Join(home, ".gemini", "tmp", "proj", ".project_root"), []byte("/tmp/demo/proj"), 0o644)
			o := runOpts{bin: plainBinary, timeout: 5 * time.Minute, home: home}
			r := sm(t, o, "check", "-json", "-preset", c.preset, p)
			reps := reports(t, r)
			if len(reps) != 1 || reps[0].Kind != c.kind {
				t.Fatalf("check: %+v, want one %s report", reps, c.kind)
			}
			h := sm(t, o, "heal", "-json", "-preset", c.preset, p)
			hr := reports(t, h)
			if len(hr) != 1 || hr[0].Action != "healed" {
				t.Fatalf("heal: %+v", hr)
			}
			t.Logf("%s: check %v, %s; heal %v, %s", c.preset, r.dur.Round(time.Millisecond), mib(r.maxRSS), h.dur.Round(time.Millisecond), mib(h.maxRSS))
			figs[c.preset] = map[string]any{"check_ms": r.dur.Milliseconds(), "check_rss_mib": float64(r.maxRSS) / (1 << 20),
				"heal_ms": h.dur.Milliseconds(), "heal_rss_mib": float64(h.maxRSS) / (1 << 20)}
			if r.maxRSS > appRSSLimit || h.maxRSS > appRSSLimit {
				t.Errorf("%s: peak RSS check %s, heal %s, over %s", c.preset, mib(r.maxRSS), mib(h.maxRSS), mib(appRSSLimit))
			}
			if st, err := os.Stat(p); err != nil || st.Size() != want {
				t.Fatalf("healed file: %v, %d bytes, want the %d before the damage", err, st.Size(), want)
			}
			f, _ := os.Open(p)
			defer f.Close()
			tail := make([]byte, 64)
			f.ReadAt(tail, want-64)
			if bytes.Contains(tail, []byte("torn")) || bytes.Contains(tail, []byte("ion-2")) {
				t.Fatalf("healed file still ends with the damage: %q", tail)
			}
		})
	}
	figure("huge-app-files", figs)
}
