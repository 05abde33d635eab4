package apps

import (
	"bytes"
	"math/rand"
	"os"
	"path/filepath"
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
