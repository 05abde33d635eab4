package apps

import (
	"bytes"
	"fmt"
	"hash/maphash"
	"io"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/sessionmedic/sessionmedic/heal/format"
	"github.com/sessionmedic/sessionmedic/heal/jsonv"
)

// The judgement of a chat as it was made before records were built from geminiFields: each
// record's whole tree (jsonv.Parse), RecordProblem on its top-level members, the replay
// keeping a map of hashes. FuzzGeminiFields holds the new one to it.

type gemRefReplay struct {
	seed  maphash.Seed
	ready bool
	ids   []uint64
	res   map[uint64]bool
}

func (r *gemRefReplay) key(id string) uint64 { return maphash.String(r.seed, id) }

func (r *gemRefReplay) apply(v *jsonv.Value) bool {
	if !r.ready {
		r.seed, r.ready, r.res = maphash.MakeSeed(), true, map[uint64]bool{}
	}
	switch {
	case isStr(v.Get("id")):
		r.add(v)
	case isArr(v.Get("$set").Get("messages")):
		r.ids, r.res = nil, map[uint64]bool{}
		for _, it := range arrOf(v.Get("$set").Get("messages")) {
			if isStr(it.Get("id")) {
				r.add(it)
			}
		}
	case geminiPartialMeta(v) && !isObj(v.Get("$set")):
		for _, it := range arrOf(v.Get("messages")) {
			if isStr(it.Get("id")) {
				r.add(it)
			}
		}
	case isStr(v.Get("$rewindTo")):
		to := r.key(v.Get("$rewindTo").Str)
		for i, id := range r.ids {
			if id == to {
				for _, gone := range r.ids[i:] {
					delete(r.res, gone)
				}
				r.ids = r.ids[:i]
				return true
			}
		}
		r.ids, r.res = nil, map[uint64]bool{}
		return false
	}
	return true
}

func (r *gemRefReplay) add(v *jsonv.Value) {
	id := r.key(v.Get("id").Str)
	if _, ok := r.res[id]; !ok {
		r.ids = append(r.ids, id)
	}
	r.res[id] = gemRefResumable(v)
}

func (r *gemRefReplay) resumable() bool {
	for _, id := range r.ids {
		if r.res[id] {
			return true
		}
	}
	return false
}

func gemRefTexts(c *jsonv.Value) []string {
	if isStr(c) {
		return []string{c.Str}
	}
	var out []string
	for _, p := range arrOf(c) {
		if t := p.Get("text"); isStr(t) {
			out = append(out, t.Str)
		}
	}
	return out
}

func gemRefResumable(m *jsonv.Value) bool {
	switch strOf(m.Get("type")) {
	case "user":
		for _, t := range gemRefTexts(m.Get("content")) {
			if s := strings.TrimSpace(t); s != "" && !strings.HasPrefix(s, "<session_context>") {
				return true
			}
		}
	case "gemini":
		if len(arrOf(m.Get("toolCalls"))) > 0 || len(arrOf(m.Get("thoughts"))) > 0 {
			return true
		}
		for _, t := range gemRefTexts(m.Get("content")) {
			if strings.TrimSpace(t) != "" {
				return true
			}
		}
	}
	return false
}

// gemRefSequence is RecordProblem (top-level members) and then the sequence's Record (the
// whole tree), as judgeRecords asked them of each record.
type gemRefSequence struct {
	path     string
	meta     *geminiMeta
	r        gemRefReplay
	ignored  int
	warnings []string
}

func (s *gemRefSequence) record(rec []byte) string {
	first := s.meta == nil
	if v, err := jsonv.ParseDepth(rec, nodeDialect, 1); err != nil {
		return err.Error()
	} else if first {
		if p := geminiMetaProblem(v); p != "" {
			return p
		}
	} else if p := geminiRecordProblem(v); p != "" {
		return p
	}
	v, err := jsonv.Parse(rec, nodeDialect)
	if err != nil {
		return err.Error()
	}
	if first {
		m := geminiMetaOf(v)
		s.meta = &m
		return ""
	}
	if geminiKindOf(v) == geminiIgnoredRecord {
		s.ignored++
	}
	*s.meta = s.meta.merge(v)
	if !s.r.apply(v) {
		return geminiLostRewind
	}
	return ""
}

func (s *gemRefSequence) end() string {
	if s.meta == nil {
		return ""
	}
	p, w := geminiPlace(s.path, *s.meta, s.r.resumable())
	s.warnings = append(geminiIgnoredWarning(s.ignored), w...)
	return p
}

// gemRefFinishesAsIs is FinishesAsIs on whole trees.
func gemRefFinishesAsIs(damaged io.ReaderAt, dsize int64, salvaged io.ReaderAt, ssize int64) (bool, error) {
	seed := maphash.MakeSeed()
	lineKey := func(b []byte) uint64 { return maphash.Bytes(seed, bytes.TrimRight(b, "\r")) }
	calls := map[uint64]bool{}
	type answer struct {
		line uint64
		ids  []uint64
	}
	var answers []answer
	var r gemRefReplay
	first, pending := true, false
	err := format.EachLine(io.NewSectionReader(salvaged, 0, ssize), func(_ int64, line []byte, _ bool) error {
		if !format.ValidRecord(geminiLog{}, line) {
			return nil
		}
		v, err := jsonv.Parse(bytes.TrimRight(line, "\r"), nodeDialect)
		if err != nil {
			return err
		}
		var results []string
		cs := map[string]bool{}
		geminiToolIDs(v, "", cs, &results)
		for id := range cs {
			calls[maphash.String(seed, id)] = true
		}
		if len(results) > 0 {
			a := answer{line: lineKey(line)}
			for _, id := range results {
				a.ids = append(a.ids, maphash.String(seed, id))
			}
			answers = append(answers, a)
		}
		if first {
			first = false
			return nil
		}
		r.apply(v)
		if msgs := v.Get("$set").Get("messages"); isArr(msgs) {
			resumable := false
			for _, m := range arrOf(msgs) {
				resumable = resumable || gemRefResumable(m)
			}
			pending = !resumable
		} else if isStr(v.Get("id")) && gemRefResumable(v) {
			pending = false
		}
		return nil
	})
	if err != nil {
		return false, err
	}
	if !r.resumable() && pending {
		return false, nil
	}
	orphans := map[uint64]bool{}
	for _, a := range answers {
		for _, id := range a.ids {
			if !calls[id] {
				orphans[a.line] = true
			}
		}
	}
	if len(orphans) == 0 {
		return true, nil
	}
	whole := map[uint64]bool{}
	err = format.EachLine(io.NewSectionReader(damaged, 0, dsize), func(_ int64, line []byte, _ bool) error {
		if k := lineKey(line); orphans[k] && format.ValidRecord(geminiLog{}, line) {
			whole[k] = true
		}
		return nil
	})
	return err == nil && len(whole) == len(orphans), err
}

// FuzzGeminiFields: a chat judged on the members geminiFields builds (texts opaque, records in
// an arena, fed by Record or, where the line is valid, RecordValid) gives every record's
// finding, the end, the warnings and the replay's resumability that the whole trees gave
// before; RecordProblem and AppendedOK say what they said on the top-level members; the
// salvage's FinishesAsIs says what it said on whole trees; and a record geminiNoToolIDs passes
// holds no tool id geminiToolIDs finds.
func FuzzGeminiFields(f *testing.F) {
	files, _ := filepath.Glob(gemSamples + "*/home/.gemini/tmp/*/chats/*.jsonl")
	rec, _ := filepath.Glob("../testdata/recorded/gemini-cli/*/.gemini/tmp/*/chats/*.jsonl")
	for _, p := range append(files, rec...) {
		if b, err := os.ReadFile(p); err == nil {
			f.Add(b)
		}
	}
	h := gemHash("/tmp/demo/p")
	meta := gemMeta(gemID, h, "main")
	f.Add([]byte(meta + gemContext + gemUser))
	f.Add([]byte(meta + gemContext))
	f.Add([]byte(meta +
		`{"id":"a","type":"user","content":" \u0020 <session_context>x"}` + "\n" +
		`{"id":"b","type":"user","content":[{"text":"\u003csession_context>"},{"text":"  \t"},"x",{"text":1}]}` + "\n" +
		`{"id":"c","type":"gemini","content":"\n","toolCalls":[{"id":"t1"}],"thoughts":[]}` + "\n" +
		`{"id":"d","type":"gemini","content":[{"text":" "}],"thoughts":[{"subject":"s"}],"type":"gem\u0069ni"}` + "\n" +
		`{"id":"e","type":"user","content":"\u00a0\u2003é","content":"<b>"}` + "\n" +
		`{"$rewindTo":"c"}` + "\n" +
		`{"$set":{"messages":[{"id":"a","type":"user","content":"\u0068i"},{"id":"a","type":"gemini","content":"🚀"}],"kind":"main"}}` + "\n" +
		`{"sessionId":"` + gemID + `","projectHash":"` + h + `","messages":[{"id":"z","type":"user","content":[{"text":" <x"}]}]}` + "\n" +
		`{"$set":{"sessionId":"x","projectHash":1}}` + "\n" +
		`{"$set":"no"}` + "\n" +
		`{"other":true}` + "\n" +
		`{"$rewindTo":"nowhere"}` + "\n"))
	f.Add([]byte(meta +
		`{"id":"\u0061b","type":"\u0075ser","content":"x"}` + "\n" +
		`{"id":"ab","type":"us\u0065r","content":" "}` + "\n" +
		`{"id":"c\"d","type":"gemini","content":"\\"}` + "\n" +
		`{"$rewindTo":"c\u0022d"}` + "\n" +
		`{"$rewindTo":"a\u0062"}` + "\n"))
	f.Add([]byte(meta +
		`{"id":"g1","type":"gemini","content":[{"functionCall":{"id":"c1","name":"ls"}}]}` + "\n" +
		`{"id":"u2","type":"user","content":[{"functionResponse":{"id":"c1"}},{"functionResponse":{"id":"c9"}}]}` + "\n" +
		`{"id":"g2","type":"gemini","content":[{"func\u0074ionCall":{"id":"c2"}}],"tool\u0043alls":[{"id":"c3"}]}` + "\n" +
		`{"$set":{"messages":[{"id":"c1","type":"user","content":[{"text":"<session_context>"}]}]}}` + "\n"))
	dir := f.TempDir()
	chats := filepath.Join(dir, "tmp", "proj", "chats")
	if err := os.MkdirAll(chats, 0o755); err != nil {
		f.Fatal(err)
	}
	os.WriteFile(filepath.Join(dir, "tmp", "proj", ".project_root"), []byte("/tmp/demo/p"), 0o644)
	path := filepath.Join(chats, gemName)
	f.Fuzz(func(t *testing.T, b []byte) {
		if len(b) > 1<<16 {
			return
		}
		got := geminiLog{}.NewSequence(path).(*geminiSequence)
		gotValid := geminiLog{}.NewSequence(path).(*geminiSequence)
		want := &gemRefSequence{path: path}
		stopped, n := false, 0
		for _, rec := range bytes.Split(b, []byte("\n")) {
			if len(bytes.TrimSpace(rec)) == 0 {
				continue // a blank line: judgeRecords feeds no record
			}
			v, err := jsonv.ParseDepth(rec, nodeDialect, 1)
			if w := err == nil && v.Get("$rewindTo") == nil && geminiRecordProblem(v) == ""; (geminiLog{}).AppendedOK(rec) != w {
				t.Fatalf("record %q: AppendedOK %v, on its top-level members %v", rec, !w, w)
			}
			g := got.Record(rec)
			gv := ""
			if jsonv.Valid(rec, nodeDialect) == nil {
				gv = gotValid.RecordValid(rec)
				if geminiNoToolIDs(rec) {
					var results []string
					calls := map[string]bool{}
					geminiToolIDs(jsonv.ParseDepthValid(rec, nodeDialect, 0), "", calls, &results)
					if len(calls) > 0 || len(results) > 0 {
						t.Fatalf("record %q: geminiNoToolIDs, but it holds %v and %v", rec, calls, results)
					}
				}
			} else {
				gv = gotValid.Record(rec)
			}
			w := want.record(rec)
			if g != w || gv != w {
				t.Fatalf("record %d %q: Record %q, RecordValid %q, the whole tree %q", n, rec, g, gv, w)
			}
			if rp := (geminiLog{}).RecordProblem(rec, n == 0); rp != "" && rp != w {
				t.Fatalf("record %d %q: RecordProblem %q, the sequence %q", n, rec, rp, w)
			}
			if w != "" {
				stopped = true
				break // judgeRecords asks nothing more
			}
			n++
		}
		if got.r.resumable() != want.r.resumable() || got.ignored != want.ignored || fmt.Sprint(got.meta) != fmt.Sprint(want.meta) {
			t.Fatalf("resumable %v ignored %d meta %v; the whole tree: %v %d %v",
				got.r.resumable(), got.ignored, got.meta, want.r.resumable(), want.ignored, want.meta)
		}
		if !stopped {
			ge, gve, we := got.End(), gotValid.End(), want.end()
			if ge != we || gve != we {
				t.Fatalf("End %q, fed by RecordValid %q, the whole tree %q", ge, gve, we)
			}
			gw, gvw, ww := strings.Join(got.Warnings(), "|"), strings.Join(gotValid.Warnings(), "|"), strings.Join(want.warnings, "|")
			if gw != ww || gvw != ww {
				t.Fatalf("warnings %q, fed by RecordValid %q, the whole tree %q", gw, gvw, ww)
			}
		}
		// Read in batches cut anywhere, ahead of the sequence, as a pass over a big chat reads
		// them: the same findings, end and warnings as RecordValid.
		var valid [][]byte
		for _, rec := range bytes.Split(b, []byte("\n")) {
			if len(bytes.TrimSpace(rec)) > 0 && jsonv.Valid(rec, nodeDialect) == nil {
				valid = append(valid, rec)
			}
		}
		cut, given := batchCuts(b)
		checkBatches(t, func() format.Sequence { return geminiLog{}.NewSequence(path) }, valid, cut, given)
		salvaged := format.KeepLines(geminiLog{}, path, b)
		if salvaged == nil {
			salvaged = b
		}
		for _, s := range [][]byte{b, salvaged} {
			g, gerr := geminiLog{}.FinishesAsIs(path, bytes.NewReader(b), int64(len(b)), bytes.NewReader(s), int64(len(s)))
			w, werr := gemRefFinishesAsIs(bytes.NewReader(b), int64(len(b)), bytes.NewReader(s), int64(len(s)))
			if g != w || (gerr == nil) != (werr == nil) {
				t.Fatalf("FinishesAsIs %v (%v), on whole trees %v (%v)", g, gerr, w, werr)
			}
		}
	})
}

// The replay's id table against a map, over enough messages to grow it many times, with
// keys that collide in their low bits, re-added, rewound to and dropped by checkpoints.
func TestGeminiReplayTable(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 9))
	replayAgainstMap(t, rng, func() uint64 {
		k := uint64(rng.IntN(20000))
		if rng.IntN(4) == 0 {
			return k << 40 // the same low bits as many others
		}
		return k*0x9e3779b97f4a7c15 + 1
	}, 120000, nil)
}
