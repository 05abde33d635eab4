package heal

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/sessionmedic/sessionmedic/policy"
)

func fuzzRule(format string) *policy.Rule {
	return &policy.Rule{Name: "fuzz-" + format, Format: format, Lock: policy.Lock{Protocol: "none"},
		Strategies: []policy.Strategy{"salvage", "last-good"}, KeepLastGood: true, Mode: "heal",
		Limits: policy.Limits{MaxLoss: 1, MaxFileSize: 1 << 20}}
}

// fuzzHeal checks the heal properties on one input: a healthy file is never written, a
// healed file validates, and a second heal changes nothing.
func fuzzHeal(t *testing.T, format, name string, data []byte) {
	dir := t.TempDir()
	p := filepath.Join(dir, name)
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, data, 0o644); err != nil {
		t.Fatal(err)
	}
	cfg := &policy.Config{Version: 1, StateDir: filepath.Join(dir, ".state")}
	e := New(cfg, Options{QuietCheck: -1}) // nobody else writes the file: no quiet wait per heal
	tg := Target{Path: p, Rule: fuzzRule(format)}
	r := e.Heal(context.Background(), tg, false)
	after, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	switch {
	case r.Verdict == Healthy || r.Action != ActionHealed:
		if !bytes.Equal(after, data) {
			t.Fatalf("%s verdict %s action %s: the file was changed", format, r.Verdict, r.Action)
		}
	default:
		if c := e.Check(tg); c.Verdict != Healthy {
			t.Fatalf("healed %s output does not validate: %s %s\ninput %q\noutput %q", format, c.Kind, c.Detail, data, after)
		}
		if r.Strategy == "salvage" && format == "json" && !bytes.HasPrefix(data, after) {
			t.Fatalf("JSON salvage is not a prefix of the input")
		}
		q, err := os.ReadFile(filepath.Join(r.Quarantine, filepath.Base(name)))
		if err != nil || !bytes.Equal(q, data) {
			t.Fatalf("quarantine does not hold the original bytes")
		}
		r2 := e.Heal(context.Background(), tg, false)
		again, _ := os.ReadFile(p)
		if r2.Action == ActionHealed || !bytes.Equal(again, after) {
			t.Fatalf("a second heal changed the file: %+v", r2)
		}
	}
}

func seedFromSamples(f *testing.F, ext string) {
	filepath.Walk(samples, func(p string, fi os.FileInfo, err error) error {
		if err == nil && fi.Mode().IsRegular() && strings.HasSuffix(p, ext) && fi.Size() < 64<<10 {
			if b, err := os.ReadFile(p); err == nil {
				f.Add(b)
			}
		}
		return nil
	})
}

func FuzzHealJSON(f *testing.F) {
	for _, s := range []string{`{}`, `{"a":1}{"a":`, `{"a": [1, 2]}` + "\n  }\n}", `[]`, `{"a":"\u00e9"} x`, "\xef\xbb\xbf{}", `{"a":`, ``, "\x00\x00"} {
		f.Add([]byte(s))
	}
	seedFromSamples(f, ".json")
	f.Fuzz(func(t *testing.T, data []byte) { fuzzHeal(t, "json", "s.json", data) })
}

func FuzzHealJSONL(f *testing.F) {
	for _, s := range []string{"{}\n", "{\"a\":1}\n{\"a\":", "{\"a\":1}\n[1]\n{\"b\":2}\n", "\n\n", "{\"a\":1}", "{\"x\":1}\r\n"} {
		f.Add([]byte(s))
	}
	seedFromSamples(f, ".jsonl")
	f.Fuzz(func(t *testing.T, data []byte) { fuzzHeal(t, "jsonl", "s.jsonl", data) })
}

// FuzzHealNanobot runs the same properties through an app profile with a checklist.
func FuzzHealNanobot(f *testing.F) {
	seedFromSamples(f, ".jsonl")
	f.Fuzz(func(t *testing.T, data []byte) { fuzzHeal(t, "nanobot", "dGVsZWdyYW06MTIzNDU2Nzg5.jsonl", data) })
}
