package heal

import (
	"bytes"
	"context"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// TestAppDocumentsJudgedStreaming: an app's JSON document over the big-file size (a threshold
// of one byte) is judged streaming, element by element, and healed as the same document
// judged held whole: the same verdict, action, plan, bytes after and quarantine, for every
// sample document of CoPaw and PraisonAI.
func TestAppDocumentsJudgedStreaming(t *testing.T) {
	n, healed := 0, 0
	for _, app := range []struct{ preset, dir string }{{"copaw", "copaw"}, {"praisonai", "praisonai"}} {
		root := filepath.Join("testdata/samples", app.dir)
		err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
			if err != nil || !d.Type().IsRegular() || !strings.HasSuffix(path, ".json") {
				return err
			}
			data, err := os.ReadFile(path)
			if err != nil {
				return err
			}
			rel := filepath.Join("sessions", filepath.Base(path))
			// A last-good copy: the case's healthy version of the file, where there is one.
			parts := strings.Split(filepath.ToSlash(path), "/")
			parts[3] = "healthy"
			lastGood, _ := os.ReadFile(filepath.Join(parts...))
			for _, lg := range [][]byte{nil, lastGood} {
				r1, after1, q1, _ := healApp(t, app.preset, rel, data, lg, 0)
				r2, after2, q2, big := healApp(t, app.preset, rel, data, lg, 1)
				if r1.Verdict != r2.Verdict || r1.Kind != r2.Kind || r1.Offset != r2.Offset || r1.Action != r2.Action || r1.Strategy != r2.Strategy ||
					r1.LostRecords != r2.LostRecords || r1.LostBytes != r2.LostBytes || r1.Reason != r2.Reason || !slices.Equal(r1.Tried, r2.Tried) {
					t.Errorf("%s (last-good %v):\nheld     %+v\nstreamed %+v", path, lg != nil, r1, r2)
				}
				if !bytes.Equal(after1, after2) || !bytes.Equal(q1, q2) {
					t.Errorf("%s: the heals wrote or quarantined different bytes", path)
				}
				if r1.Verdict == Damaged && !big && len(data) > 1 {
					t.Errorf("%s: damaged, not planned streaming", path)
				}
				if r1.Action == ActionHealed {
					healed++
				}
			}
			n++
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	if n < 10 || healed < 5 {
		t.Fatalf("only %d documents, %d heals", n, healed)
	}
}

// A healthy document judged streaming is not held, yet its last-good copy is kept, copied
// from the file; the next damage is healed from that copy.
func TestAppDocumentStreamedKeepsLastGood(t *testing.T) {
	e, root := bigEngine(t, 1)
	p := filepath.Join(root, "sessions", "console", "default_console--default.json")
	os.MkdirAll(filepath.Dir(p), 0o755)
	healthy := []byte(`{"agent": {"memory": {"content": [[{"id": "1", "name": "user", "role": "user", "content": "hi", "metadata": {}}, []]]}, "name": "QwenPaw"}}`)
	if err := os.WriteFile(p, healthy, 0o600); err != nil {
		t.Fatal(err)
	}
	tg := Target{Path: p, Rule: appRule(t, "copaw", root)}
	in := e.inspect(tg)
	if in.verdict.Status != Healthy || in.data != nil || !in.copyFrom {
		t.Fatalf("inspection: %+v (held %d bytes, copyFrom %v)", in.verdict, len(in.data), in.copyFrom)
	}
	if r := e.Heal(context.Background(), tg, false); r.Verdict != Healthy {
		t.Fatalf("heal: %+v", r)
	}
	if got := e.LastGood.Load(p); !bytes.Equal(got, healthy) {
		t.Fatalf("last-good copy %q", got)
	}
	// A schema damage no salvage can mend: the copy is the repair.
	damaged := bytes.Replace(healthy, []byte(`"role": "user", `), nil, 1)
	if err := os.WriteFile(p, damaged, 0o600); err != nil {
		t.Fatal(err)
	}
	r := e.Heal(context.Background(), tg, false)
	after, _ := os.ReadFile(p)
	if r.Action != ActionHealed || r.Strategy != "last-good" || !bytes.Equal(after, healthy) {
		t.Fatalf("heal of the damage: %+v; file %q", r, after)
	}
}
