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
	"time"

	"github.com/sessionmedic/sessionmedic/policy"
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
				// The engine as it runs: planned from the file at this size too.
				r3, after3, q3, big3 := healAppTweak(t, app.preset, rel, data, lg, 0, Options{}, func(e *Engine) { e.heldPlans = false })
				if r1.Verdict == Damaged && !big3 && len(data) > 1 {
					t.Errorf("%s: damaged, %d bytes, not planned from the file", path, len(data))
				}
				if r1.Action != r3.Action || r1.Strategy != r3.Strategy || r1.LostRecords != r3.LostRecords || r1.LostBytes != r3.LostBytes ||
					!bytes.Equal(after1, after3) || !bytes.Equal(q1, q3) {
					t.Errorf("%s: the heal as it runs differs from the held one:\nheld %+v\nruns %+v", path, r1, r3)
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

// TestAppDocumentRewritesStreaming: the rewrites of an app document that parses (PraisonAI's
// reconcile of children_ids and restore-fields, OpenClaw's drop-invalid-entries), planned on
// the document streaming as a splice of it (a threshold of one byte), heal each sample tree
// as they do on the document held whole: the same reports and the same bytes in every file.
func TestAppDocumentRewritesStreaming(t *testing.T) {
	type tree struct{ preset, dir string }
	var trees []tree
	for _, app := range []struct{ preset, dir string }{{"praisonai", "praisonai"}, {"openclaw", "openclaw"}} {
		cases, _ := filepath.Glob(filepath.Join("testdata/samples", app.dir, "*"))
		for _, c := range cases {
			if st, err := os.Stat(c); err == nil && st.IsDir() {
				trees = append(trees, tree{app.preset, c})
			}
		}
	}
	rewrites := map[string]int{}
	for _, order := range []int{0, 1} {
		for _, tr := range trees {
			var runs [2][]Report
			var files [2]map[string]string
			for k, threshold := range []int64{0, 1} {
				root := filepath.Join(t.TempDir(), "tree")
				copyTree(t, tr.dir, root)
				r, ok := policy.PresetRule(tr.preset, policy.Env{Home: t.TempDir(), Getenv: func(string) string { return "" }, Exists: func(string) bool { return false }})
				if !ok {
					t.Fatalf("no preset %s", tr.preset)
				}
				r.Name, r.Paths, r.Lock.Wait = tr.preset, []string{root}, 500*time.Millisecond
				// The opt-in rewrites first (a tie goes to them) or last, and no max_loss.
				if order == 0 {
					r.Strategies = append([]policy.Strategy{"restore-fields", "drop-invalid-entries"}, r.Strategies...)
				} else {
					r.Strategies = append(r.Strategies, "restore-fields", "drop-invalid-entries", "reconcile")
				}
				r.Limits.MaxLoss = 1
				e := New(&policy.Config{Version: 1, StateDir: filepath.Join(t.TempDir(), "state"), Rules: []policy.Rule{r}}, Options{})
				e.bigThreshold = threshold
				// A last-good copy of each PraisonAI session: its healthy version.
				if tr.preset == "praisonai" {
					names, _ := filepath.Glob(filepath.Join(root, "sessions", "*.json"))
					for _, n := range names {
						if b, err := os.ReadFile(filepath.Join("testdata/samples/praisonai/healthy/sessions", filepath.Base(n))); err == nil {
							e.LastGood.Put(n, b)
						}
					}
				}
				runs[k] = runAll(t, e, true)
				files[k] = map[string]string{}
				filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
					if err == nil && d.Type().IsRegular() {
						b, _ := os.ReadFile(p)
						files[k][p[len(root):]] = string(b)
					}
					return nil
				})
			}
			if len(runs[0]) != len(runs[1]) {
				t.Fatalf("%s: %d reports held, %d streamed", tr.dir, len(runs[0]), len(runs[1]))
			}
			for i := range runs[0] {
				a, b := runs[0][i], runs[1][i]
				if a.Verdict != b.Verdict || a.Kind != b.Kind || a.Action != b.Action || a.Strategy != b.Strategy ||
					a.LostRecords != b.LostRecords || a.LostBytes != b.LostBytes || !slices.Equal(a.Tried, b.Tried) || a.Reason != b.Reason {
					t.Errorf("%s %s:\nheld     %+v\nstreamed %+v", tr.dir, filepath.Base(a.Path), a, b)
				}
				if a.Action == ActionHealed {
					rewrites[a.Strategy]++
				}
			}
			for p, held := range files[0] {
				if strings.Contains(p, "/quarantine/") || strings.Contains(p, "/state/") {
					continue
				}
				if files[1][p] != held {
					t.Errorf("%s%s: the heals left different bytes", tr.dir, p)
				}
			}
		}
	}
	if rewrites["reconcile"] == 0 || rewrites["restore-fields"] == 0 || rewrites["drop-invalid-entries"] == 0 {
		t.Fatalf("heals by strategy %v: a rewrite never healed, the test tells little", rewrites)
	}
	t.Logf("%d trees, heals by strategy %v", len(trees), rewrites)
}

// An app without a lock that rewrites its document in place (truncating it first) while the
// tail a cut removes is copied into quarantine cuts the copy short: the heal backs off
// (busy), keeps no entry, leaves the app's bytes as they are, and heals the damage once the
// file is quiet again. It was refused, "quarantine: unexpected EOF" (the race suite's
// CoPaw sessions).
func TestDocumentRewrittenDuringItsQuarantine(t *testing.T) {
	healthy := []byte(`{"agent": {"memory": {"content": [[{"id": "1", "name": "user", "role": "user", "content": "hi", "metadata": {}}, []]]}, "name": "QwenPaw"}}`)
	damaged := append(bytes.Clone(healthy), []byte(`t": "x"}}`)...) // another write's bytes after it
	var p string
	rewrite := true
	e, root := bigEngineWith(t, 1, Options{Faults: func(op, path string) error {
		if rewrite && op == "create" && strings.Contains(path, string(filepath.Separator)+"quarantine"+string(filepath.Separator)) {
			rewrite = false
			if err := os.Truncate(p, int64(len(healthy)/2)); err != nil { // the app's rewrite begins
				t.Error(err)
			}
		}
		return nil
	}})
	p = filepath.Join(root, "sessions", "console", "default_console--default.json")
	os.MkdirAll(filepath.Dir(p), 0o755)
	if err := os.WriteFile(p, damaged, 0o600); err != nil {
		t.Fatal(err)
	}
	tg := Target{Path: p, Rule: appRule(t, "copaw", root)}
	r := e.Heal(context.Background(), tg, false)
	after, _ := os.ReadFile(p)
	if rewrite || r.Verdict != Busy || r.Action != ActionNone || !bytes.Equal(after, damaged[:len(healthy)/2]) {
		t.Fatalf("rewritten while quarantined (the rewrite made: %v): %+v; file %q", !rewrite, r, after)
	}
	if all, _ := e.Quarantine.List(); len(all) != 0 {
		t.Fatalf("%d quarantine entries left", len(all))
	}
	// The app's rewrite ends, torn as before: healed.
	if err := os.WriteFile(p, damaged, 0o600); err != nil {
		t.Fatal(err)
	}
	r = e.Heal(context.Background(), tg, false)
	if after, _ = os.ReadFile(p); r.Action != ActionHealed || !bytes.Equal(after, healthy) {
		t.Fatalf("heal once quiet: %+v; file %q", r, after)
	}
}

// movedSince tells a plan's failure caused by the file's change (busy) from one of the file
// judged (refused): the version judged, another version of the same inode (rewritten in
// place), another file at the path, no file; a missing file's inspection is never moved.
func TestMovedSince(t *testing.T) {
	e, root := bigEngine(t, 1)
	p := filepath.Join(root, "s.json")
	if err := os.WriteFile(p, []byte(`{"a": 1}x`), 0o600); err != nil {
		t.Fatal(err)
	}
	in := e.inspect(Target{Path: p, Rule: appRule(t, "copaw", root)})
	if in.id.Ino == 0 || movedSince(p, in) {
		t.Fatalf("the version judged (%+v) taken for moved", in.id)
	}
	if err := os.Truncate(p, 4); err != nil {
		t.Fatal(err)
	}
	if !movedSince(p, in) {
		t.Fatal("rewritten in place: not taken for moved")
	}
	os.Remove(p)
	if !movedSince(p, in) {
		t.Fatal("gone: not taken for moved")
	}
	if err := os.WriteFile(p, []byte(`{"a": 12}x`), 0o600); err != nil { // (its size tells it from the first, were its inode and times the same)
		t.Fatal(err)
	}
	if !movedSince(p, in) {
		t.Fatal("another file at the path: not taken for moved")
	}
	if movedSince(p, &inspection{missing: true}) {
		t.Fatal("a missing file's inspection taken for moved")
	}
}
