package heal

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"testing"
)

// healAllocs heals tg with e and returns the report and the bytes it allocated.
func healAllocs(t *testing.T, e *Engine, tg Target) (Report, uint64) {
	t.Helper()
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	r := e.Heal(context.Background(), tg, false)
	runtime.ReadMemStats(&after)
	return r, after.TotalAlloc - before.TotalAlloc
}

// jsonlOf is n bytes or more of JSONL records.
func jsonlOf(n int) []byte {
	var b []byte
	for i := 0; len(b) < n; i++ {
		b = fmt.Appendf(b, `{"role":"user","seq":%d,"content":"%s"}`+"\n", i, bytes.Repeat([]byte("text "), 20+i%50))
	}
	return b
}

// TestPlainFilesOverTheBigSizeAreNotHeld: a plain JSON document or JSONL file over the
// big-file size is judged and copied from the file, never held: a healthy document's
// last-good copy is taken from the file, and a JSONL file that is a strict line-aligned
// prefix of its last-good copy (a lost write) is told from the two files and healed from the
// copy's file — as a small file whose copy is big is too, the copy never loaded.
func TestPlainFilesOverTheBigSizeAreNotHeld(t *testing.T) {
	t.Run("json/healthy", func(t *testing.T) {
		e, root := bigEngine(t, 0)
		var doc []byte
		doc = append(doc, `{"messages":[`...)
		for i := 0; len(doc) < 3*bigFile; i++ {
			if i > 0 {
				doc = append(doc, ',')
			}
			doc = fmt.Appendf(doc, `{"i":%d,"content":"%s"}`, i, bytes.Repeat([]byte("text "), 30))
		}
		doc = append(doc, "]}\n"...)
		p := filepath.Join(root, "s.json")
		if err := os.WriteFile(p, doc, 0o600); err != nil {
			t.Fatal(err)
		}
		tg := Target{Path: p, Rule: bigRule("json", root)}
		if in := e.inspect(tg); in.verdict.Status != Healthy || in.data != nil || !in.copyFrom {
			t.Fatalf("inspection: %+v, held %d bytes, copied from the file %v", in.verdict, len(in.data), in.copyFrom)
		}
		r, alloc := healAllocs(t, e, tg)
		if r.Verdict != Healthy || r.CopyErr != "" {
			t.Fatalf("%+v", r)
		}
		if got := e.LastGood.Get(p); !bytes.Equal(got, doc) {
			t.Fatalf("last-good copy of %d bytes, want the document's %d", len(got), len(doc))
		}
		if alloc > uint64(len(doc))/3 {
			t.Errorf("the check of a healthy %d-byte document allocated %d bytes", len(doc), alloc)
		}
	})
	for _, c := range []struct {
		name       string
		file, full int
	}{
		{"jsonl/big-prefix-of-its-copy", 3 * bigFile, 4 * bigFile},
		{"jsonl/small-prefix-of-a-big-copy", 64 << 10, 3 * bigFile},
		{"jsonl/mid-prefix-of-its-copy", 2 << 20, 3 << 20},
	} {
		t.Run(c.name, func(t *testing.T) {
			e, root := bigEngine(t, 0)
			full := jsonlOf(c.full)
			n := bytes.LastIndexByte(full[:c.file], '\n') + 1
			p := filepath.Join(root, "s.jsonl")
			if err := os.WriteFile(p, full[:n], 0o600); err != nil {
				t.Fatal(err)
			}
			if err := e.LastGood.Put(p, full); err != nil {
				t.Fatal(err)
			}
			tg := Target{Path: p, Rule: bigRule("jsonl", root)}
			if in := e.inspect(tg); in.verdict.Kind != "truncated" || !in.big || in.data != nil || in.ctx.lastGood != nil {
				t.Fatalf("inspection: %+v, planned from the file %v, held %d bytes and a copy of %d", in.verdict, in.big, len(in.data), len(in.ctx.lastGood))
			}
			fromFile := false
			e.onStep = func(s, _ string) { fromFile = fromFile || s == "last-good-from-file" }
			r, alloc := healAllocs(t, e, tg)
			// (A copy up to the big-file size is held for the plan, as a file of that size is.)
			if r.Action != ActionHealed || r.Strategy != "last-good" || r.Kind != "truncated" || r.Offset != int64(n) || fromFile != (len(full) > bigFile) {
				t.Fatalf("%+v (the copy taken from its file: %v)", r, fromFile)
			}
			if got := read(t, p); !bytes.Equal(got, full) {
				t.Fatalf("healed to %d bytes, want the copy's %d", len(got), len(full))
			}
			// What it allocates is the survey's table of the copy's lines and the union's
			// keys, a few dozen bytes a line, as they grow (the planner on held bytes
			// allocated 7.5 times the copy).
			if len(full) > bigFile && alloc > 2*uint64(n+len(full)) {
				t.Errorf("the heal of a %d-byte file from its %d-byte copy allocated %d bytes", n, len(full), alloc)
			}
			t.Logf("allocated %d bytes", alloc)
		})
	}
}
