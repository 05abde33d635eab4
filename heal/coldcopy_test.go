package heal

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestColdLogsCopiedWhenWritten: a transcript its app last wrote days ago gets no last-good
// copy when first seen healthy; once its app appends to it, it gets one (its bytes then).
// A recent transcript, one whose rule restores deleted files, and a document that is not
// append-only are copied at first sight, whatever their age.
func TestColdLogsCopiedWhenWritten(t *testing.T) {
	cc := codingApps[0]
	sid := strings.TrimSuffix(cc.name, ".jsonl")
	rec := func(i int) string {
		return fmt.Sprintf(`{"parentUuid":null,"type":"user","message":{"role":"user","content":"m%d"},"uuid":"u%d","sessionId":"%s"}`+"\n", i, i, sid)
	}
	old := time.Now().Add(-3 * 24 * time.Hour)
	for _, c := range []struct {
		name     string
		size     int // records
		age      time.Time
		restore  bool
		wantCopy bool
	}{
		{"cold", 10, old, false, false},
		{"cold, streamed", 20000, old, false, false},
		{"recent", 10, time.Now(), false, true},
		{"cold, deleted ones restored", 10, old, true, true},
	} {
		e, root := bigEngine(t, 0)
		p := filepath.Join(root, "projects", "-p", cc.name)
		os.MkdirAll(filepath.Dir(p), 0o755)
		var b []byte
		for i := 0; i < c.size; i++ {
			b = append(b, rec(i)...)
		}
		os.WriteFile(p, b, 0o600)
		os.Chtimes(p, c.age, c.age)
		r := appRule(t, "claude-code", root)
		r.RestoreDeleted = c.restore
		tg := Target{Path: p, Rule: r}
		if rep := e.Heal(context.Background(), tg, false); rep.Verdict != Healthy {
			t.Fatalf("%s: %+v", c.name, rep)
		}
		if got := e.LastGood.Load(p); (got != nil) != c.wantCopy || (got != nil && !bytes.Equal(got, b)) {
			t.Fatalf("%s (%d bytes): a copy of %d bytes after the first look, want one: %v", c.name, len(b), len(got), c.wantCopy)
		}
		// The app appends: the file is copied as it is now (an incremental pass).
		appendTo(t, p, []byte(rec(-1)))
		b = append(b, rec(-1)...)
		if rep := e.Heal(context.Background(), tg, false); rep.Verdict != Healthy {
			t.Fatalf("%s, appended: %+v", c.name, rep)
		}
		got := e.LastGood.Load(p)
		if c.wantCopy {
			continue // copied before: the copy stays the older prefix
		}
		if !bytes.Equal(got, b) {
			t.Fatalf("%s: after an append the copy holds %d bytes, want the file's %d", c.name, len(got), len(b))
		}
	}
	// A document is copied at first sight, however old.
	e, root := bigEngine(t, 0)
	p := filepath.Join(root, "s.json")
	os.WriteFile(p, []byte(`{"messages":[]}`), 0o600)
	os.Chtimes(p, old, old)
	tg := Target{Path: p, Rule: fuzzRule("json")}
	if rep := e.Heal(context.Background(), tg, false); rep.Verdict != Healthy || e.LastGood.Load(p) == nil {
		t.Fatalf("an old JSON document: %+v, copy %q", rep, e.LastGood.Load(p))
	}
}
