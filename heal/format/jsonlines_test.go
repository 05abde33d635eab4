package format

import (
	"bytes"
	"testing"
)

// The generic JSONL profile is JSON Lines (jsonlines.org): a line holds any JSON value, and
// the last line's '\n' is optional. Every way of judging a file agrees: in memory, streamed,
// with lines longer than the window, and the salvage keeps the values.
func TestGenericJSONLIsJSONLines(t *testing.T) {
	p := JSONLog
	for _, c := range []struct {
		in   string
		want string // a damage kind, or "" for healthy
	}{
		{"[1,2]\n\"str\"\n3\n", ""},
		{"{\"a\":1}\n[2]", ""},
		{"1\n2", ""},
		{"null\ntrue\n{}\n", ""},
		{"{\"a\":1}\n{\"a\"", KindTruncated},
		{"1\n[2", KindTruncated},
		{"1\nnul\n2\n", KindMalformedRecord},
		{"{} x\n", KindMalformedRecord},
		{"1\n\x00\x00\n", KindMalformedRecord},
	} {
		data := []byte(c.in)
		check := func(how string, v Verdict) {
			t.Helper()
			got := ""
			if v.Status != Healthy {
				got = v.Kind
			}
			if got != c.want {
				t.Errorf("%s of %q: %s %q (%s), want %q", how, c.in, v.Status, v.Kind, v.Detail, c.want)
			}
		}
		check("Inspect", Inspect(p, File{}, data))
		v, _, err := StreamVerdict(bytes.NewReader(data), 0, int64(len(data)), p)
		if err != nil {
			t.Fatal(err)
		}
		check("StreamVerdict", v)
		withWindow(2, func() {
			v, _, err := StreamVerdict(bytes.NewReader(data), 0, int64(len(data)), p)
			if err != nil {
				t.Fatal(err)
			}
			check("StreamVerdict, lines over the window", v)
		})
	}
	if got := Salvage(p, "", []byte("1\n{bad\n[2]\n\"s\"\n")); string(got) != "1\n[2]\n\"s\"\n" {
		t.Errorf("salvage keeps %q", got)
	}
	if !AppendedValid(p, []byte("[1]\n\"x\"\n")) || AppendedValid(p, []byte("[1]\n\"x\"")) {
		t.Error("AppendedValid of JSON Lines values")
	}
	// An app's own JSONL profile stays one object record per line, '\n' ended.
	if v := Inspect(plain{jsonl: true}, File{}, []byte("{}\n[1]\n")); v.Kind != KindMalformedRecord {
		t.Errorf("an object-record profile: %+v", v)
	}
}
