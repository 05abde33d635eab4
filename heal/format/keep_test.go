package format

import (
	"bytes"
	"strings"
	"testing"
)

// TestPlanKeepHoldsDamageAHunkAtATime: a run of damaged lines longer than a hunk (here 10,000
// one-byte garbage lines, over hunkLines) is repaired in pieces: the records around it are
// kept byte for byte, the garbage is dropped and costs its bytes (with their newlines), no
// record, and the result
// is the same as the in-memory KeepLines.
func TestPlanKeepHoldsDamageAHunkAtATime(t *testing.T) {
	p := rejoiner{plain{jsonl: true}}
	head := `{"type":"user","text":"one"}` + "\n"
	tail := `{"type":"user","text":"two"}` + "\n"
	garbage := strings.Repeat("x\n", 10000)
	data := []byte(head + garbage + tail)
	s, fig, err := PlanKeep(p, "f.jsonl", bytes.NewReader(data), int64(len(data)))
	if err != nil {
		t.Fatal(err)
	}
	got, err := s.Bytes(bytes.NewReader(data))
	if err != nil || string(got) != head+tail {
		t.Fatalf("salvage %q (%v)", got, err)
	}
	if fig.Keep != 2 || fig.Total != 2 || fig.Lost != 0 || fig.LostBytes != int64(len(garbage)) {
		t.Fatalf("figures %+v: want 2 kept of 2, nothing lost but the garbage's %d bytes (with their newlines)", fig, len(garbage))
	}
	if whole := KeepLines(p, "f.jsonl", data); !bytes.Equal(whole, got) {
		t.Fatalf("in memory %q", whole)
	}
}
