package power

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/sessionmedic/sessionmedic/heal"
	"github.com/sessionmedic/sessionmedic/policy"
	"github.com/sessionmedic/sessionmedic/reliability/fixtures"
)

var samplesDir = filepath.Join("..", "..", "heal", "testdata", "samples")

// sampleInputs: damaged samples of every app (coding CLIs included) whose heal needs no
// last-good copy.
var sampleInputs = []string{
	"claude-code/torn_tail", "claude-code/nul_tail", "claude-code/bad_middle_line",
	"codex/torn_tail", "codex/nul_tail", "gemini-cli/torn_tail", "gemini-cli/nul_tail",
	"copaw/corrupt_extra_data_race", "nanobot/corrupt_truncated_midline", "nanobot/corrupt_bad_middle_line",
	"praisonai/corrupt_trailing_garbage", "openviking/corrupt_truncated_messages",
	"openclaw/03-trailing-garbage", "openclaw/11-corrupt-transcripts", "openclaw/12-utf8-bom",
}

// target is one input: the files laid out under case/ and the rules that heal them.
// healthy, when set, is healed first (keeping last-good copies that are never fsynced); the
// damage is then written and synced, and only the heal after it is cut.
type target struct {
	name    string
	files   map[string][]byte
	healthy map[string][]byte
	app     string // a preset; "" for the generated json/jsonl rules
}

func (tg target) rules(caseDir string) string {
	if tg.app == "" {
		return fmt.Sprintf("  - {name: gen-json, paths: [%q], format: json}\n  - {name: gen-jsonl, paths: [%q], format: jsonl}\n",
			filepath.Join(caseDir, "json"), filepath.Join(caseDir, "jsonl"))
	}
	return fmt.Sprintf("  - {name: %s, preset: %s, paths: [%q]}\n", tg.app, tg.app, caseDir)
}

func sampleTarget(input string) (target, error) {
	tmp, err := os.MkdirTemp("", "power-sample-")
	if err != nil {
		return target{}, err
	}
	defer os.RemoveAll(tmp)
	if err := fixtures.CopyTree(filepath.Join(samplesDir, input), tmp); err != nil {
		return target{}, err
	}
	files := map[string][]byte{}
	err = filepath.WalkDir(tmp, func(p string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() || !d.Type().IsRegular() {
			return err
		}
		rel, _ := filepath.Rel(tmp, p)
		if isAppLock(rel) {
			return nil // left out of the model (see isAppLock)
		}
		files[rel], err = os.ReadFile(p)
		return err
	})
	return target{name: input, files: files, app: strings.SplitN(input, "/", 2)[0]}, err
}

// genTarget is a generated tree: JSON documents followed by garbage, JSONL with garbage
// lines and a torn last line (some files over a few 4 KiB blocks), each healed first in its
// healthy version.
func genTarget(seed uint64) target {
	r := rand.New(rand.NewPCG(seed, 0x706f776572))
	tg := target{name: fmt.Sprintf("generated#%d", seed), files: map[string][]byte{}, healthy: map[string][]byte{}}
	record := func() []byte {
		b, _ := json.Marshal(map[string]any{"role": []string{"user", "assistant", "tool"}[r.IntN(3)],
			"content": strings.Repeat("é日🙂 x", 1+r.IntN(40)), "ts": r.Int64N(1 << 40)})
		return append(b, '\n')
	}
	for i := range 2 {
		var good, bad []byte
		for j := range 3 + r.IntN(8<<i) {
			l := record()
			if j > 0 && r.IntN(4) == 0 {
				bad = append(bad, []string{"#not json\n", "\x00\x00\x00\x00\n", "{\"role\": \"us\n"}[r.IntN(3)]...)
			}
			good, bad = append(good, l...), append(bad, l...)
		}
		l := record()
		bad = append(bad, l[:1+r.IntN(len(l)-2)]...)
		name := filepath.Join("jsonl", fmt.Sprintf("t%d.jsonl", i))
		tg.files[name], tg.healthy[name] = bad, good
	}
	for i := range 2 {
		msgs := []any{}
		for range 1 + r.IntN(6<<i) {
			var m map[string]any
			json.Unmarshal(record(), &m)
			msgs = append(msgs, m)
		}
		doc, _ := json.MarshalIndent(map[string]any{"session_id": fmt.Sprint(r.IntN(1e6)), "messages": msgs}, "", "  ")
		garbage := [][]byte{[]byte("\n  }\n}"), bytes.Repeat([]byte{0}, 1+r.IntN(5000)), []byte("garbage")}[r.IntN(3)]
		name := filepath.Join("json", fmt.Sprintf("s%d.json", i))
		tg.files[name], tg.healthy[name] = append(append([]byte(nil), doc...), garbage...), doc
	}
	tg.files[filepath.Join("jsonl", "healthy.jsonl")] = record()
	tg.healthy[filepath.Join("jsonl", "healthy.jsonl")] = tg.files[filepath.Join("jsonl", "healthy.jsonl")]
	return tg
}

// isAppLock names the apps' lock files. They are left out of the model: after a power cut
// their holder is gone, and each app's protocol judges them stale (the crash suite covers it).
func isAppLock(rel string) bool {
	name := filepath.Base(rel)
	return strings.HasSuffix(name, ".lock") || name == ".path.ovlock" || strings.HasPrefix(name, ".exact.ovlock.")
}

func newEngine(tg target, dir string, hook func(op, path string) error) (*heal.Engine, error) {
	caseDir := filepath.Join(dir, "case")
	pol := fmt.Sprintf("version: 1\nstate_dir: %q\nrules:\n%s", filepath.Join(dir, "state"), tg.rules(caseDir))
	cfg, err := policy.Parse("power.yaml", []byte(pol))
	if err != nil {
		return nil, err
	}
	for i := range cfg.Rules {
		cfg.Rules[i].Lock.Wait = 0
	}
	return heal.New(cfg, heal.Options{OneShot: true, QuietCheck: -1, Faults: hook,
		OpenWriters: func(dev, ino uint64) []int { return nil }}), nil
}

// healAll is the start of `sessionmedic heal`: the journal's recovery, then every target.
func healAll(e *heal.Engine) ([]heal.Report, error) {
	if _, err := e.Recover(); err != nil {
		return nil, fmt.Errorf("recover: %w", err)
	}
	targets, errs := e.Targets(nil, nil)
	if len(errs) > 0 {
		return nil, fmt.Errorf("targets: %v", errs)
	}
	var out []heal.Report
	for _, t := range targets {
		out = append(out, e.Heal(context.Background(), t, false))
	}
	return out, nil
}

func writeFiles(root string, files map[string][]byte) error {
	for rel, b := range files {
		p := filepath.Join(root, rel)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			return err
		}
		if err := os.WriteFile(p, b, 0o644); err != nil {
			return err
		}
	}
	return nil
}

// recording is a clean heal of a target under the recorder.
type recording struct {
	tg           target
	dir          string // where it ran: every state is laid out at a path of the same length
	init, final  Tree
	ops          []Op
	from         int               // the first crash point (the heal's start)
	orig, healed map[string][]byte // the session files at the heal's start and end
	versions     map[string][][]byte
}

func record(t *testing.T, tg target, dir string) *recording {
	t.Helper()
	rc := &recording{tg: tg, dir: dir, versions: map[string][][]byte{}}
	rec := &Recorder{Root: dir, Skip: isAppLock}
	caseDir := filepath.Join(dir, "case")
	first := tg.files
	if tg.healthy != nil {
		first = tg.healthy
	}
	if err := writeFiles(caseDir, first); err != nil {
		t.Fatal(err)
	}
	rec.Start()
	if tg.healthy != nil {
		e, err := newEngine(tg, dir, rec.Hook)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := healAll(e); err != nil {
			t.Fatal(err)
		}
		if err := writeFiles(caseDir, tg.files); err != nil {
			t.Fatal(err)
		}
		rec.Barrier("case")
		rc.from = rec.Len()
	}
	e, err := newEngine(tg, dir, rec.Hook)
	if err != nil {
		t.Fatal(err)
	}
	reports, err := healAll(e)
	if err != nil {
		t.Fatal(err)
	}
	rc.init, rc.ops, rc.final = rec.Finish()
	rc.orig, rc.healed = map[string][]byte{}, caseFiles(rc.final)
	for rel := range tg.files {
		rc.orig[rel] = tg.files[rel]
	}
	for rel, b := range caseFiles(rc.init) {
		rc.versions[rel] = append(rc.versions[rel], b)
	}
	for rel, b := range rc.healed {
		rc.versions[rel] = append(rc.versions[rel], b)
		if strings.Contains(filepath.Base(rel), ".sessionmedic-") {
			t.Fatalf("a clean heal left the temp %s", rel)
		}
	}
	changed := 0
	for rel := range rc.orig {
		if !bytes.Equal(rc.orig[rel], rc.healed[rel]) {
			changed++
		}
	}
	if changed == 0 {
		t.Fatalf("a clean heal changed nothing: %s", brief(reports))
	}
	return rc
}

// caseFiles are the session files of a tree (under case/, app locks and own temps aside).
func caseFiles(tr Tree) map[string][]byte {
	out := map[string][]byte{}
	for _, n := range tr.visible() {
		nd := tr.Names[n]
		if nd.Dir || !strings.HasPrefix(n, "case/") || policy.IsOwnTemp(filepath.Base(n)) {
			continue
		}
		out[strings.TrimPrefix(n, "case/")] = tr.Data[nd.Ino]
	}
	return out
}

func brief(rs []heal.Report) string {
	var out []string
	for _, r := range rs {
		if r.Verdict != heal.Healthy {
			out = append(out, fmt.Sprintf("%s %s %s %s %s %q", filepath.Base(r.Path), r.Verdict, r.Kind, r.Action, r.Strategy, r.Reason))
		}
	}
	return "[" + strings.Join(out, "; ") + "]"
}
