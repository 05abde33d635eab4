package heal

import (
	"bufio"
	"bytes"
	"context"
	"os"
	"strings"
	"testing"

	"github.com/sessionmedic/sessionmedic/heal/apps"
	"github.com/sessionmedic/sessionmedic/heal/format"
)

// streamLines must agree with the in-memory checklist on every input.
func TestStreamAgreesWithInMemory(t *testing.T) {
	inputs := []string{
		"{\"a\":1}\n{\"b\":2}\n",
		"{\"a\":1}\n{\"b\":",
		"{\"a\":1}\n{\"b\":2}",
		"{\"a\":1}\nnope\n{\"b\":2}\n",
		"{\"a\":1}\n[1]\n",
		"{\"a\":\"\xff\"}\n",
		"\n\n{\"a\":1}\r\n\n",
		"{\"a\":\"" + strings.Repeat("x", 5000) + "\"}\n{\"b\":1}\n", // longer than the reader's buffer
		"{\"a\":\"" + strings.Repeat("y", 5000) + "\n",
		"{\"type\":\"session\",\"id\":\"s\",\"version\":3}\n{\"type\":\"message\",\"id\":\"1\"}\n",
		"{\"type\":\"message\",\"id\":\"1\"}\n",
		"{\"type\":\"session\",\"id\":\"s\"}\n{\"id\":\"1\"}\n",
	}
	reg := apps.Registry()
	for _, typ := range []format.Profile{format.JSONLog, reg.Profile("openclaw", "/x/s.jsonl")} {
		for _, in := range inputs {
			want := format.Inspect(typ, format.File{Path: "/x/s.jsonl"}, []byte(in))
			got := format.StreamLines(bufio.NewReaderSize(strings.NewReader(in), 16), typ)
			if got.Status != want.Status || got.Kind != want.Kind || got.Offset != want.Offset {
				t.Errorf("%s %q: stream %s %s@%d, in memory %s %s@%d", typ.Name(), in, got.Status, got.Kind, got.Offset, want.Status, want.Kind, want.Offset)
			}
		}
	}
}

func TestLargeLogIsStreamedAndStillHealed(t *testing.T) {
	e, tg := incEngine(t)
	var b bytes.Buffer
	for i := 0; b.Len() <= streamThreshold; i += 1000 {
		b.Write(jsonlLines(i, 1000))
	}
	os.WriteFile(tg.Path, b.Bytes(), 0o644)
	if r := e.Check(tg); r.Verdict != Healthy {
		t.Fatalf("large healthy log: %+v", r)
	}
	appendTo(t, tg.Path, []byte("{\"torn\":"))
	r := e.Heal(context.Background(), tg, false)
	if r.Action != ActionHealed || r.Strategy != "salvage" {
		t.Fatalf("large log with a torn tail (under the plan limit): %+v", r)
	}
	if got, _ := os.ReadFile(tg.Path); !bytes.Equal(got, b.Bytes()) {
		t.Fatal("salvage of the large log is not the healthy prefix")
	}
}
