package apps

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/sessionmedic/sessionmedic/heal/format"
	"github.com/sessionmedic/sessionmedic/heal/jsonv"
)

// FuzzValidRecordPaths: a record judgeRecords has already validated, given to a checklist's
// Valid entry (it is not validated again), gets the finding the checklist's own entry gives
// it: OpenClaw's transcript record problem, Codex's sequence (findings, end and warnings).
func FuzzValidRecordPaths(f *testing.F) {
	for _, glob := range []string{"../testdata/samples/codex/*/*/*/*/*/*/*.jsonl", "../testdata/samples/codex/*/*/*/*/*/*/*/*.jsonl",
		"../testdata/samples/openclaw/*/state/agents/*/sessions/*.jsonl"} {
		files, _ := filepath.Glob(glob)
		for _, p := range files {
			if b, err := os.ReadFile(p); err == nil {
				f.Add(b)
			}
		}
	}
	f.Add([]byte(`{"type":"session","id":"s"}` + "\n" + `{"type":"message","id":"\u0031","type":3}` + "\n" + `{"id":"x"}` + "\n"))
	f.Fuzz(func(t *testing.T, b []byte) {
		if len(b) > 1<<16 {
			return
		}
		oc := openclawTranscript{}
		cx := codexLog{}
		got := cx.NewSequence("/x/sessions/2026/11/22/rollout-2026-11-22T21-46-17-01a20539-677f-7710-87e4-54a740761238.jsonl").(*codexSequence)
		want := cx.NewSequence("/x/sessions/2026/11/22/rollout-2026-11-22T21-46-17-01a20539-677f-7710-87e4-54a740761238.jsonl").(*codexSequence)
		got2 := cx.NewSequence("/x/sessions/2026/11/22/rollout-2026-11-22T21-46-17-01a20539-677f-7710-87e4-54a740761238.jsonl").(*codexSequence) // fed by Record alone
		for i, rec := range bytes.Split(b, []byte("\n")) {
			if jsonv.Valid(rec, jsonv.Dialect{}) == nil {
				if g, w := oc.RecordProblemValid(rec, i == 0), oc.RecordProblem(rec, i == 0); g != w {
					t.Fatalf("openclaw record %q: %q, RecordProblem %q", rec, g, w)
				}
			}
			var g string
			if jsonv.Valid(rec, codexDialect) == nil {
				g = got.RecordValid(rec)
			} else {
				g = got.Record(rec)
			}
			if w := got2.Record(rec); g != w {
				t.Fatalf("codex record %q: %q, Record %q", rec, g, w)
			}
			// The whole tree, three levels down, says the same as the members built.
			w := ""
			if v, err := jsonv.ParseDepth(rec, codexDialect, 3); err != nil {
				w = err.Error()
			} else {
				w = want.record(v)
			}
			if g != w {
				t.Fatalf("codex record %q: %q, the whole tree says %q", rec, g, w)
			}
		}
		if g, w := got.End(), want.End(); g != w {
			t.Fatalf("codex End %q, want %q", g, w)
		}
		gw, _ := format.Sequence(got).(format.SequenceWarner)
		ww, _ := format.Sequence(want).(format.SequenceWarner)
		if gw != nil && strings.Join(gw.Warnings(), "|") != strings.Join(ww.Warnings(), "|") {
			t.Fatalf("codex warnings %q, want %q", gw.Warnings(), ww.Warnings())
		}
	})
}
