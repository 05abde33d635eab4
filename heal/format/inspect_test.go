package format

import (
	"bufio"
	"bytes"
	"io"
	"strings"
	"testing"

	"github.com/sessionmedic/sessionmedic/heal/jsonv"
)

// plain is a Profile with no checklist: generic JSON or JSONL.
type plain struct{ jsonl bool }

func (p plain) Name() string                                  { return "plain" }
func (p plain) JSONL() bool                                   { return p.jsonl }
func (p plain) Dialect() jsonv.Dialect                        { return jsonv.Dialect{} }
func (p plain) EmptyIsDamage() bool                           { return !p.jsonl }
func (p plain) AppendOnly() bool                              { return p.jsonl }
func (p plain) Plain() bool                                   { return true }
func (p plain) CheckValue(File, []byte, *jsonv.Value) Verdict { return OK() }
func (p plain) CheckLines(File, []Line) Verdict               { return OK() }
func (p plain) Records(*jsonv.Value) int                      { return 1 }

// The in-memory, streaming and big-file passes agree on a plain profile.
func TestPassesAgree(t *testing.T) {
	for _, c := range []struct {
		jsonl bool
		in    string
		want  string // kind, "" for healthy
	}{
		{false, `{"a":1}`, ""},
		{false, ``, KindEmpty},
		{false, "\x00\x00", KindNULFilled},
		{false, "\xef\xbb\xbf{}", KindBOM},
		{false, `{"a":1} x`, KindTrailingGarbage},
		{false, `{"a":`, KindTruncated},
		{true, "{\"a\":1}\n\n{\"b\":2}\n", ""},
		{true, "", ""},
		{true, "{\"a\":1}\n{\"b\":", KindTruncated},
		{true, "{\"a\":1}\n[1]\n", KindMalformedRecord},
		{true, "{\"a\":1}", KindTruncated},
	} {
		p := plain{c.jsonl}
		v := Inspect(p, File{}, []byte(c.in))
		if v.Kind != c.want && !(c.want == "" && v.Status == Healthy) {
			t.Errorf("Inspect(%q) = %v, want %q", c.in, v, c.want)
		}
		sv, _, err := StreamVerdict(strings.NewReader(c.in), 0, int64(len(c.in)), p)
		if err != nil || sv.Status != v.Status || sv.Kind != v.Kind || sv.Offset != v.Offset {
			t.Errorf("StreamVerdict(%q) = %v, %v; Inspect: %v", c.in, sv, err, v)
		}
		if c.jsonl && c.in != "" {
			lv := StreamLines(bufio.NewReader(strings.NewReader(c.in)), p)
			if lv.Status != v.Status || lv.Kind != v.Kind {
				t.Errorf("StreamLines(%q) = %v; Inspect: %v", c.in, lv, v)
			}
		}
	}
}

func TestLinePrefixAndAppended(t *testing.T) {
	full := []byte("{\"a\":1}\n{\"b\":2}\n")
	if !IsLinePrefix(full[:8], full) || IsLinePrefix(full, full) || IsLinePrefix(full[:5], full) {
		t.Error("IsLinePrefix")
	}
	p := plain{true}
	if v := Inspect(p, File{LastGood: full}, full[:8]); v.Kind != KindTruncated {
		t.Errorf("a line-aligned prefix of last-good: %v", v)
	}
	if !AppendedValid(p, []byte("{\"c\":3}\n")) || AppendedValid(p, []byte("{\"c\":3}")) || AppendedValid(p, []byte("3\n")) {
		t.Error("AppendedValid")
	}
	if n := Records(p, bytes.Repeat([]byte("{}\n"), 3)); n != 3 {
		t.Errorf("Records = %d", n)
	}
}

// xs reads n bytes of 'x' (no newline) without holding them.
type xs struct{ n int64 }

func (r *xs) Read(p []byte) (int, error) {
	if r.n == 0 {
		return 0, io.EOF
	}
	k := min(int64(len(p)), r.n)
	for i := range p[:k] {
		p[i] = 'x'
	}
	r.n -= k
	return int(k), nil
}

// A record longer than MaxLine is reported where it starts, with its line number, not held.
func TestStreamLinesRecordOverMaxLine(t *testing.T) {
	in := io.MultiReader(strings.NewReader("{}\n\n{\"a\": 1}\n"), &xs{n: MaxLine + 2*StreamBuf})
	v := StreamLines(bufio.NewReaderSize(in, StreamBuf), plain{jsonl: true})
	want := Damage(KindMalformedRecord, 13, "line 4 is longer than %d bytes", MaxLine)
	if v.Status != want.Status || v.Kind != want.Kind || v.Offset != want.Offset || v.Detail != want.Detail {
		t.Fatalf("got %+v, want %+v", v, want)
	}
}
