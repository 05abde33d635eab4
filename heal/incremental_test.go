package heal

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/sessionmedic/sessionmedic/heal/format"
	"github.com/sessionmedic/sessionmedic/policy"
)

func jsonlLines(from, n int) []byte {
	var b bytes.Buffer
	for i := from; i < from+n; i++ {
		fmt.Fprintf(&b, "{\"id\":%d,\"role\":\"user\",\"content\":\"message %d %s\"}\n", i, i, strings.Repeat("x", 80))
	}
	return b.Bytes()
}

func incEngine(t testing.TB) (*Engine, Target) {
	dir := t.TempDir()
	e := New(&policy.Config{Version: 1, StateDir: filepath.Join(dir, ".state")}, Options{})
	r := fuzzRule("jsonl")
	r.KeepLastGood = false
	r.Limits.MaxFileSize = 1 << 30
	return e, Target{Path: filepath.Join(dir, "log.jsonl"), Rule: r}
}

func appendTo(t testing.TB, p string, b []byte) {
	f, err := os.OpenFile(p, os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		t.Fatal(err)
	}
	f.Write(b)
	f.Close()
}

// passes runs one check and says whether it was incremental.
func pass(t *testing.T, e *Engine, tg Target) (Report, bool) {
	t.Helper()
	before, _ := e.IncrementalStats()
	r := e.Check(tg)
	after, _ := e.IncrementalStats()
	return r, after > before
}

func TestIncrementalAppendOnly(t *testing.T) {
	e, tg := incEngine(t)
	os.WriteFile(tg.Path, jsonlLines(0, 2000), 0o644)
	if r, inc := pass(t, e, tg); r.Verdict != Healthy || inc {
		t.Fatalf("first pass must be full and healthy: %+v inc=%v", r, inc)
	}
	appendTo(t, tg.Path, jsonlLines(2000, 3))
	if r, inc := pass(t, e, tg); r.Verdict != Healthy || !inc {
		t.Fatalf("an append must be validated incrementally: %+v inc=%v", r, inc)
	}
	// Damage appended after a healthy prefix: the incremental pass must not call it healthy.
	appendTo(t, tg.Path, []byte("{\"id\": torn"))
	if r, inc := pass(t, e, tg); r.Verdict != Damaged || r.Kind != format.KindTruncated || inc {
		t.Fatalf("torn append: %+v inc=%v", r, inc)
	}
}

func TestIncrementalFallsBackOnEveryOtherChange(t *testing.T) {
	orig := jsonlLines(0, 2000)
	cases := map[string]func(p string){
		"truncation": func(p string) { os.Truncate(p, int64(len(orig))-50) },
		"rewrite in place, same size": func(p string) {
			b := bytes.Replace(orig, []byte(`"id":1999,`), []byte(`"id":1999 `), 1) // malformed last line
			os.WriteFile(p, b, 0o644)
		},
		"replacement by rename": func(p string) {
			tmp := p + ".new"
			os.WriteFile(tmp, append(append([]byte{}, orig[:len(orig)/2]...), "garbage\n"...), 0o644)
			os.Rename(tmp, p)
		},
		"in-place edit of the prefix, then an append": func(p string) {
			f, _ := os.OpenFile(p, os.O_WRONLY, 0)
			f.WriteAt([]byte(`"`), int64(len(orig))-100) // inside the window before the old end
			f.Close()
			appendTo(t, p, jsonlLines(5000, 1))
		},
		"in-place edit of the head": func(p string) {
			f, _ := os.OpenFile(p, os.O_WRONLY, 0)
			f.WriteAt([]byte(`"`), 3)
			f.Close()
		},
	}
	for name, change := range cases {
		t.Run(name, func(t *testing.T) {
			e, tg := incEngine(t)
			os.WriteFile(tg.Path, orig, 0o644)
			pass(t, e, tg)
			change(tg.Path)
			r, inc := pass(t, e, tg)
			if inc {
				t.Fatalf("%s was validated incrementally", name)
			}
			if r.Verdict != Damaged {
				t.Fatalf("%s: want damaged, got %+v", name, r)
			}
		})
	}
}

func TestIncrementalHealStillRepairs(t *testing.T) {
	e, tg := incEngine(t)
	os.WriteFile(tg.Path, jsonlLines(0, 100), 0o644)
	e.Heal(context.Background(), tg, false)
	appendTo(t, tg.Path, jsonlLines(100, 1))
	if r := e.Heal(context.Background(), tg, false); r.Verdict != Healthy {
		t.Fatalf("%+v", r)
	}
	appendTo(t, tg.Path, []byte("{\"id\":"))
	r := e.Heal(context.Background(), tg, false)
	if r.Action != ActionHealed {
		t.Fatalf("torn tail after incremental passes: %+v", r)
	}
	if b, _ := os.ReadFile(tg.Path); !bytes.Equal(b, jsonlLines(0, 101)) {
		t.Fatal("salvage after incremental passes lost records")
	}
}

// BenchmarkAppend64MiB: the cost of re-validating a 64 MiB JSONL session after a 1 KiB
// append, incrementally and in full.
func BenchmarkAppend64MiB(b *testing.B) {
	e, tg := incEngine(b)
	var buf bytes.Buffer
	for i := 0; buf.Len() < 64<<20; i += 1000 {
		buf.Write(jsonlLines(i, 1000))
	}
	os.WriteFile(tg.Path, buf.Bytes(), 0o644)
	if r := e.Check(tg); r.Verdict != Healthy {
		b.Fatal(r)
	}
	chunk := jsonlLines(0, 10)[:0]
	for len(chunk) < 1024 {
		chunk = append(chunk, jsonlLines(len(chunk), 1)...)
	}
	b.Run("incremental", func(b *testing.B) {
		for i := 0; i < b.N; i++ {
			appendTo(b, tg.Path, chunk)
			if r := e.Check(tg); r.Verdict != Healthy {
				b.Fatal(r)
			}
		}
	})
	b.Run("full", func(b *testing.B) {
		for i := 0; i < b.N; i++ {
			appendTo(b, tg.Path, chunk)
			e.inc.Drop(tg.Path)
			if r := e.Check(tg); r.Verdict != Healthy {
				b.Fatal(r)
			}
		}
	})
}

// A file the engine healed is validated from its healed end when its app appends again (the
// heal's version is remembered as one judged in full), and damage appended after it is still
// found; a one-shot engine (the CLI) remembers nothing.
func TestIncrementalAfterHeal(t *testing.T) {
	e, tg := incEngine(t)
	os.WriteFile(tg.Path, append(jsonlLines(0, 100), `{"id":`...), 0o644)
	if r := e.Heal(context.Background(), tg, false); r.Action != ActionHealed {
		t.Fatalf("%+v", r)
	}
	appendTo(t, tg.Path, jsonlLines(100, 1))
	if r, inc := pass(t, e, tg); r.Verdict != Healthy || !inc {
		t.Fatalf("the append after the heal: %s, incremental %v", r.Verdict, inc)
	}
	appendTo(t, tg.Path, []byte(`{"id":`))
	if r, _ := pass(t, e, tg); r.Verdict != Damaged {
		t.Fatalf("a torn append after the heal: %+v", r)
	}
	one := New(&policy.Config{Version: 1, StateDir: filepath.Join(t.TempDir(), ".state")}, Options{OneShot: true})
	os.WriteFile(tg.Path, append(jsonlLines(0, 100), `{"id":`...), 0o644)
	if r := one.Heal(context.Background(), tg, false); r.Action != ActionHealed {
		t.Fatalf("%+v", r)
	}
	appendTo(t, tg.Path, jsonlLines(100, 1))
	if r, inc := pass(t, one, tg); r.Verdict != Healthy || inc {
		t.Fatalf("one-shot: the append after the heal: %s, incremental %v", r.Verdict, inc)
	}
}
