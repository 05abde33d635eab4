package format

import (
	"bytes"
	"strings"
	"testing"

	"github.com/sessionmedic/sessionmedic/heal/jsonv"
)

// rejoiner is a JSONL log whose records start {"type":" and whose writer may leave a raw
// newline in a string.
type rejoiner struct{ plain }

func (rejoiner) Plain() bool            { return false }
func (rejoiner) RecordStarts() [][]byte { return [][]byte{[]byte(`{"type":"`)} }
func (rejoiner) Whole(v *jsonv.Value) bool {
	return v.Get("type") != nil && v.Get("type").Type == jsonv.String
}
func (rejoiner) RejoinsSplitRecords() bool         { return true }
func (rejoiner) Records(*jsonv.Value) int          { return 1 }
func (r rejoiner) CheckLines(File, []Line) Verdict { return OK() }

// A record a raw newline (or a blank line: two) split is joined back with the newline
// escaped, byte for byte the record the writer meant, and counted as no loss; a join that
// is not one whole record, or would swallow a record, is never made.
func TestRejoinSplitRecord(t *testing.T) {
	p := rejoiner{plain{jsonl: true}}
	a := `{"type":"user","text":"one"}` + "\n"
	b := `{"type":"tool","out":"line 1\nline 2\n\nline 4","n":2}` + "\n"
	c := `{"type":"user","text":"three"}` + "\n"
	raw := strings.Replace(b, `\n`, "\n", -1) // the writer's raw newlines
	for _, tc := range []struct {
		name, in, want string
		lost           int
	}{
		{"split thrice", a + raw + c, a + b + c, 0},
		{"split at the end", a + raw, a + b, 0},
		{"no end: the pieces go", a + strings.Split(raw, "\n")[0] + "\n" + c, a + c, 1},
		{"a record in the way", a + strings.Split(raw, "\n")[0] + "\n" + c + strings.SplitN(raw, "\n", 2)[1], a + c, 1},
		{"not a string", a + "{\"type\":\"x\",\n\"n\":1}\n" + c, a + c, 1},
		{"not whole", a + "{\"kind\":\"x\",\"s\":\"p\nq\"}\n" + c, a + c, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := KeepLines(p, "f.jsonl", []byte(tc.in))
			if string(got) != tc.want {
				t.Fatalf("salvage:\n%s\nwant:\n%s", got, tc.want)
			}
			_, lost, _ := Loss(p, "f.jsonl", []byte(tc.in), got, Records(p, got))
			if lost != tc.lost {
				t.Errorf("lost %d records, want %d", lost, tc.lost)
			}
			if again := KeepLines(p, "f.jsonl", got); !bytes.Equal(again, got) {
				t.Errorf("a second salvage changes it")
			}
		})
	}
}

type deduper struct{ rejoiner }

func (deduper) DropsDuplicateLines() bool { return true }

// A profile whose app sends a re-appended line twice: the salvage keeps its first copy only,
// and loses nothing; a profile that keys records by id keeps every copy.
func TestDropDuplicateLines(t *testing.T) {
	a := `{"type":"user","text":"one"}` + "\n"
	b := `{"type":"gemini","text":"two"}` + "\n"
	in := a + b + b + "{\"type\":\"x" + "\n" + a
	d := deduper{rejoiner{plain{jsonl: true}}}
	lines := Split([]byte(in), d)
	if i := FirstDuplicate(lines); i != 2 {
		t.Errorf("FirstDuplicate = %d, want 2", i)
	}
	got := KeepLines(d, "f.jsonl", []byte(in))
	if string(got) != a+b {
		t.Fatalf("salvage:\n%s", got)
	}
	if _, lost, _ := Loss(d, "f.jsonl", []byte(in), got, 2); lost != 1 {
		t.Errorf("lost %d records, want the torn one", lost)
	}
	if got := KeepLines(rejoiner{plain{jsonl: true}}, "f.jsonl", []byte(in)); string(got) != a+b+b+a {
		t.Errorf("a profile that keeps copies: %s", got)
	}
	if i := FirstDuplicate(Split([]byte(a+b), d)); i != -1 {
		t.Errorf("FirstDuplicate without copies = %d", i)
	}
}
