package main

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/sessionmedic/sessionmedic/internal/damage"
)

// bigTranscript is a transcript of the preset's app of at least size bytes, as its app lays
// records out: Claude Code's chain of user and assistant records, or OpenClaw's session
// header and messages.
func bigTranscript(preset string, size int) []byte {
	var b bytes.Buffer
	if preset == "openclaw" {
		b.WriteString(`{"type":"session","version":3,"id":"5dbda090-2ac0-44ad-b015-c3eca97cfdce","timestamp":"2026-11-21T07:58:37.464Z","cwd":"/home/app/.openclaw/workspace"}` + "\n")
	}
	parent := "null"
	for i := 0; b.Len() < size; i++ {
		role := []string{"user", "assistant"}[i%2]
		text := strings.Repeat(fmt.Sprintf("turn %d says lorem ipsum ", i), 20+i%90)
		id := fmt.Sprintf("%08x-0000-4000-8000-%012x", i, i)
		switch preset {
		case "openclaw":
			fmt.Fprintf(&b, `{"type":"message","id":%q,"parentId":%s,"timestamp":"2026-11-21T07:58:37.464Z","message":{"role":%q,"content":[{"type":"text","text":%q}],"timestamp":1795247914694}}`+"\n", id, parent, role, text)
		default:
			fmt.Fprintf(&b, `{"parentUuid":%s,"isSidechain":false,"type":%q,"message":{"role":%q,"content":[{"type":"text","text":%q}]},"uuid":%q,"timestamp":"2026-11-22T21:40:41.823Z","sessionId":"7c2e1b4a-9d3f-4e8a-b6c1-2f5a8d9e0b13"}`+"\n", parent, role, role, text, id)
		}
		parent = fmt.Sprintf("%q", id)
	}
	return b.Bytes()
}

// TestBigAppTranscriptsHealedFromTheFile: the real binary heals app transcripts over the
// size a heal plans from the file (8 MiB), read whole first (12 MB) or judged streaming
// (40 MB): a record glued to the next is split back, a torn last line cut, the result byte
// for byte the transcript before the damage, nothing reported lost that the result keeps,
// and the damaged bytes in quarantine.
func TestBigAppTranscriptsHealedFromTheFile(t *testing.T) {
	for _, c := range []struct {
		preset, rel string
		size        int
	}{
		{"claude-code", ".claude/projects/-tmp-demo/7c2e1b4a-9d3f-4e8a-b6c1-2f5a8d9e0b13.jsonl", 12e6},
		{"claude-code", ".claude/projects/-tmp-demo/7c2e1b4a-9d3f-4e8a-b6c1-2f5a8d9e0b13.jsonl", 40e6},
		{"openclaw", ".openclaw/agents/main/sessions/5dbda090-2ac0-44ad-b015-c3eca97cfdce.jsonl", 12e6},
	} {
		t.Run(fmt.Sprintf("%s/%dMB", c.preset, c.size/1e6), func(t *testing.T) {
			healthy := bigTranscript(c.preset, c.size)
			var damaged []byte
			lost := 0
			if c.preset == "claude-code" {
				damaged = damage.GlueMiddle(healthy) // split back, nothing lost
			} else {
				damaged, healthy = damage.TearLast(healthy) // cut, the torn record lost
				lost = 1
			}
			home := t.TempDir()
			path := filepath.Join(home, c.rel)
			if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(path, damaged, 0o600); err != nil {
				t.Fatal(err)
			}
			out, stderr, code := sm(t, home, "heal", "-json", "-preset", c.preset, path)
			r, ok := parseReports(t, out)[filepath.Base(path)]
			if code != 0 || !ok {
				t.Fatalf("exit %d, reports %q, stderr %s", code, out, stderr)
			}
			if r.Action != "healed" || r.Strategy != "salvage" || r.LostRecords != lost {
				t.Fatalf("%+v, want healed by salvage losing %d records", r, lost)
			}
			if got, _ := os.ReadFile(path); !bytes.Equal(got, healthy) {
				t.Fatalf("healed to %d bytes, not the %d of the transcript before the damage", len(got), len(healthy))
			}
			// A tail cut quarantines the bytes it removes (the file keeps the rest, in
			// place); any other heal, the whole damaged file.
			q, err := os.ReadFile(filepath.Join(r.Quarantine, filepath.Base(path)))
			if lost == 0 && (err != nil || !bytes.Equal(q, damaged)) {
				t.Fatalf("quarantine does not hold the damaged bytes (%v)", err)
			}
			if lost == 1 && (err != nil || !bytes.Equal(q, damaged[len(healthy):])) {
				t.Fatalf("quarantine does not hold the %d bytes cut (%d bytes, %v)", len(damaged)-len(healthy), len(q), err)
			}
			if _, _, code := sm(t, home, "check", "-preset", c.preset, path); code != 0 {
				t.Fatalf("check after the heal: exit %d", code)
			}
		})
	}
}
