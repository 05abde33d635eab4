package apps

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/sessionmedic/sessionmedic/heal/format"
)

// gemBenchChat writes a chat of about size bytes as smbench's apps workload writes one (the
// metadata record, then messages each followed by a $set of lastUpdated; texts of prose with
// newlines, quotes and non-ASCII words), its last line torn, in its project's layout. It
// returns the file's path, its bytes and the healthy bytes before the torn line.
func gemBenchChat(b *testing.B, size int) (path string, damaged, kept []byte) {
	b.Helper()
	root := b.TempDir()
	chats := filepath.Join(root, "tmp", "proj", "chats")
	if err := os.MkdirAll(chats, 0o755); err != nil {
		b.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(root, "tmp", "proj", ".project_root"), []byte("/tmp/demo/proj"), 0o644); err != nil {
		b.Fatal(err)
	}
	words := strings.Fields(`the a to of and is in that it for you this with on be are as not we can file
		session config value error result function return should will if when then use run test
		check need let me look at your code now here update fix change line café → 😀 “quoted” 日本語の`)
	rng := rand.New(rand.NewPCG(24, 1))
	var buf bytes.Buffer
	buf.WriteString(gemMeta(gemID, gemHash("/tmp/demo/proj"), "main"))
	for i := 0; buf.Len() < size; i++ {
		var sb strings.Builder
		for k := 3 + rng.IntN(20+i%200); k > 0; k-- {
			sb.WriteString(words[rng.IntN(len(words))])
			if rng.IntN(40) == 0 {
				sb.WriteString(".\n\n")
			} else {
				sb.WriteString(" ")
			}
		}
		text, _ := json.Marshal(sb.String())
		if i%2 == 0 {
			fmt.Fprintf(&buf, `{"id":"%08x-0000-4000-8000-000000000000","timestamp":"2026-11-22T21:41:58.581Z","type":"user","content":[{"text":%s}]}`+"\n", i, text)
		} else {
			fmt.Fprintf(&buf, `{"id":"%08x-0000-4000-8000-000000000000","timestamp":"2026-11-22T21:41:58.658Z","type":"gemini","content":%s,"thoughts":[],"model":"gemini-3.1-pro-preview"}`+"\n", i, text)
		}
		buf.WriteString(`{"$set":{"lastUpdated":"2026-11-22T21:41:58.658Z"}}` + "\n")
	}
	data := buf.Bytes()
	last := bytes.LastIndexByte(data[:len(data)-1], '\n') + 1
	damaged, kept = data[:last+(len(data)-last)/2], data[:last]
	path = filepath.Join(chats, gemName)
	if err := os.WriteFile(path, damaged, 0o600); err != nil {
		b.Fatal(err)
	}
	return path, damaged, kept
}

// The checklist of a 32 MB chat with a torn last line, as check and heal run it: streamed in
// blocks read ahead on several CPUs (the batches), record by record (RecordValid), and the
// salvage's FinishesAsIs.
func BenchmarkGeminiChat(b *testing.B) {
	path, damaged, kept := gemBenchChat(b, 32<<20)
	b.Run("stream", func(b *testing.B) {
		b.SetBytes(int64(len(damaged)))
		for b.Loop() {
			if v, _, err := format.StreamInspect(path, geminiLog{}); err != nil || v.Kind != format.KindTruncated {
				b.Fatal(v, err)
			}
		}
	})
	b.Run("records", func(b *testing.B) {
		b.SetBytes(int64(len(kept)))
		for b.Loop() {
			if v := format.StreamLines(bufio.NewReader(bytes.NewReader(kept)), geminiLog{}); v.Status != format.Healthy {
				b.Fatal(v)
			}
		}
	})
	b.Run("finishes", func(b *testing.B) {
		b.SetBytes(int64(len(kept)))
		for b.Loop() {
			if ok, err := (geminiLog{}).FinishesAsIs(path, bytes.NewReader(damaged), int64(len(damaged)), bytes.NewReader(kept), int64(len(kept))); !ok || err != nil {
				b.Fatal(ok, err)
			}
		}
	})
}
