package heal

import (
	"bytes"
	"context"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/sessionmedic/sessionmedic/heal/apps"
	"github.com/sessionmedic/sessionmedic/heal/format"
	"github.com/sessionmedic/sessionmedic/heal/jsonv"
	"github.com/sessionmedic/sessionmedic/policy"
)

const samples = "testdata/samples"

// fileExp is what one file of a sample case must produce.
type fileExp struct {
	file     string // relative to the case's copy
	kind     string // damage kind check must report ("skipped" for a skip)
	strategy string // the heal's strategy without a last-good copy; "" = refused
	want     string // sample path the healed file must equal byte for byte; "-" = removed
	check    func(t *testing.T, orig, healed []byte)
	// With a last-good copy seeded from this healthy sample first:
	lgFrom, lgStrategy, lgWant string
}

type sampleCase struct {
	app, src string // samples/<app>/<src> is copied
	preset   string
	files    []fileExp
	setup    func(t *testing.T, root string)
}

func read(t *testing.T, p string) []byte {
	t.Helper()
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func copyTree(t *testing.T, src, dst string) {
	t.Helper()
	err := filepath.WalkDir(src, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(src, p)
		out := filepath.Join(dst, rel)
		if d.IsDir() {
			return os.MkdirAll(out, 0o755)
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		return os.WriteFile(out, b, 0o644)
	})
	if err != nil {
		t.Fatal(err)
	}
}

func testEngine(t *testing.T, preset, root string) *Engine {
	t.Helper()
	return testEngineWith(t, preset, root, Options{})
}

// testEngineWith is testEngine built with the options o.
func testEngineWith(t *testing.T, preset, root string, o Options) *Engine {
	t.Helper()
	r, ok := policy.PresetRule(preset, policy.Env{Home: t.TempDir(), Getenv: func(string) string { return "" }, Exists: func(string) bool { return false }})
	if !ok {
		t.Fatalf("no preset %s", preset)
	}
	r.Name, r.Paths = preset, []string{root}
	r.Lock.Wait = 500 * time.Millisecond
	cfg := &policy.Config{Version: 1, StateDir: filepath.Join(t.TempDir(), "state"), Rules: []policy.Rule{r}}
	return New(cfg, o)
}

type snap struct {
	data  []byte
	ino   uint64
	mtime time.Time
}

func snapshot(t *testing.T, root string) map[string]snap {
	out := map[string]snap{}
	filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err == nil && d.Type().IsRegular() {
			fi, _ := os.Lstat(p)
			st := fi.Sys().(*syscall.Stat_t)
			rel, _ := filepath.Rel(root, p)
			out[rel] = snap{read(t, p), st.Ino, fi.ModTime()}
		}
		return nil
	})
	return out
}

func reportsByFile(t *testing.T, root string, rs []Report) map[string]Report {
	m := map[string]Report{}
	for _, r := range rs {
		rel, _ := filepath.Rel(root, r.Path)
		m[rel] = r
	}
	return m
}

func runAll(t *testing.T, e *Engine, doHeal bool) []Report {
	t.Helper()
	targets, errs := e.Targets(nil, nil)
	if len(errs) > 0 {
		t.Fatalf("targets: %v", errs)
	}
	var out []Report
	for _, tg := range targets {
		if doHeal {
			out = append(out, e.Heal(context.Background(), tg, false))
		} else {
			out = append(out, e.Check(tg))
		}
	}
	return out
}

func sampleCases() []sampleCase {
	copawConsole := "sessions/console/default_console--default.json"
	copawHealthy := "copaw/healthy/" + copawConsole
	nb := "dGVsZWdyYW06MTIzNDU2Nzg5.jsonl"
	nbLossy := "telegram_123456789.jsonl"
	nbHealthy := "nanobot/healthy_head/sessions/1a90ee6c483ef484075bb4aec4e29b33/" + nb
	nbLine := "nanobot/truncated_at_line_boundary/" + nb
	pc := "sessions/parent-chat.json"
	pcHealthy := "praisonai/healthy/" + pc
	ov := "workspace/viking/default/user/default/sessions/"
	ovLive := ov + "demo-live/"
	ovHealthy := "openviking/healthy/" + ov
	oc := "state/agents/main/sessions/"
	ocHealthy := "openclaw/01-healthy/" + oc + "sessions.json"
	lastGood := func(file, kind, strategy, want string) fileExp {
		return fileExp{file: file, kind: kind, strategy: strategy, want: want}
	}
	withLG := func(f fileExp, from, strategy, want string) fileExp {
		f.lgFrom, f.lgStrategy, f.lgWant = from, strategy, want
		return f
	}
	sqlite := func(t *testing.T, root string) {
		p := filepath.Join(root, "state/agents/main/agent/openclaw-agent.sqlite")
		os.MkdirAll(filepath.Dir(p), 0o755)
		os.WriteFile(p, nil, 0o644)
	}
	cases := []sampleCase{
		{app: "copaw", src: "healthy", preset: "copaw"},
		{app: "copaw", src: "healthy_legacy_copaw", preset: "copaw"},
		{app: "copaw", src: "corrupt_extra_data_race", preset: "copaw", files: []fileExp{
			lastGood(copawConsole, format.KindTrailingGarbage, "salvage", copawHealthy)}},
		{app: "copaw", src: "corrupt_truncated", preset: "copaw", files: []fileExp{
			withLG(lastGood(copawConsole, format.KindTruncated, "", ""), copawHealthy, "last-good", copawHealthy)}},
		{app: "copaw", src: "corrupt_empty", preset: "copaw", files: []fileExp{
			withLG(lastGood(copawConsole, format.KindEmpty, "", ""), copawHealthy, "last-good", copawHealthy)}},
		{app: "nanobot", src: "healthy_head", preset: "nanobot"},
		{app: "nanobot", src: "healthy_v0.3.0", preset: "nanobot"},
		{app: "nanobot", src: "healthy_pr3312", preset: "nanobot"},
		{app: "nanobot", src: "corrupt_truncated_midline", preset: "nanobot", files: []fileExp{
			withLG(lastGood(nb, format.KindTruncated, "salvage", nbLine), nbHealthy, "last-good", nbHealthy),
			lastGood(nbLossy, format.KindTruncated, "salvage", nbLine)}},
		{app: "nanobot", src: "truncated_at_line_boundary", preset: "nanobot", files: []fileExp{
			withLG(fileExp{file: nb}, nbHealthy, "last-good", nbHealthy)}},
		{app: "nanobot", src: "corrupt_truncated_in_metadata", preset: "nanobot", files: []fileExp{
			withLG(lastGood(nb, format.KindTruncated, "", ""), nbHealthy, "last-good", nbHealthy),
			lastGood(nbLossy, format.KindTruncated, "", "")}},
		{app: "nanobot", src: "corrupt_empty", preset: "nanobot", files: []fileExp{
			withLG(lastGood(nb, format.KindEmpty, "", ""), nbHealthy, "last-good", nbHealthy),
			lastGood(nbLossy, format.KindEmpty, "", "")}},
		{app: "nanobot", src: "corrupt_bad_middle_line", preset: "nanobot", files: []fileExp{
			withLG(lastGood(nb, format.KindMalformedRecord, "salvage", nbHealthy), nbHealthy, "salvage", nbHealthy),
			lastGood(nbLossy, format.KindMalformedRecord, "salvage", nbHealthy)}},
		{app: "nanobot", src: "corrupt_non_object_line", preset: "nanobot", files: []fileExp{
			lastGood(nb, format.KindMalformedRecord, "salvage", nbHealthy),
			lastGood(nbLossy, format.KindMalformedRecord, "salvage", nbHealthy)}},
		{app: "nanobot", src: "stale_tmp_head", preset: "nanobot", setup: ageTemps, files: []fileExp{
			lastGood(".dGVsZWdyYW06MTIzNDU2Nzg5.jsonl.0123456789abcdef.tmp", KindStaleTemp, "clean-temp", "-")}},
		{app: "nanobot", src: "stale_tmp_pr3312", preset: "nanobot", setup: ageTemps, files: []fileExp{
			lastGood("telegram_123456789.jsonl.tmp", KindStaleTemp, "clean-temp", "-")}},
		{app: "praisonai", src: "healthy", preset: "praisonai"},
		{app: "praisonai", src: "healthy_pr1745", preset: "praisonai"},
		{app: "praisonai", src: "corrupt_truncated", preset: "praisonai", files: []fileExp{
			withLG(lastGood(pc, format.KindTruncated, "", ""), pcHealthy, "last-good", pcHealthy)}},
		{app: "praisonai", src: "corrupt_empty", preset: "praisonai", files: []fileExp{
			withLG(lastGood(pc, format.KindEmpty, "", ""), pcHealthy, "last-good", pcHealthy)}},
		{app: "praisonai", src: "corrupt_trailing_garbage", preset: "praisonai", files: []fileExp{
			lastGood(pc, format.KindTrailingGarbage, "salvage", pcHealthy)}},
		{app: "praisonai", src: "corrupt_not_object", preset: "praisonai", files: []fileExp{
			withLG(lastGood(pc, format.KindNotObject, "", ""), pcHealthy, "last-good", pcHealthy)}},
		{app: "praisonai", src: "stale_tmp", preset: "praisonai", setup: ageTemps, files: []fileExp{
			lastGood("sessions/tmpk3j4h5g6.tmp", KindStaleTemp, "clean-temp", "-")}},
		{app: "praisonai", src: "after_head_quarantine", preset: "praisonai", files: []fileExp{
			withLG(lastGood(pc, format.KindMissing, "", ""), pcHealthy, "last-good", pcHealthy)}},
		{app: "praisonai", src: "extended_fields_wiped", preset: "praisonai", files: []fileExp{
			{file: pc, kind: format.KindDanglingReference, strategy: "reconcile", check: checkChildrenSpliced}}},
		{app: "openviking", src: "healthy", preset: "openviking"},
		{app: "openviking", src: "stale_path_lock", preset: "openviking"},
		{app: "openviking", src: "lost_clear", preset: "openviking", files: []fileExp{
			lastGood(ov+"demo-committed/messages.jsonl", format.KindStaleLiveRecords, "reconcile", ovHealthy+"demo-committed/messages.jsonl")}},
		{app: "openviking", src: "corrupt_truncated_messages", preset: "openviking", files: []fileExp{
			withLG(fileExp{file: ovLive + "messages.jsonl", kind: format.KindTruncated, strategy: "salvage", check: firstLines(2)},
				ovHealthy+"demo-live/messages.jsonl", "last-good", ovHealthy+"demo-live/messages.jsonl"),
			{file: ovLive + ".meta.json", check: metaCount(2)}}},
		{app: "openviking", src: "corrupt_empty_messages", preset: "openviking", files: []fileExp{
			withLG(lastGood(ovLive+"messages.jsonl", format.KindEmpty, "", ""), ovHealthy+"demo-live/messages.jsonl", "last-good", ovHealthy+"demo-live/messages.jsonl")}},
		{app: "openviking", src: "corrupt_truncated_meta", preset: "openviking", files: []fileExp{
			withLG(lastGood(ovLive+".meta.json", format.KindTruncated, "", ""), ovHealthy+"demo-live/.meta.json", "last-good", ovHealthy+"demo-live/.meta.json")}},
		{app: "openviking", src: "meta_lag_after_append_crash", preset: "openviking", files: []fileExp{
			lastGood(ovLive+".meta.json", format.KindMetadataLag, "reconcile", ovHealthy+"demo-live/.meta.json")}},
		{app: "openclaw", src: "01-healthy", preset: "openclaw"},
		{app: "openclaw", src: "02-truncated", preset: "openclaw", files: []fileExp{
			withLG(lastGood(oc+"sessions.json", format.KindTruncated, "", ""), ocHealthy, "last-good", ocHealthy)}},
		{app: "openclaw", src: "03-trailing-garbage", preset: "openclaw", files: []fileExp{
			{file: oc + "sessions.json", kind: format.KindTrailingGarbage, strategy: "salvage", check: firstObject(4)}}},
		{app: "openclaw", src: "04-placeholder-with-bak", preset: "openclaw", files: []fileExp{
			lastGood(oc+"sessions.json", format.KindWipedPlaceholder, "backup", "openclaw/04-placeholder-with-bak/"+oc+"sessions.json.bak.1795247922317")}},
		{app: "openclaw", src: "05-missing-newest-bak-corrupt", preset: "openclaw", files: []fileExp{
			lastGood(oc+"sessions.json", format.KindMissing, "backup", "openclaw/05-missing-newest-bak-corrupt/"+oc+"sessions.json.bak.1795247923574")}},
		{app: "openclaw", src: "06-empty-file", preset: "openclaw", files: []fileExp{
			withLG(lastGood(oc+"sessions.json", format.KindEmpty, "", ""), ocHealthy, "last-good", ocHealthy)}},
		{app: "openclaw", src: "07-nul-filled", preset: "openclaw", files: []fileExp{
			lastGood(oc+"sessions.json", format.KindNULFilled, "", "")}},
		{app: "openclaw", src: "08-json-array", preset: "openclaw", files: []fileExp{
			lastGood(oc+"sessions.json", format.KindNotObject, "", "")}},
		{app: "openclaw", src: "09-missing-no-bak", preset: "openclaw", files: []fileExp{
			withLG(lastGood(oc+"sessions.json", format.KindMissing, "", ""), ocHealthy, "last-good", ocHealthy)}},
		{app: "openclaw", src: "10-bad-entries", preset: "openclaw", files: []fileExp{
			lastGood(oc+"sessions.json", format.KindSchema, "", "")}},
		{app: "openclaw", src: "11-corrupt-transcripts", preset: "openclaw", files: []fileExp{
			{file: oc + "1d754b99-7ff3-4a4e-bb43-87e369a9c6ae.jsonl", kind: format.KindMalformedRecord, strategy: "salvage", check: keepLines(1, 2, 4)},
			lastGood(oc+"571aabb8-7a50-4397-bb51-12f20d457f10.jsonl", format.KindMalformedRecord, "", "")}},
		{app: "openclaw", src: "12-utf8-bom", preset: "openclaw", files: []fileExp{
			{file: oc + "sessions.json", kind: format.KindBOM, strategy: "normalize", check: func(t *testing.T, orig, healed []byte) {
				if !bytes.Equal(healed, orig[3:]) {
					t.Errorf("BOM not stripped exactly: %d bytes", len(healed))
				}
			}}}},
		{app: "openclaw", src: "13-json5-comment-trailing-comma", preset: "openclaw", files: []fileExp{
			lastGood(oc+"sessions.json", format.KindSyntax, "", "")}},
		{app: "openclaw", src: "21-sqlite-plus-legacy-json", preset: "openclaw", setup: sqlite, files: []fileExp{
			lastGood(oc+"sessions.json", "skipped", "", "")}},
	}
	cases = append(cases, claudeSampleCases()...)
	cases = append(cases, codexSampleCases()...)
	return append(cases, geminiSampleCases()...)
}

func ageTemps(t *testing.T, root string) {
	old := time.Now().Add(-time.Hour)
	filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err == nil && strings.HasSuffix(p, ".tmp") {
			os.Chtimes(p, old, old)
		}
		return nil
	})
}

func checkChildrenSpliced(t *testing.T, orig, healed []byte) {
	splice := ",\n  \"children_ids\": [\n    \"c86cb912-1e05-4283-90df-f0a7cc101d65\"\n  ]"
	if !bytes.Equal(bytes.Replace(healed, []byte(splice), nil, 1), orig) {
		t.Errorf("reconcile changed more than children_ids:\n%s", healed)
	}
}

func firstLines(n int) func(t *testing.T, orig, healed []byte) {
	return func(t *testing.T, orig, healed []byte) {
		lines := bytes.SplitAfter(orig, []byte("\n"))
		if want := bytes.Join(lines[:n], nil); !bytes.Equal(healed, want) {
			t.Errorf("want the first %d lines, got:\n%s", n, healed)
		}
	}
}

func keepLines(ns ...int) func(t *testing.T, orig, healed []byte) {
	return func(t *testing.T, orig, healed []byte) {
		lines := bytes.SplitAfter(orig, []byte("\n"))
		var want []byte
		for _, n := range ns {
			want = append(want, lines[n-1]...)
		}
		if !bytes.Equal(healed, want) {
			t.Errorf("want lines %v byte for byte, got:\n%s", ns, healed)
		}
	}
}

// firstObject: the healed store is the input's bytes up to the first closing brace at
// column 0 (the end of the first complete 2-space-indented object), holding n entries.
func firstObject(n int) func(t *testing.T, orig, healed []byte) {
	return func(t *testing.T, orig, healed []byte) {
		end := bytes.Index(orig, []byte("\n}")) + 2
		if !bytes.Equal(healed, orig[:end]) {
			t.Errorf("want the first %d bytes, got %d bytes", end, len(healed))
		}
		if got := format.Records(apps.Registry().Profile("openclaw", "/x/sessions.json"), healed); got != n {
			t.Errorf("healed store has %d entries, want %d", got, n)
		}
	}
}

func metaCount(n int) func(t *testing.T, orig, healed []byte) {
	return func(t *testing.T, orig, healed []byte) {
		want := orig
		root, err := jsonv.Parse(orig, jsonv.Dialect{NonFinite: true})
		if c := root.Get("message_count"); err == nil && c != nil && string(c.Raw(orig)) != strconv.Itoa(n) {
			want = append(append(append([]byte{}, orig[:c.Start]...), strconv.Itoa(n)...), orig[c.End:]...)
		}
		if !bytes.Equal(healed, want) {
			t.Errorf("want message_count %d spliced, got:\n%s", n, healed)
		}
	}
}

func verdictKind(r Report) string {
	switch r.Verdict {
	case Healthy:
		return ""
	case Skipped:
		return "skipped"
	case Busy:
		return "busy"
	}
	return r.Kind
}

func TestSamples(t *testing.T) { testSamples(t, false) }

// TestSamplesPlannedFromTheFiles is TestSamples with every file, and every file that stands
// in for a missing one (a backup, a copy set aside, a last-good copy), taken as big: judged
// and planned from the file, never held (the same verdicts, heals and bytes).
func TestSamplesPlannedFromTheFiles(t *testing.T) { testSamples(t, true) }

func testSamples(t *testing.T, big bool) {
	var fromFiles atomic.Int64 // missing files restored from the files that stand in for them
	engine := func(e *Engine) *Engine {
		if big {
			e.bigThreshold = 1
			e.onStep = func(step, _ string) {
				if step == "missing-from-files" {
					fromFiles.Add(1)
				}
			}
		}
		return e
	}
	if big {
		defer func() {
			if fromFiles.Load() < 4 {
				t.Errorf("%d missing files planned from the files that stand in for them", fromFiles.Load())
			}
		}()
	}
	for _, sc := range sampleCases() {
		t.Run(sc.app+"/"+sc.src, func(t *testing.T) {
			src := filepath.Join(samples, sc.app, sc.src)
			root := filepath.Join(t.TempDir(), sc.src)
			copyTree(t, src, root)
			if sc.setup != nil {
				sc.setup(t, root)
			}
			e := engine(testEngine(t, sc.preset, root))
			exp := map[string]fileExp{}
			for _, f := range sc.files {
				exp[f.file] = f
			}

			// check: the verdicts, and nothing written anywhere.
			before := snapshot(t, root)
			checks := reportsByFile(t, root, runAll(t, e, false))
			if len(checks) == 0 && len(before) > 0 && sc.src != "21-sqlite-plus-legacy-json" {
				t.Fatalf("no file of the case was inspected")
			}
			for rel, r := range checks {
				if got, want := verdictKind(r), exp[rel].kind; got != want {
					t.Errorf("check %s: got %q (%s), want %q", rel, got, r.Detail, want)
				}
			}
			for rel := range exp {
				if _, ok := checks[rel]; !ok {
					t.Errorf("check did not inspect %s", rel)
				}
			}
			assertSame(t, before, snapshot(t, root), nil)
			if _, err := os.Stat(e.StateDir); err == nil {
				t.Errorf("check wrote to the state dir")
			}

			// heal: the exact expected content, the original bytes in quarantine, nothing else touched.
			heals := reportsByFile(t, root, runAll(t, e, true))
			after := snapshot(t, root)
			changed := map[string]bool{}
			for rel, f := range exp {
				r := heals[rel]
				if f.strategy == "" {
					if f.check != nil {
						changed[rel] = true
						f.check(t, before[rel].data, after[rel].data)
						continue
					}
					if f.kind != "" && f.kind != "skipped" && r.Action != ActionRefused {
						t.Errorf("heal %s: action %q (%s), want refused", rel, r.Action, r.Strategy)
					}
					continue
				}
				changed[rel] = true
				if r.Action != ActionHealed || r.Strategy != f.strategy {
					t.Errorf("heal %s: %s with %q (%s), want healed with %q", rel, r.Action, r.Strategy, r.Reason, f.strategy)
					continue
				}
				healed, exists := after[rel]
				switch {
				case f.want == "-":
					if exists {
						t.Errorf("heal %s: temp file still there", rel)
					}
				case !exists:
					t.Errorf("heal %s: file missing after heal", rel)
				case f.want != "":
					if want := read(t, filepath.Join(samples, f.want)); !bytes.Equal(healed.data, want) {
						t.Errorf("heal %s: content differs from %s (%d vs %d bytes)", rel, f.want, len(healed.data), len(want))
					}
				}
				if f.check != nil && exists {
					f.check(t, before[rel].data, healed.data)
				}
				if orig, ok := before[rel]; ok {
					q := read(t, filepath.Join(r.Quarantine, filepath.Base(rel)))
					if big { // a big file's tail cut quarantines the tail it cut
						all, _ := e.Quarantine.List()
						for _, m := range all {
							if filepath.Clean(m.Dir) == filepath.Clean(r.Quarantine) && m.Path == r.Path {
								q, _ = original(t, m)
							}
						}
					}
					if !bytes.Equal(q, orig.data) {
						t.Errorf("quarantine of %s does not hold the original bytes", rel)
					}
				}
			}
			assertSame(t, before, after, changed)

			// Healing twice changes nothing.
			again := runAll(t, e, true)
			for _, r := range again {
				if r.Action == ActionHealed {
					t.Errorf("second heal changed %s (%s)", r.Path, r.Strategy)
				}
			}
			assertSame(t, after, snapshot(t, root), nil)

			// With a last-good copy seeded from a healthy version.
			var lg []fileExp
			for _, f := range sc.files {
				if f.lgFrom != "" {
					lg = append(lg, f)
				}
			}
			if len(lg) == 0 {
				return
			}
			root2 := filepath.Join(t.TempDir(), sc.src)
			copyTree(t, src, root2)
			e2 := testEngine(t, sc.preset, root2)
			e2.Policy.StateDir = e.StateDir + "-lg"
			e2 = engine(New(e2.Policy, Options{}))
			for _, f := range lg {
				os.WriteFile(filepath.Join(root2, f.file), read(t, filepath.Join(samples, f.lgFrom)), 0o644)
			}
			seeded := reportsByFile(t, root2, runAll(t, e2, true))
			for _, f := range lg {
				if r := seeded[f.file]; r.Verdict != Healthy {
					t.Fatalf("seeding: %s was not healthy: %s", f.file, r.Detail)
				}
			}
			copyTree(t, src, root2)
			for _, f := range lg {
				if f.kind == format.KindMissing {
					os.Remove(filepath.Join(root2, f.file))
				}
			}
			heals2 := reportsByFile(t, root2, runAll(t, e2, true))
			for _, f := range lg {
				r := heals2[f.file]
				if r.Action != ActionHealed || r.Strategy != f.lgStrategy {
					t.Errorf("with last-good, %s: %s with %q (%s %s), want %q", f.file, r.Action, r.Strategy, r.Kind, r.Reason, f.lgStrategy)
					continue
				}
				if got, want := read(t, filepath.Join(root2, f.file)), read(t, filepath.Join(samples, f.lgWant)); !bytes.Equal(got, want) {
					t.Errorf("with last-good, %s differs from %s", f.file, f.lgWant)
				}
			}
		})
	}
}

// assertSame: every file of a is in b with the same bytes, inode and mtime, except those
// named in changed.
func assertSame(t *testing.T, a, b map[string]snap, changed map[string]bool) {
	t.Helper()
	for rel, s := range a {
		if changed[rel] {
			continue
		}
		n, ok := b[rel]
		switch {
		case !ok:
			t.Errorf("%s disappeared", rel)
		case !bytes.Equal(n.data, s.data):
			t.Errorf("%s was rewritten", rel)
		case n.ino != s.ino || !n.mtime.Equal(s.mtime):
			t.Errorf("%s was touched (inode or mtime changed)", rel)
		}
	}
	for rel := range b {
		if _, ok := a[rel]; !ok && !changed[rel] {
			t.Errorf("%s appeared", rel)
		}
	}
}
