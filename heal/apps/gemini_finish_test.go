package apps

import (
	"bytes"
	"fmt"
	"hash/maphash"
	"math/rand"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/sessionmedic/sessionmedic/heal/format"
	"github.com/sessionmedic/sessionmedic/heal/jsonv"
)

// FinishesAsIs, read streaming, says true only where FinishSalvage leaves the salvage as it
// is: on the recorded chat whose glued line holds an orphan tool result it says false, and on
// every sample chat damaged at random (torn, glued, garbled lines) its true is never wrong.
func TestGeminiFinishesAsIs(t *testing.T) {
	p := geminiLog{}
	asIs := func(path string, damaged []byte) (bool, bool) {
		salvaged := format.KeepLines(p, path, damaged)
		if salvaged == nil {
			return true, true
		}
		got, err := p.FinishesAsIs(path, bytes.NewReader(damaged), int64(len(damaged)), bytes.NewReader(salvaged), int64(len(salvaged)))
		if err != nil {
			t.Fatal(err)
		}
		return got, bytes.Equal(p.FinishSalvage(path, damaged, salvaged), salvaged)
	}
	orphan := "../testdata/recorded/gemini-cli/glued-tool-result/.gemini/tmp/oracle-proj/chats/session-2026-11-24T22-06-1dcb804e.jsonl"
	data, err := os.ReadFile(orphan)
	if err != nil {
		t.Fatal(err)
	}
	if got, same := asIs(orphan, data); got || same {
		t.Fatalf("orphan tool result: FinishesAsIs %v, FinishSalvage leaves it %v", got, same)
	}
	files, _ := filepath.Glob("../testdata/samples/gemini-cli/*/home/.gemini/tmp/*/chats/*.jsonl")
	files = append(files, orphan)
	rng := rand.New(rand.NewSource(5))
	n, yes := 0, 0
	for _, f := range files {
		orig, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		for i := 0; i < 40; i++ {
			d := bytes.Clone(orig)
			lines := bytes.SplitAfter(d, []byte("\n"))
			k := rng.Intn(len(lines))
			switch i % 3 {
			case 0: // torn from a point on
				d = d[:len(bytes.Join(lines[:k], nil))+rng.Intn(len(lines[k])+1)]
			case 1: // glued to the next
				lines[k] = bytes.TrimSuffix(lines[k], []byte("\n"))
				d = bytes.Join(lines, nil)
			default: // a byte garbled
				if len(d) > 0 {
					d[rng.Intn(len(d))] = '#'
				}
			}
			got, same := asIs(f, d)
			if got && !same {
				t.Fatalf("%s #%d: FinishesAsIs true, but FinishSalvage changes the salvage", f, i)
			}
			n++
			if got {
				yes++
			}
		}
	}
	if yes == 0 || yes == n {
		t.Fatalf("%d of %d said as-is: the test tells nothing", yes, n)
	}
	t.Logf("%d of %d salvages finished as they are", yes, n)
}

// FinishesAsIs, which replays only while a context-only checkpoint is pending, says what it
// said replaying every record (gemRefFinishesAsIs, on whole trees) on random chats of
// messages, checkpoints with and without a resumable message, records that are both (a
// message holding a checkpoint), rewinds, metadata records with messages and tool calls and
// results; some of them need the replay of every record (errGeminiReplayAll).
func TestGeminiFinishesAsIsReplaysWhatItNeeds(t *testing.T) {
	rng := rand.New(rand.NewSource(11))
	pick := func(s ...string) string { return s[rng.Intn(len(s))] }
	msg := func() string {
		return `{"id":"` + pick("a", "b", "c", "d", "e") + `","type":"` + pick("user", "gemini") + `","content":` +
			pick(`"hi"`, `" "`, `"<session_context>x"`, `[{"text":"\u0020ok"}]`, `"a function of it"`) + `}`
	}
	msgs := func() string {
		var m []string
		for n := rng.Intn(3); n > 0; n-- {
			m = append(m, msg())
		}
		return `[` + strings.Join(m, ",") + `]`
	}
	record := func() string {
		switch rng.Intn(12) {
		case 0, 1:
			return `{"$set":{"messages":` + msgs() + `}}`
		case 2:
			m := msg()
			return m[:len(m)-1] + `,"$set":{"messages":` + msgs() + `}}` // a message holding a checkpoint
		case 3:
			return `{"$rewindTo":"` + pick("a", "b", "c", "z") + `"}`
		case 4:
			return `{"sessionId":"s","projectHash":"h","messages":` + msgs() + `}`
		case 5:
			return `{"id":"` + pick("f", "g") + `","type":"gemini","content":[{"functionCall":{"id":"` + pick("c1", "c2") + `"}}]}`
		case 6:
			return `{"id":"` + pick("r", "s") + `","type":"user","content":[{"functionResponse":{"id":"` + pick("c1", "c2", "c3") + `"}}]}`
		case 7:
			return `{"$set":{"lastUpdated":"2026-11-22T21:41:58.658Z"}}`
		case 8:
			return pick(`not json`, `[1]`, ``)
		}
		return msg()
	}
	path := filepath.Join(t.TempDir(), gemName)
	counts := map[string]int{}
	for i := 0; i < 300; i++ {
		var b strings.Builder
		b.WriteString(gemMeta(gemID, "h", "main"))
		for n := 1 + rng.Intn(14); n > 0; n-- {
			b.WriteString(record() + pick("\n", "\n", "\r\n"))
		}
		chat := []byte(b.String())
		if rng.Intn(3) == 0 { // a line glued to the next
			if k := bytes.IndexByte(chat[len(gemMeta(gemID, "h", "main")):], '\n'); k >= 0 {
				chat = append(chat[:len(gemMeta(gemID, "h", "main"))+k:len(gemMeta(gemID, "h", "main"))+k], chat[len(gemMeta(gemID, "h", "main"))+k+1:]...)
			}
		}
		salvaged := format.KeepLines(geminiLog{}, path, chat)
		if salvaged == nil {
			salvaged = chat
		}
		for _, s := range [][]byte{chat, salvaged} {
			got, gerr := geminiLog{}.FinishesAsIs(path, bytes.NewReader(chat), int64(len(chat)), bytes.NewReader(s), int64(len(s)))
			want, werr := gemRefFinishesAsIs(bytes.NewReader(chat), int64(len(chat)), bytes.NewReader(s), int64(len(s)))
			if got != want || gerr != nil || werr != nil {
				t.Fatalf("chat %q: FinishesAsIs %v (%v), replaying every record %v (%v)", s, got, gerr, want, werr)
			}
			f := geminiFinish{seed: maphash.MakeSeed()}
			err := f.read(bytes.NewReader(s), int64(len(s)))
			counts[fmt.Sprint(got, err == errGeminiReplayAll, f.pending)]++
		}
	}
	t.Logf("as is, replayed again, pending: %v", counts)
	for _, k := range []string{"true false false", "false false true", "true false true", "true true false"} {
		if counts[k] == 0 {
			t.Fatalf("no chat gave %q (as is, replayed again, pending): the test tells less than it should (%v)", k, counts)
		}
	}
}

// geminiNoToolIDs passes a record whose texts name the tools' members but whose members do
// not, and no record with such a member, written plain or escaped.
func TestGeminiNoToolIDs(t *testing.T) {
	for rec, want := range map[string]bool{
		`{"id":"a","content":"a function Call of toolCalls, functionResponse"}`:         true,
		`{"id":"a","content":"say \"functionCall\" and \"toolCalls\""}`:                 true,
		`{"id":"a","content":"Calls Response \"Call\" C"}`:                              true,
		`{"id":"a","toolCalls":[{"id":"t"}]}`:                                           false,
		`{"id":"a","content":[{"functionCall":{"id":"c"}}]}`:                            false,
		`{"id":"a","content":[{"x":{"functionResponse":{"id":"c"}}}]}`:                  false,
		`{"id":"a","content":[{"func\u0074ionCall":{"id":"c"}}]}`:                       false,
		`{"id":"a","tool\u0043alls":[{"id":"t"}]}`:                                      false,
		`{"id":"a","content":"functionCall"}`:                                           false, // a text that is the name: taken for one
		`{"id":"a","content":[{"functionCal":{"id":"c"}},{"oolCalls":[{"id":"t"}]}]}`:   true,
		`{"id":"a","content":[{"functionResponses":{"id":"c"}},{"xfunctionCall":"c"}]}`: true,
	} {
		if got := geminiNoToolIDs([]byte(rec)); got != want {
			t.Errorf("%s: geminiNoToolIDs %v, want %v", rec, got, want)
		}
		var results []string
		calls := map[string]bool{}
		geminiToolIDs(jsonv.ParseDepthValid([]byte(rec), nodeDialect, 0), "", calls, &results)
		if want && (len(calls) > 0 || len(results) > 0) {
			t.Errorf("%s: passed, but it holds %v and %v", rec, calls, results)
		}
	}
}
