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
			d := gemDamage(rng, orig, i)
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
	path := filepath.Join(t.TempDir(), gemName)
	counts := map[string]int{}
	for i := 0; i < 300; i++ {
		chat := gemRandChat(rng)
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

// gemRandChat is a random chat of messages, checkpoints with and without a resumable message,
// records that are both (a message holding a checkpoint), rewinds, metadata records with
// messages and tool calls and results, invalid and blank lines; in a third of them a line is
// glued to the next.
func gemRandChat(rng *rand.Rand) []byte {
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
	return chat
}

// FinishSalvage, now the streamed FinishSplice of the bytes, finishes every salvage as it did
// on the chat held whole (gemRefFinishSalvage): random chats and their salvages, every sample
// chat damaged at random, and the recorded chat whose glued line holds an orphan tool result.
// Both drops occur (an orphan result, a context-only checkpoint), and salvages FinishesAsIs
// cannot pass that lose nothing.
func TestGeminiFinishSpliceIsFinishSalvage(t *testing.T) {
	p := geminiLog{}
	path := filepath.Join(t.TempDir(), gemName)
	counts, checks := map[string]int{}, 0
	check := func(name string, damaged, salvaged []byte) {
		t.Helper()
		want := gemRefFinishSalvage(damaged, salvaged)
		sp, err := p.FinishSplice(path, bytes.NewReader(damaged), int64(len(damaged)), bytes.NewReader(salvaged), int64(len(salvaged)))
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		got := salvaged
		if sp != nil {
			if got, err = sp.Bytes(bytes.NewReader(salvaged)); err != nil {
				t.Fatal(err)
			}
		}
		if !bytes.Equal(got, want) {
			t.Fatalf("%s: damaged %q\nsalvage %q\nfinished streaming %q\nheld whole %q", name, damaged, salvaged, got, want)
		}
		if g := p.FinishSalvage(path, damaged, salvaged); !bytes.Equal(g, want) {
			t.Fatalf("%s: FinishSalvage %q, held whole %q", name, g, want)
		}
		// Lines over a window read as their records' skeletons, never held: the same.
		checks++
		w := []int{1, 40, 300}[checks%3]
		restore := format.SetLineWindow(w)
		g := p.FinishSalvage(path, damaged, salvaged)
		restore()
		if !bytes.Equal(g, want) {
			t.Fatalf("%s: lines over %d bytes long: FinishSalvage %q, held whole %q", name, w, g, want)
		}
		asIs, _ := p.FinishesAsIs(path, bytes.NewReader(damaged), int64(len(damaged)), bytes.NewReader(salvaged), int64(len(salvaged)))
		switch {
		case asIs:
			counts["as is"]++
		case sp == nil:
			counts["asked, kept"]++
		case gemRefDropOrphanResults(damaged, salvaged) == nil || !bytes.Equal(gemRefDropOrphanResults(damaged, salvaged), salvaged):
			counts["orphan dropped"]++
		default:
			counts["checkpoint dropped"]++
		}
	}
	// A salvage that is the damaged chat's first lines (a torn last line cut), read through the
	// damaged file's own reader, is finished from its end (geminiPendingBack): the same.
	// Lines over a window are read as their records' skeletons from either end.
	windows := 0
	prefixes := func(name string, damaged []byte) {
		t.Helper()
		windows++
		defer format.SetLineWindow([]int{format.LineWindow, 1, 40, 300}[windows%4])()
		r := bytes.NewReader(damaged)
		for x := 0; x <= len(damaged); x++ {
			if x > 0 && damaged[x-1] != '\n' {
				continue
			}
			pre := &format.Splice{}
			pre.AddRange(0, int64(x))
			if !format.LinesPrefix(pre.At(r), r, int64(x)) {
				t.Fatalf("%s: the first %d bytes are not taken for the chat's first lines", name, x)
			}
			pending, err := geminiPendingBack(pre.At(r), int64(x))
			if err != nil {
				t.Fatal(err)
			}
			// What the read of every record from the start leaves pending.
			f := geminiFinish{seed: maphash.MakeSeed()}
			if err := f.read(bytes.NewReader(damaged[:x]), int64(x)); err == errGeminiReplayAll {
				f = geminiFinish{seed: f.seed, all: true}
				err = f.read(bytes.NewReader(damaged[:x]), int64(x))
			}
			if pending != f.pending {
				t.Fatalf("%s: its first %d bytes %q: pending read from the end %v, from the start %v", name, x, damaged[:x], pending, f.pending)
			}
			if pending {
				counts["prefix pending"]++
			} else {
				counts["prefix settled from its end"]++
			}
			want := gemRefFinishSalvage(damaged, damaged[:x])
			sp, err := p.FinishSplice(path, r, int64(len(damaged)), pre.At(r), int64(x))
			if err != nil {
				t.Fatalf("%s: %v", name, err)
			}
			got := damaged[:x]
			if sp != nil {
				if got, err = sp.Bytes(bytes.NewReader(damaged[:x])); err != nil {
					t.Fatal(err)
				}
			}
			if !bytes.Equal(got, want) {
				t.Fatalf("%s: its first %d bytes %q\nfinished from the end %q\nheld whole %q", name, x, damaged[:x], got, want)
			}
		}
	}
	// A chat whose first line is a context-only checkpoint: never dropped, replayed as the
	// metadata record, where a metadata record's messages after it are the resumable ones.
	ctx, res := `{"$set":{"messages":[{"id":"c","type":"user","content":"<session_context>x"}]}}`, `{"id":"a","type":"user","content":"hi"}`
	for _, c := range [][]string{
		{ctx, `{"sessionId":"s","projectHash":"h","messages":[` + res + `]}`, ctx},
		{ctx, res, ctx, ctx},
		{gemMeta(gemID, "h", "main")[:len(gemMeta(gemID, "h", "main"))-1], res, ctx},
	} {
		chat := []byte(strings.Join(c, "\n") + "\n")
		check(string(chat), chat, chat)
	}
	rng := rand.New(rand.NewSource(23))
	for i := 0; i < 3000; i++ {
		chat := gemRandChat(rng)
		if i%4 == 0 { // no metadata record: the first line a checkpoint or a message
			chat = chat[bytes.IndexByte(chat, '\n')+1:]
		}
		check(fmt.Sprint("chat ", i), chat, chat)
		prefixes(fmt.Sprint("chat ", i), chat)
		if s := format.KeepLines(p, path, chat); s != nil {
			check(fmt.Sprint("salvage of chat ", i), chat, s)
		}
	}
	orphan := "../testdata/recorded/gemini-cli/glued-tool-result/.gemini/tmp/oracle-proj/chats/session-2026-11-24T22-06-1dcb804e.jsonl"
	files, _ := filepath.Glob("../testdata/samples/gemini-cli/*/home/.gemini/tmp/*/chats/*.jsonl")
	for _, f := range append(files, orphan) {
		orig, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		if s := format.KeepLines(p, f, orig); s != nil {
			check(f, orig, s)
		}
		for i := 0; i < 60; i++ {
			d := gemDamage(rng, orig, i)
			if i < 6 {
				prefixes(fmt.Sprint(f, " #", i), d)
			}
			if s := format.KeepLines(p, f, d); s != nil {
				check(fmt.Sprint(f, " #", i), d, s)
			}
		}
	}
	t.Logf("%v", counts)
	for _, k := range []string{"as is", "asked, kept", "orphan dropped", "checkpoint dropped", "prefix pending", "prefix settled from its end"} {
		if counts[k] == 0 {
			t.Fatalf("no salvage was %q: the test tells less than it should (%v)", k, counts)
		}
	}
}

// FuzzGeminiFinishSplice: the streamed finish of any chat's salvage, and of the chat as its
// own salvage, is the whole-tree finish's (gemRefFinishSalvage).
func FuzzGeminiFinishSplice(f *testing.F) {
	files, _ := filepath.Glob("../testdata/samples/gemini-cli/*/home/.gemini/tmp/*/chats/*.jsonl")
	files = append(files, "../testdata/recorded/gemini-cli/glued-tool-result/.gemini/tmp/oracle-proj/chats/session-2026-11-24T22-06-1dcb804e.jsonl")
	for _, p := range files {
		if b, err := os.ReadFile(p); err == nil {
			f.Add(b)
		}
	}
	rng := rand.New(rand.NewSource(3))
	for range 20 {
		f.Add(gemRandChat(rng))
	}
	p := geminiLog{}
	f.Fuzz(func(t *testing.T, chat []byte) {
		if len(chat) > 1<<16 {
			return
		}
		path := "/x/.gemini/tmp/p/chats/" + gemName
		for _, s := range [][]byte{chat, format.KeepLines(p, path, chat)} {
			if s == nil {
				continue
			}
			want := gemRefFinishSalvage(chat, s)
			sp, err := p.FinishSplice(path, bytes.NewReader(chat), int64(len(chat)), bytes.NewReader(s), int64(len(s)))
			if err != nil {
				t.Fatal(err)
			}
			got := s
			if sp != nil {
				if got, err = sp.Bytes(bytes.NewReader(s)); err != nil {
					t.Fatal(err)
				}
			}
			if !bytes.Equal(got, want) {
				t.Fatalf("chat %q, salvage %q: streamed %q, held whole %q", chat, s, got, want)
			}
		}
	})
}

// gemDamage is orig damaged at random, the i-th way of three: torn from a point on, a line
// glued to the next, a byte garbled.
func gemDamage(rng *rand.Rand, orig []byte, i int) []byte {
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
	return d
}
