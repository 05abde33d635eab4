package power

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io/fs"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/sessionmedic/sessionmedic/heal"
	"github.com/sessionmedic/sessionmedic/heal/lock"
	"github.com/sessionmedic/sessionmedic/internal/sqlitetest"
	"github.com/sessionmedic/sessionmedic/policy"
	"github.com/sessionmedic/sessionmedic/reliability/fixtures"
)

var samplesDir = filepath.Join("..", "..", "heal", "testdata", "samples")

// sampleInputs lists every case of every app's samples (healthy ones too: their heal writes
// only last-good copies, and must never touch a session file).
func sampleInputs() ([]string, error) {
	apps, err := os.ReadDir(samplesDir)
	if err != nil {
		return nil, err
	}
	var out []string
	for _, a := range apps {
		if !a.IsDir() {
			continue
		}
		cases, err := os.ReadDir(filepath.Join(samplesDir, a.Name()))
		if err != nil {
			return nil, err
		}
		for _, c := range cases {
			if c.IsDir() {
				out = append(out, a.Name()+"/"+c.Name())
			}
		}
	}
	return out, nil
}

// target is one input: the files laid out under case/ and the rules that heal them.
// healthy, when set, is healed first (keeping last-good copies that are never fsynced); the
// damage is then written and synced, and only the heal after it is cut.
type target struct {
	name    string
	files   map[string][]byte
	healthy map[string][]byte
	app     string                   // a preset; "" for the generated json/jsonl rules
	gen     func(seed uint64) target // generated: a new one each round
	extra   string                   // more keys of the preset's rule ("strategies: [...]")
}

func (tg target) rules(caseDir string) string {
	if tg.app == "" {
		return fmt.Sprintf("  - {name: gen-json, paths: [%q], format: json}\n  - {name: gen-jsonl, paths: [%q], format: jsonl}\n",
			filepath.Join(caseDir, "json"), filepath.Join(caseDir, "jsonl"))
	}
	if tg.extra != "" {
		return fmt.Sprintf("  - {name: %s, preset: %s, paths: [%q], %s}\n", tg.app, tg.app, caseDir, tg.extra)
	}
	return fmt.Sprintf("  - {name: %s, preset: %s, paths: [%q]}\n", tg.app, tg.app, caseDir)
}

// sqliteStoreTarget is OpenClaw's agent database (the fixture its own code made) whose page 1
// is destroyed, a -wal left beside it, under a rule that opts in to restore-snapshot: healed
// first in its sound version (its snapshot kept), the heal that is cut quarantines the
// family, writes the snapshot beside the store, removes the -wal and renames the snapshot
// over the store — the one heal of a SQLite store made by file operations.
func sqliteStoreTarget(t *testing.T) target {
	good := sqlitetest.Fixture(t, sqlitetest.OpenClaw)
	bad := bytes.Clone(good)
	clear(bad[:4096])
	db := filepath.Join("agents", "main", "agent", "openclaw-agent.sqlite")
	return target{name: "openclaw-sqlite/page1-destroyed", app: "openclaw",
		extra:   "strategies: [salvage, last-good, reindex, restore-snapshot]",
		healthy: map[string][]byte{db: good},
		files:   map[string][]byte{db: bad, db + "-wal": bytes.Repeat([]byte{0x5a}, 3*4096+100)}}
}

// sampleTargets are the targets of one sample case: the case as it is, and, where the app's
// healthy case holds every one of its session files, the case after a heal of that healthy
// tree (so the last-good strategy has its copy, and the copies are written without fsync).
func sampleTargets(input string) ([]target, error) {
	app, name, _ := strings.Cut(input, "/")
	files, err := caseTree(input)
	if err != nil {
		return nil, err
	}
	out := []target{{name: input, files: files, app: app}}
	if strings.HasPrefix(name, "healthy") {
		return out, nil
	}
	healthy, err := caseTree(app + "/healthy")
	if err != nil {
		return out, nil // no healthy case
	}
	seeded, differs := map[string][]byte{}, false
	for rel, b := range files {
		h, ok := healthy[rel]
		switch {
		case isAppLock(rel) || !ok && strings.HasSuffix(rel, ".json") && strings.Contains(rel, "sessions/"):
			seeded[rel] = b // an app's lock or pid registry: as in the case
		case !ok:
			return out, nil
		default:
			seeded[rel] = h
			differs = differs || !bytes.Equal(h, b)
		}
	}
	if differs {
		out = append(out, target{name: input + "+last-good", files: files, healthy: seeded, app: app})
	}
	return out, nil
}

// caseTree reads a sample case's files (regular files only).
func caseTree(input string) (map[string][]byte, error) {
	tmp, err := os.MkdirTemp("", "power-sample-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(tmp)
	if err := fixtures.CopyTree(filepath.Join(samplesDir, input), tmp); err != nil {
		return nil, err
	}
	files := map[string][]byte{}
	err = filepath.WalkDir(tmp, func(p string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() || !d.Type().IsRegular() {
			return err
		}
		rel, _ := filepath.Rel(tmp, p)
		files[rel], err = os.ReadFile(p)
		return err
	})
	return files, err
}

// genTarget is a generated tree: JSON documents followed by garbage, JSONL with garbage
// lines and a torn last line (some files over a few 4 KiB blocks), each healed first in its
// healthy version.
func genTarget(seed uint64) target {
	r := rand.New(rand.NewPCG(seed, 0x706f776572))
	tg := target{name: fmt.Sprintf("generated#%d", seed), files: map[string][]byte{}, healthy: map[string][]byte{}, gen: genTarget}
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

// bigTarget is a JSONL file and a JSON document just over the engine's big-file size (8 MiB),
// damaged: their heals stream from the original's descriptor instead of holding the file.
func bigTarget(seed uint64) target {
	r := rand.New(rand.NewPCG(seed, 0x626967))
	var jl, js []byte
	good := 0
	for len(jl) < 8<<20+256<<10 {
		b, _ := json.Marshal(map[string]any{"role": "assistant", "seq": len(jl), "content": strings.Repeat("日本語 text ", 20+r.IntN(200))})
		jl = append(append(jl, b...), '\n')
		if good == 0 && len(jl) > 5<<20 {
			jl = append(jl, "{\"role\": \"us\n"...) // a bad line in the middle
			good = len(jl)
		}
	}
	jl = append(jl, `{"role": "assistant", "content": "tor`...)
	js = append(js, `{"messages": [`...)
	for i := 0; len(js) < 8<<20+256<<10; i++ {
		if i > 0 {
			js = append(js, ',')
		}
		b, _ := json.Marshal(map[string]any{"role": "user", "i": i, "content": strings.Repeat("é x ", 50+r.IntN(100))})
		js = append(js, b...)
	}
	js = append(js, "]}\n  }\n}"...)
	return target{name: fmt.Sprintf("big#%d", seed), app: "", files: map[string][]byte{
		filepath.Join("jsonl", "big.jsonl"): jl, filepath.Join("json", "big.json"): js}}
}

// bigAppTarget is a Codex rollout just over the engine's big-file size for an app log
// (1 MiB) with a record glued to the next in its middle: its salvage is a replace planned
// from the file, whose result's sha256 is taken while the new file is written and told to
// the journal before the rename.
func bigAppTarget(seed uint64) (target, error) {
	files, err := caseTree("codex/healthy")
	if err != nil {
		return target{}, err
	}
	r := rand.New(rand.NewPCG(seed, 0x636f646578))
	var rel string
	var meta []byte
	for k, b := range files {
		if strings.HasSuffix(k, ".jsonl") {
			meta, _, _ = bytes.Cut(b, []byte("\n"))
			rel = k
		}
	}
	if rel == "" {
		return target{}, fmt.Errorf("codex/healthy: no rollout")
	}
	out := append(append([]byte(nil), meta...), '\n')
	glued := false
	for i := 1; len(out) < 1<<20+128<<10; i++ {
		role, kind := "user", "input_text"
		if i%2 == 0 {
			role, kind = "assistant", "output_text"
		}
		text, _ := json.Marshal(strings.Repeat("é日 text ", 10+r.IntN(60)))
		out = fmt.Appendf(out, `{"timestamp":"2026-11-22T21:46:18.000Z","ordinal":%d,"type":"response_item","payload":{"type":"message","id":"msg_%08x","role":%q,"content":[{"type":%q,"text":%s}]}}`, i, i, role, kind, text)
		if !glued && len(out) > 600<<10 {
			glued = true // two writers: this record and the next on one line
			continue
		}
		out = append(out, '\n')
	}
	files[rel] = out
	return target{name: fmt.Sprintf("big#codex-%d", seed), app: "codex", files: files}, nil
}

// isAppLock names the apps' lock files (in the model, but not session files).
func isAppLock(rel string) bool {
	name := filepath.Base(rel)
	return strings.HasSuffix(name, ".lock") || name == ".path.ovlock" || strings.HasPrefix(name, ".exact.ovlock.")
}

// newEngine is the engine of a start. Its clock runs an hour ahead (the app temps of the
// samples are old), and a later start (after a power cut) another hour ahead: the holders of
// the locks the cut heal had taken are gone, and the protocols that judge a holder by its
// age (OpenViking's tokens, OpenClaw's createdAt) see it stale.
func newEngine(tg target, dir string, hook func(op, path string) error, later bool) (*heal.Engine, error) {
	caseDir := filepath.Join(dir, "case")
	pol := fmt.Sprintf("version: 1\nstate_dir: %q\nrules:\n%s", filepath.Join(dir, "state"), tg.rules(caseDir))
	cfg, err := policy.Parse("power.yaml", []byte(pol))
	if err != nil {
		return nil, err
	}
	for i := range cfg.Rules {
		cfg.Rules[i].Lock.Wait = time.Nanosecond // a busy lock is not waited for
		if p := cfg.Rules[i].Lock.Protocol; p == policy.LockPi || p == policy.LockQwenCode {
			// Their liveness is a look at this machine's processes: a real pi or Qwen run
			// (an oracle campaign) naming a sample's session would make the case busy.
			cfg.Rules[i].Lock = policy.Lock{Protocol: "none"}
		}
	}
	ahead := time.Hour
	if later {
		ahead = 2 * time.Hour
	}
	now := func() time.Time { return time.Now().Add(ahead) }
	return heal.New(cfg, heal.Options{OneShot: true, QuietCheck: -1, Faults: hook, Now: now,
		OpenWriters: func(dev, ino uint64) []int { return nil },
		OpenBy:      func([]heal.Identity) ([]int, bool) { return nil, true }}), nil
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
		if os.Geteuid() == 0 {
			if err := os.Chown(p, appUID, appUID); err != nil {
				return err
			}
		}
	}
	return nil
}

// appUID owns the apps' files when the suite runs as root: a heal must give the file it
// writes the owner (and mode) of the one it replaces, durably.
const appUID = 4242

// recording is a clean heal of a target under the recorder.
type recording struct {
	tg           target
	dir          string // where it ran: every state is laid out at a path of the same length
	init, final  Tree
	ops          []Op
	from         int               // the first crash point (the heal's start)
	orig, healed map[string][]byte // the session files at the heal's start and end
	versions     map[string][][]byte
	changed      int             // session files the heal changed
	attrs        map[string]attr // the session files' permission bits and owners after the heal
}

func record(t *testing.T, tg target, dir string) *recording {
	t.Helper()
	rc := &recording{tg: tg, dir: dir, versions: map[string][][]byte{}}
	rec := &Recorder{Root: dir}
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
		e, err := newEngine(tg, dir, rec.Hook, false)
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
	e, err := newEngine(tg, dir, rec.Hook, false)
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
		if !isAppLock(rel) {
			rc.orig[rel] = tg.files[rel]
		}
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
	for rel := range rc.orig {
		if !bytes.Equal(rc.orig[rel], rc.healed[rel]) {
			rc.changed++
		}
	}
	if rc.changed == 0 && tg.gen != nil {
		t.Fatalf("a clean heal changed nothing: %s", brief(reports))
	}
	rc.attrs = caseAttrs(rc.final)
	return rc
}

// caseFiles are the session files of a tree (under case/, app locks, own temps and SQLite's
// scratch files aside).
func caseFiles(tr Tree) map[string][]byte {
	out := map[string][]byte{}
	for _, n := range tr.visible() {
		if nd := tr.Names[n]; isSessionFile(n, nd) && !sqliteScratch(n, tr.Data[nd.Ino]) {
			out[strings.TrimPrefix(n, "case/")] = tr.Data[nd.Ino]
		}
	}
	return out
}

// isSessionFile: the name n of a tree is a session file (under case/, app locks and own
// temps aside).
func isSessionFile(n string, nd Node) bool {
	return !nd.Dir && strings.HasPrefix(n, "case/") && !policy.IsOwnTemp(filepath.Base(n)) && !isAppLock(n)
}

// attr is a file's permission bits and owner.
type attr struct {
	mode fs.FileMode
	own  Owner
}

// caseAttrs are the permission bits and owners of a tree's session files.
func caseAttrs(tr Tree) map[string]attr {
	out := map[string]attr{}
	for _, n := range tr.visible() {
		if nd := tr.Names[n]; isSessionFile(n, nd) && !sqliteScratch(n, tr.Data[nd.Ino]) {
			out[strings.TrimPrefix(n, "case/")] = attr{tr.Mode[nd.Ino], tr.Own[nd.Ino]}
		}
	}
	return out
}

// attrOf is the permission bits and owner of the file at p.
func attrOf(p string) (attr, error) {
	fi, err := os.Lstat(p)
	if err != nil {
		return attr{}, err
	}
	st := fi.Sys().(*syscall.Stat_t)
	return attr{fi.Mode().Perm(), Owner{st.Uid, st.Gid}}, nil
}

// ovLocks are the OpenViking lock files of a tree whose body OpenViking's lockers cannot
// read as a token and would not take as stale (an empty file is stale after the expiry; a
// body of NULs or a torn token makes their acquire fail outright).
func ovLocks(tr Tree) []string {
	var out []string
	for _, n := range tr.visible() {
		if nd := tr.Names[n]; !nd.Dir && unusableToken(filepath.Base(n), tr.Data[nd.Ino]) {
			out = append(out, fmt.Sprintf("%s holds %q", n, tr.Data[nd.Ino]))
		}
	}
	return out
}

// unusableToken: a file of that name and body is an OpenViking lock token the app's lockers
// cannot parse and would not take as stale (an empty one is stale after the expiry).
func unusableToken(name string, b []byte) bool {
	_, _, _, ok := lock.ParseOVToken(b)
	return isTokenName(name) && len(b) > 0 && !ok
}

func isTokenName(name string) bool {
	return name == ".path.ovlock" || strings.HasPrefix(name, ".exact.ovlock.")
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
