package apps

import (
	"bytes"
	"fmt"
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
		// OpenClaw: the sequence, fed by RecordValid or Record or in batches, says what
		// RecordProblem says of each record, the first one the header, up to the first finding.
		ocValid, ocRecord := oc.NewSequence("").(format.ValidSequence), oc.NewSequence("")
		var ocRecs [][]byte
		for _, rec := range bytes.Split(b, []byte("\n")) {
			if jsonv.Valid(rec, jsonv.Dialect{}) != nil {
				continue // a syntax fault: the walk reports it, whatever the checklist says
			}
			first := len(ocRecs) == 0
			ocRecs = append(ocRecs, rec)
			g, g2, w := ocValid.RecordValid(rec), ocRecord.Record(rec), oc.RecordProblem(rec, first)
			if g != w || g2 != w {
				t.Fatalf("openclaw record %q (first %v): RecordValid %q, Record %q, RecordProblem %q", rec, first, g, g2, w)
			}
			if w != "" {
				break
			}
		}
		ocCut, ocGiven := batchCuts(b)
		checkBatches(t, func() format.Sequence { return oc.NewSequence("") }, ocRecs, ocCut, ocGiven)
		for _, rec := range bytes.Split(b, []byte("\n")) {
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
		// As judgeRecords fed it before the sequence applied RecordProblem's checklist itself:
		// RecordProblem first, then the sequence's own checks (codexRefSequence, the code of
		// that time), the walk ending at the first problem.
		merged := cx.NewSequence("/x/sessions/2026/11/22/rollout-2026-11-22T21-46-17-01a20539-677f-7710-87e4-54a740761238.jsonl").(*codexSequence)
		ref := &codexRefSequence{id: merged.id}
		first, stopped := true, false
		for _, rec := range bytes.Split(b, []byte("\n")) {
			if jsonv.Valid(rec, codexDialect) != nil {
				continue // a syntax fault: the walk reports it, whatever the checklist says
			}
			g := merged.RecordValid(rec)
			w := cx.RecordProblem(rec, first)
			if w == "" {
				v, _ := jsonv.Parse(rec, codexDialect)
				w = ref.record(v)
			}
			if g != w {
				t.Fatalf("codex record %q (first %v): %q, RecordProblem then the sequence say %q", rec, first, g, w)
			}
			first = false
			if g != "" {
				stopped = true
				break
			}
		}
		if !stopped {
			if g, w := merged.End(), ref.End(); g != w {
				t.Fatalf("codex End %q, reference %q", g, w)
			}
			if g, w := strings.Join(merged.Warnings(), "|"), strings.Join(ref.Warnings(), "|"); g != w {
				t.Fatalf("codex warnings %q, reference %q", g, w)
			}
		}
		var valid [][]byte
		for _, rec := range bytes.Split(b, []byte("\n")) {
			if jsonv.Valid(rec, codexDialect) == nil {
				valid = append(valid, rec)
			}
		}
		cut, given := batchCuts(b)
		checkBatches(t, func() format.Sequence {
			return cx.NewSequence("/x/sessions/2026/11/22/rollout-2026-11-22T21-46-17-01a20539-677f-7710-87e4-54a740761238.jsonl")
		}, valid, cut, given)
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

// codexRefSequence is codexSequence's checks as they were written before it applied
// RecordProblem's checklist itself, fed whole trees: the reference FuzzValidRecordPaths holds
// the sequence to.
type codexRefSequence struct {
	id                  string
	n                   int
	untimed             int
	gaps, unnumbered    int
	paginated, lastHas  bool
	headerHas, fork     bool
	start, prev, header int64
}

func (s *codexRefSequence) record(v *jsonv.Value) string {
	s.n++
	if !isStr(v.Get("timestamp")) {
		s.untimed++
	}
	o := v.Get("ordinal")
	s.lastHas = codexOrdinal(o)
	if s.n == 1 {
		meta := v.Get("payload")
		if id := meta.Get("id"); s.id != "" && isStr(id) && id.Str != s.id {
			return fmt.Sprintf("session_meta id %q is not the file name's %s", id.Str, s.id)
		}
		s.paginated = strOf(meta.Get("history_mode")) == "paginated"
		if e := meta.Get("history_base").Get("end_ordinal_exclusive"); codexOrdinal(e) {
			s.start, s.fork = e.Int, true
		}
		if s.headerHas = s.lastHas; s.headerHas && o.Int != s.start && !(s.fork && o.Int == 0) {
			return fmt.Sprintf("session_meta has ordinal %d, want %d", o.Int, s.start)
		}
		if s.headerHas {
			s.prev = max(o.Int, s.start-1)
		}
		return ""
	}
	if o == nil {
		s.unnumbered++
		return ""
	}
	s.paginated = true
	if !s.lastHas {
		return "ordinal is not a non-negative integer"
	}
	if !s.headerHas {
		return "session_meta of a paginated rollout has no ordinal"
	}
	if o.Int <= s.prev {
		return fmt.Sprintf("ordinal %d after %d (reused or decreasing; never renumbered)", o.Int, s.prev)
	}
	if o.Int > s.prev+1 {
		s.gaps++
	}
	s.prev = o.Int
	return ""
}

func (s *codexRefSequence) Warnings() []string {
	w := codexUntimedWarning(s.untimed)
	if s.paginated && s.gaps+s.unnumbered > 0 {
		w = append(w, fmt.Sprintf("%d gap(s) in the ordinals, %d record(s) before the last without one (the app resumes the rollout)", s.gaps, s.unnumbered))
	}
	return w
}

func (s *codexRefSequence) End() string {
	switch {
	case !s.paginated || s.n == 0:
		return ""
	case !s.headerHas:
		return "session_meta of a paginated rollout has no ordinal"
	case !s.lastHas:
		return "the last record has no ordinal (the app refuses to resume)"
	}
	return ""
}

// checkBatches: the records recs, each valid under the dialect, read into batches cut where
// cut says (a batch begins at the first record) — given as found valid or not as valid says
// — and applied in order to a sequence from newSeq give each record's finding, the end and
// the warnings that the same records fed to another by RecordValid give, up to the first
// finding (where judgeRecords stops asking).
func checkBatches(t *testing.T, newSeq func() format.Sequence, recs [][]byte, cut, valid func(i int) bool) {
	t.Helper()
	ref := newSeq().(format.ValidSequence)
	bs := newSeq().(format.BatchSequence)
	pool := []format.RecordBatch{bs.NewBatch(), bs.NewBatch(), bs.NewBatch()} // reused, as a pass reuses them
	stopped := false
	for i, seg := 0, 0; i < len(recs) && !stopped; seg++ {
		b := pool[seg%len(pool)]
		b.Reset()
		j := i
		kb, keyed := b.(format.KeyedBatch)
		for ; j < len(recs) && (j == i || !cut(j)); j++ {
			if keyed && j%2 == 0 {
				// Given its keys by the validation that found it valid, as a pass gives them.
				var keys []int32
				if err := jsonv.ValidTop(recs[j], jsonv.Dialect{Lossy: true, MaxDepth: 1 << 24}, &keys); err != nil {
					t.Fatalf("record %q: %v", recs[j], err)
				}
				kb.AddKeyed(recs[j], keys)
				continue
			}
			b.Add(recs[j], valid(j))
		}
		for k := i; k < j; k++ {
			g, w := bs.ApplyBatch(b, k-i), ref.RecordValid(recs[k])
			if g != w {
				t.Fatalf("record %d %q: ApplyBatch %q, RecordValid %q", k, recs[k], g, w)
			}
			if g != "" {
				stopped = true
				break
			}
		}
		i = j
	}
	if stopped {
		return
	}
	if g, w := bs.End(), ref.(format.Sequence).End(); g != w {
		t.Fatalf("End %q after batches, %q after RecordValid", g, w)
	}
	gw, _ := format.Sequence(bs).(format.SequenceWarner)
	ww, _ := ref.(format.SequenceWarner)
	if gw != nil && strings.Join(gw.Warnings(), "|") != strings.Join(ww.Warnings(), "|") {
		t.Fatalf("warnings %q after batches, %q after RecordValid", gw.Warnings(), ww.Warnings())
	}
}

// batchCuts are checkBatches' cut and valid of a fuzzer's input b: where batches begin and
// which records are given unchecked, drawn from b's bytes.
func batchCuts(b []byte) (cut, valid func(i int) bool) {
	k := 1 + len(b)%5
	return func(i int) bool { return i%k == 0 || (i < len(b) && b[i]%7 == 0) },
		func(i int) bool { return i >= len(b) || b[len(b)-1-i]%3 != 0 }
}
