package heal

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/sessionmedic/sessionmedic/heal/format"
)

// TestClaudePrefixOfItsCopyJudgedFromTheFiles: a Claude Code transcript that is a strict
// line-aligned prefix of its last-good copy is truncated unless Claude removed the missing
// tail itself (only its final assistant row, or meta records only: healthy, with the
// warning saying so) — judged from the copy's file, never loaded, whether the transcript is
// read whole or streaming, and with the tail's lines over the line window.
func TestClaudePrefixOfItsCopyJudgedFromTheFiles(t *testing.T) {
	a := streamApps[0]
	var lines [][]byte
	for _, orig := range jsonlSamples(t, a.preset, "healthy") {
		lines = bytes.SplitAfter(orig, []byte("\n"))
		break
	}
	typeOf := func(l []byte) string {
		var v struct{ Type string }
		json.Unmarshal(l, &v)
		return v.Type
	}
	// The first assistant row, the first user row after it, and a run of meta records after
	// that.
	asst, user, meta, metaN := -1, -1, -1, 0
	for i, l := range lines {
		switch tp := typeOf(l); {
		case tp == "assistant" && asst < 0:
			asst = i
		case tp == "user" && user < 0 && asst >= 0:
			user = i // a user row after a whole turn
		case tp != "" && tp != "user" && tp != "assistant" && tp != "attachment" && tp != "system" && i > user && user > 0 && meta < 0:
			meta = i
		}
	}
	for i := meta; i >= 0 && i < len(lines) && typeOf(lines[i]) != "" && !strings.Contains("user assistant attachment system", typeOf(lines[i])); i++ {
		metaN++
	}
	if asst < 0 || user < 0 || meta < 0 {
		t.Fatalf("sample lacks an assistant (%d), user (%d) or meta (%d) row", asst, user, meta)
	}
	cases := []struct {
		name       string
		file, copy int // lines
		warning    string
	}{
		{"final-assistant", asst, asst + 1, "final assistant row"},
		{"meta-only", meta, meta + metaN, "only meta records"},
		{"user", user, user + 1, ""},
		{"assistant-and-more", asst, asst + 2, ""},
	}
	for _, c := range cases {
		for _, how := range []string{"whole", "streamed", "long-lines"} {
			t.Run(c.name+"/"+how, func(t *testing.T) {
				if how == "long-lines" {
					defer format.SetLineWindow(256)()
				}
				e, root := bigEngine(t, 0)
				if how != "whole" {
					e.holdThreshold = 1
				}
				p := filepath.Join(root, a.rel)
				os.MkdirAll(filepath.Dir(p), 0o755)
				file, full := bytes.Join(lines[:c.file], nil), bytes.Join(lines[:c.copy], nil)
				if err := os.WriteFile(p, file, 0o600); err != nil {
					t.Fatal(err)
				}
				if err := e.LastGood.Put(p, full); err != nil {
					t.Fatal(err)
				}
				tg := Target{Path: p, Rule: appRule(t, a.preset, root)}
				in := e.inspect(tg)
				if in.ctx.lastGood != nil {
					t.Fatal("the copy was loaded to judge the file")
				}
				v := in.verdict
				switch {
				case c.warning == "" && (v.Status != Damaged || v.Kind != format.KindTruncated || v.Offset != int64(len(file))):
					t.Fatalf("want truncated at %d: %+v", len(file), v)
				case c.warning != "" && (v.Status != Healthy || len(v.Warnings) != 1 || !strings.Contains(v.Warnings[0], c.warning)):
					t.Fatalf("want healthy, warned %q: %+v", c.warning, v)
				}
				// As the bytes held judge it.
				held := format.Inspect(in.ctx.typ, format.File{Path: p, LastGood: full}, file)
				if held.Status != v.Status || held.Kind != v.Kind || held.Offset != v.Offset || held.Detail != v.Detail || len(held.Warnings) != len(v.Warnings) {
					t.Fatalf("from the files %+v, held %+v", v, held)
				}
				if c.warning != "" {
					return
				}
				// Healed from the copy, taken from its file (as for any copy over the
				// big-file size: here one byte), unless a line of it is over the line window
				// (then held: it cannot be counted from its file).
				e.bigThreshold = 1
				fromFile := false
				e.onStep = func(s, _ string) { fromFile = fromFile || s == "last-good-from-file" }
				if r := e.Heal(context.Background(), tg, false); r.Action != ActionHealed || r.Strategy != "last-good" || fromFile != (how != "long-lines") {
					t.Fatalf("%+v (the copy from its file: %v)", r, fromFile)
				}
				if got := read(t, p); !bytes.Equal(got, full) {
					t.Fatalf("healed to %d bytes, want the copy's %d", len(got), len(full))
				}
			})
		}
	}
}
