package state

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"github.com/sessionmedic/sessionmedic/heal/fsio"
)

// A tail cut's entry counts, for the quarantine's bounds, the bytes it holds: the prune of a
// bound above them keeps it.
func TestTailEntryCountsWhatItHolds(t *testing.T) {
	q := NewQuarantine(t.TempDir(), fsio.FS{})
	orig := []byte(strings.Repeat("{\"a\":1}\n", 300000) + "{\"b\":")
	keep := int64(len(orig) - 5)
	src := bytes.NewReader(orig)
	now := time.Now()
	m := &Manifest{Path: "/x/s.jsonl"}
	if _, err := q.PutTail(m, int64(len(orig)), keep, src, sha(orig), sha(orig[:keep]), nil, now); err != nil {
		t.Fatal(err)
	}
	if m.Holds() != 5 {
		t.Fatalf("holds %d", m.Holds())
	}
	got, err := m.Join(orig[:keep])
	if err != nil || !bytes.Equal(got, orig) {
		t.Fatalf("joined %d bytes, %v", len(got), err)
	}
	if _, err := m.Join(orig[:keep-1]); err == nil {
		t.Fatal("joined onto a file shorter than the prefix")
	}
	if n, err := q.Prune(now, 0, 1<<20); err != nil || n != 0 {
		t.Fatalf("pruned %d (%v): the entry holds 5 bytes", n, err)
	}
	if _, err := q.PutTail(&Manifest{Path: "/x/s.jsonl"}, int64(len(orig)), 0, src, sha(orig), sha(nil), nil, now); err == nil {
		t.Fatal("a tail entry of the whole file")
	}
}
