package apps

import (
	"bytes"
	"hash/maphash"
	"math/rand"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/sessionmedic/sessionmedic/heal/format"
	"github.com/sessionmedic/sessionmedic/heal/jsonv"
)

// claudeRefSequence is the Claude Code sequence as it was written before it read records
// into claudeRec (in batches ahead of it): the reference its findings are held to.
type claudeRefSequence struct {
	conversation bool
	w            claudeWarner
	seed         maphash.Seed
	uuids        map[uint64]bool
	parents      []uint64
}

func (s *claudeRefSequence) record(v *jsonv.Value) string {
	if p := claudeRecordProblem(v); p != "" {
		return p
	}
	if t := strOf(v.Get("type")); t == "user" || t == "assistant" {
		s.conversation = true
	}
	if u := v.Get("uuid"); isStr(u) {
		s.uuids[maphash.String(s.seed, u.Str)] = true
	}
	if p := v.Get("parentUuid"); isStr(p) {
		s.parents = append(s.parents, maphash.String(s.seed, p.Str))
	}
	w := &s.w
	if sid := v.Get("sessionId"); w.sid != "" && isStr(sid) && sid.Str != w.sid {
		w.foreign++
	}
	switch strOf(v.Get("type")) {
	case "assistant":
		if m := v.Get("message"); m.Get("role") == nil || m.Get("content") == nil || m.Get("content").Type == jsonv.Null {
			w.hollow++
		}
		w.lastToolUses = w.lastToolUses[:0]
		for _, b := range claudeBlocks(v, "tool_use") {
			w.lastToolUses = append(w.lastToolUses, strOf(b.Get("id")))
		}
		clear(w.answered)
	case "user":
		if c := v.Get("message").Get("content"); c == nil || c.Type == jsonv.Null {
			w.hollow++
		}
		if len(w.lastToolUses) > 0 {
			for _, b := range claudeBlocks(v, "tool_result") {
				w.answered[strOf(b.Get("tool_use_id"))] = true
			}
		}
	}
	return ""
}

func (s *claudeRefSequence) warnings() []string {
	s.w.dangling = 0
	for _, p := range s.parents {
		if !s.uuids[p] {
			s.w.dangling++
		}
	}
	return s.w.warnings()
}

// claudeMutate changes one record of a transcript where the sequence looks: its type, uuid,
// parentUuid, sessionId, message, role, content, a block's type or ids.
func claudeMutate(rng *rand.Rand, rec []byte) []byte {
	swaps := [][2]string{
		{`"type":"assistant"`, `"type":"user"`}, {`"type":"user"`, `"type":"assistant"`},
		{`"type":"user"`, `"type":"summary"`}, {`"type":"assistant"`, `"type":7`},
		{`"uuid":"`, `"uuid":"x`}, {`"parentUuid":"`, `"parentUuid":"y`}, {`"parentUuid":`, `"parentUid":`},
		{`"sessionId":"`, `"sessionId":"z`}, {`"role":`, `"rol":`}, {`"content":`, `"contents":`},
		{`"content":`, `"content":null,"c":`}, {`"type":"tool_use"`, `"type":"text"`},
		{`"type":"tool_result"`, `"type":"tool_use"`}, {`"tool_use_id":"`, `"tool_use_id":"q`},
		{`"id":"toolu_`, `"id":"toolu_w`}, {`"message":{`, `"message":1,"m":{`},
	}
	s := swaps[rng.Intn(len(swaps))]
	return bytes.Replace(rec, []byte(s[0]), []byte(s[1]), 1)
}

// A Claude Code transcript's sequence, fed records by RecordValid or read in batches ahead of
// it (on several goroutines in a pass), finds what the sequence written on each record's
// tree found: each record's problem, the end, and the warnings (dangling parents, other
// sessions, hollow messages, an unanswered last tool_use) — on every sample transcript and
// recorded one, and on them with records changed where the sequence looks.
func TestClaudeBatchesAreTheSequence(t *testing.T) {
	files, _ := filepath.Glob("../testdata/samples/claude-code/*/home/.claude/projects/*/*.jsonl")
	rec2, _ := filepath.Glob("../testdata/recorded/claude-code/*/.claude/projects/*/*.jsonl")
	files = append(files, rec2...)
	if len(files) < 5 {
		t.Fatalf("%d transcripts", len(files))
	}
	// A tool_use id asked again after its answer, unanswered the second time; a hollow row.
	const sid = "7c2e1b4a-9d3f-4e8a-b6c1-2f5a8d9e0b13"
	synthetic := strings.Join([]string{
		`{"type":"user","uuid":"u1","sessionId":"` + sid + `","message":{"role":"user","content":"hi"}}`,
		`{"type":"assistant","uuid":"a1","parentUuid":"u1","message":{"role":"assistant","content":[{"type":"tool_use","id":"toolu_1"}]}}`,
		`{"type":"user","uuid":"u2","parentUuid":"a1","message":{"role":"user","content":[{"type":"tool_result","tool_use_id":"toolu_1"}]}}`,
		`{"type":"assistant","uuid":"a2","parentUuid":"u2","message":{"role":"assistant","content":[{"type":"tool_use","id":"toolu_1"}]}}`,
		`{"type":"assistant","uuid":"a3","parentUuid":"a2","message":{"content":null}}`,
		`{"type":"assistant","uuid":"a4","parentUuid":"a3","message":{"role":"assistant","content":[{"type":"tool_use","id":"toolu_1"}]}}`,
	}, "\n")
	rng := rand.New(rand.NewSource(41))
	warned, found := 0, 0
	for _, f := range append(files, "synthetic/"+sid+".jsonl") {
		data, err := os.ReadFile(f)
		if strings.HasPrefix(f, "synthetic/") {
			data, err = []byte(synthetic), nil
		}
		if err != nil {
			t.Fatal(err)
		}
		var orig [][]byte
		for _, l := range bytes.Split(data, []byte("\n")) {
			if jsonv.Valid(l, nodeDialect) == nil && len(bytes.TrimSpace(l)) > 0 {
				orig = append(orig, l)
			}
		}
		if len(orig) == 0 {
			continue
		}
		for round := 0; round < 30; round++ {
			recs := make([][]byte, len(orig))
			copy(recs, orig)
			if round > 0 {
				for n := 1 + rng.Intn(3); n > 0; n-- {
					i := rng.Intn(len(recs))
					recs[i] = claudeMutate(rng, recs[i])
				}
			}
			var valid [][]byte
			for _, r := range recs {
				if jsonv.Valid(r, nodeDialect) == nil {
					valid = append(valid, r)
				}
			}
			seq := claudeCodeLog{}.NewSequence(f).(*claudeSequence)
			ref := &claudeRefSequence{w: claudeWarner{sid: claudeFileSession(f), answered: map[string]bool{}}, seed: seq.seed, uuids: map[uint64]bool{}}
			stopped := false
			for _, r := range valid {
				v, _ := jsonv.Parse(r, nodeDialect)
				g, w := seq.RecordValid(r), ref.record(v)
				if g != w {
					t.Fatalf("%s: record %q: %q, the sequence on its tree %q", f, r, g, w)
				}
				if g != "" {
					stopped, found = true, found+1
					break
				}
			}
			if !stopped {
				if g, w := strings.Join(seq.Warnings(), "|"), strings.Join(ref.warnings(), "|"); g != w {
					t.Fatalf("%s: warnings %q, the sequence on trees %q", f, g, w)
				} else if g != "" {
					warned++
				}
			}
			k := 1 + rng.Intn(4)
			checkBatches(t, func() format.Sequence { return claudeCodeLog{}.NewSequence(f) }, valid,
				func(i int) bool { return i%k == 0 || rng.Intn(5) == 0 }, func(i int) bool { return rng.Intn(3) > 0 })
		}
	}
	if warned == 0 || found == 0 {
		t.Fatalf("%d runs warned, %d found a problem: the test tells less than it should", warned, found)
	}
}
