package heal

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/sessionmedic/sessionmedic/heal/format"
)

// holdApps: the presets whose logs are judged record by record (append-only or not), and
// the sample directory of each.
var holdApps = []struct{ preset, dir string }{
	{"claude-code", "claude-code"}, {"codex", "codex"}, {"gemini-cli", "gemini-cli"},
	{"copilot-cli", "copilot-cli"}, {"pi", "pi"}, {"qwen-code", "qwen-code"},
	{"openclaw", "openclaw"}, {"nanobot", "nanobot"},
}

// holdRun checks, heals and checks again the file at rel of a copy of the sample tree src
// under a daemon's engine (not one-shot) whose logs over hold bytes are judged streaming,
// with the last-good copy lastGood planted first when set. It returns what an operator and
// the app would see: the reports, the file and its last-good copy after.
func holdRun(t *testing.T, preset, src, rel string, hold int64, lastGood func([]byte) []byte) string {
	t.Helper()
	e, root := bigEngine(t, 0)
	e.holdThreshold = hold
	e.findWriters = nil // no other process writes the copy: not the /proc walk of every heal
	copyTree(t, src, root)
	p := filepath.Join(root, rel)
	data, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	if lastGood != nil {
		if err := e.LastGood.Put(p, lastGood(data)); err != nil {
			t.Fatal(err)
		}
	}
	tg := Target{Path: p, Rule: appRule(t, preset, root)}
	var out strings.Builder
	rep := func(r Report) {
		fmt.Fprintf(&out, "%s %s@%d %q %q | %s %s -%d/%d %q %q\n", r.Verdict, r.Kind, r.Offset, r.Detail, r.Warnings,
			r.Action, r.Strategy, r.LostBytes, r.LostRecords, r.Reason, r.Tried)
	}
	rep(e.Check(tg))
	rep(e.Heal(context.Background(), tg, true))
	rep(e.Heal(context.Background(), tg, false))
	rep(e.Heal(context.Background(), tg, false))
	after, _ := os.ReadFile(p)
	fmt.Fprintf(&out, "file %q\nlast-good %q\n", after, e.LastGood.Load(p))
	return strings.ReplaceAll(out.String(), root, "ROOT")
}

// TestLogsJudgedStreamingAsHeld: a log judged streaming (every one over one byte) gets the
// reports, heal, file and last-good copy it gets judged on its bytes held whole, for every
// session file of every sample of the apps whose checklist runs record by record, with no
// last-good copy, with one of the same bytes, and with a longer one (the strict
// line-aligned prefix check).
func TestLogsJudgedStreamingAsHeld(t *testing.T) {
	copies := map[string]func([]byte) []byte{
		"no copy":   nil,
		"same copy": func(b []byte) []byte { return b },
		"longer copy": func(b []byte) []byte {
			if i := bytes.IndexByte(b, '\n'); i >= 0 && bytes.HasSuffix(b, []byte("\n")) {
				return append(append([]byte{}, b...), b[:i+1]...)
			}
			return append(append([]byte{}, b...), "{}\n"...)
		},
	}
	var n atomic.Int64
	// The files in parallel (a heal's time is mostly its fsyncs), all done before the count.
	t.Run("files", func(t *testing.T) {
		for _, app := range holdApps {
			cases, _ := os.ReadDir(filepath.Join(samples, app.dir))
			for _, c := range cases {
				src := filepath.Join(samples, app.dir, c.Name())
				if !c.IsDir() {
					continue
				}
				filepath.Walk(src, func(p string, fi os.FileInfo, err error) error {
					if err != nil || !fi.Mode().IsRegular() || !strings.HasSuffix(p, ".jsonl") {
						return nil
					}
					rel, _ := filepath.Rel(src, p)
					t.Run(app.dir+"/"+c.Name()+"/"+rel, func(t *testing.T) {
						t.Parallel()
						for name, lg := range copies {
							held := holdRun(t, app.preset, src, rel, 1<<40, lg)
							streamed := holdRun(t, app.preset, src, rel, 1, lg)
							if held != streamed {
								t.Errorf("%s %s, %s:\nheld:\n%s\nstreamed:\n%s", app.dir, rel, name, held, streamed)
							}
							n.Add(1)
						}
					})
					return nil
				})
			}
		}
	})
	if n := n.Load(); n < 100 {
		t.Fatalf("only %d runs: the samples are not where the test looks", n)
	}
}

// TestMidSizeTranscriptStreamedKeepsItsCopy: a 3 MB Claude transcript (over holdLimit) is
// judged streaming; the daemon's heal of it keeps a last-good copy of its bytes, and an
// append to it is then judged from the appended bytes alone.
func TestMidSizeTranscriptStreamedKeepsItsCopy(t *testing.T) {
	e, root := bigEngine(t, 0)
	cc := codingApps[0]
	sid := strings.TrimSuffix(cc.name, ".jsonl")
	p := filepath.Join(root, "projects", "-p", cc.name)
	os.MkdirAll(filepath.Dir(p), 0o755)
	rec := func(i int) string {
		return fmt.Sprintf(`{"parentUuid":null,"type":"user","message":{"role":"user","content":"line %d %s"},"uuid":"u%d","sessionId":"%s"}`+"\n", i, strings.Repeat("x\\n", 100), i, sid)
	}
	var b []byte
	for i := 0; len(b) < 3<<20; i++ {
		b = append(b, rec(i)...)
	}
	os.WriteFile(p, b, 0o600)
	tg := Target{Path: p, Rule: appRule(t, "claude-code", root)}
	e0, _ := bigEngine(t, 0) // an engine of its own: an inspection primes the incremental pass
	if in := e0.inspect(tg); in.verdict.Status != Healthy || in.data != nil || !in.copyFrom {
		t.Fatalf("3 MB transcript: %+v, held %d bytes, copied from the file %v", in.verdict, len(in.data), in.copyFrom)
	}
	if r := e.Heal(context.Background(), tg, false); r.Verdict != Healthy || r.Action != ActionNone {
		t.Fatalf("heal of a healthy transcript: %+v", r)
	}
	if got := e.LastGood.Load(p); !bytes.Equal(got, b) {
		t.Fatalf("last-good copy: %d bytes, want the file's %d", len(got), len(b))
	}
	appendTo(t, p, []byte(rec(-1)))
	inc0, _ := e.IncrementalStats()
	if r := e.Check(tg); r.Verdict != Healthy {
		t.Fatalf("after an append: %+v", r)
	}
	if inc, _ := e.IncrementalStats(); inc != inc0+1 {
		t.Fatal("the append was not judged from the appended bytes alone")
	}
	// Cut back to a strict line-aligned prefix of that copy: judged whole against it.
	os.WriteFile(p, b[:bytes.LastIndexByte(b[:len(b)/2], '\n')+1], 0o600)
	if r := e.Check(tg); r.Verdict != Damaged || r.Kind != format.KindTruncated {
		t.Fatalf("a strict prefix of the last-good copy: %+v", r)
	}
}
