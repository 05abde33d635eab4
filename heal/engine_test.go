package heal

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gofrs/flock"
	"github.com/sessionmedic/sessionmedic/heal/fsio"
	"github.com/sessionmedic/sessionmedic/heal/state"
	"github.com/sessionmedic/sessionmedic/policy"
)

const garbage = `{"session_id": "s", "messages": []}{"session_id": "s", "mess`

func praisonEngine(t *testing.T) (*Engine, string) {
	t.Helper()
	return praisonEngineWith(t, Options{})
}

func praisonEngineWith(t *testing.T, o Options) (*Engine, string) {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "sessions")
	os.MkdirAll(dir, 0o755)
	e := testEngineWith(t, "praisonai", dir, o)
	return e, filepath.Join(dir, "s.json")
}

func TestHealWaitsForTheAppLock(t *testing.T) {
	e, p := praisonEngine(t)
	os.WriteFile(p, []byte(garbage), 0o600)
	// PraisonAI holds <file>.lock with flock while it writes.
	fl := flock.New(p + ".lock")
	if ok, err := fl.TryLock(); !ok || err != nil {
		t.Fatal(ok, err)
	}
	r := e.Heal(context.Background(), Target{Path: p, Rule: &e.Policy.Rules[0]}, false)
	if r.Verdict != Busy || r.Action == ActionHealed {
		t.Fatalf("heal under the app's lock: %+v", r)
	}
	if b, _ := os.ReadFile(p); string(b) != garbage {
		t.Fatal("file written while the app held its lock")
	}
	if all, _ := e.Quarantine.List(); len(all) != 0 {
		t.Fatalf("quarantine entries left by a heal that did not happen: %d", len(all))
	}
	fl.Unlock()
	r = e.Heal(context.Background(), Target{Path: p, Rule: &e.Policy.Rules[0]}, false)
	if r.Action != ActionHealed {
		t.Fatalf("after release: %+v", r)
	}
	if _, err := os.Stat(p + ".lock"); err != nil {
		t.Fatal("the app's lock file must never be removed")
	}
}

func TestHealBacksOffWhenTheFileMoves(t *testing.T) {
	e, p := praisonEngine(t)
	os.WriteFile(p, []byte(garbage), 0o600)
	newer := []byte(`{"session_id": "s", "messages": [{"role": "user", "content": "hi", "timestamp": 1, "metadata": {}}]}`)
	for _, step := range []string{"locked", "quarantined"} {
		os.WriteFile(p, []byte(garbage), 0o600)
		e.onStep = func(s, path string) {
			if s == step {
				os.WriteFile(p, newer, 0o600) // the app writes meanwhile
			}
		}
		r := e.Heal(context.Background(), Target{Path: p, Rule: &e.Policy.Rules[0]}, false)
		if r.Verdict != Busy {
			t.Fatalf("app write at %s: %+v", step, r)
		}
		if b, _ := os.ReadFile(p); !bytes.Equal(b, newer) {
			t.Fatalf("app write at %s was lost", step)
		}
	}
}

// copawDamaged returns an engine over a CoPaw sessions dir (CoPaw has no lock: the residual
// window is handled after the rename) and a session file in it holding two raced saves.
func copawDamaged(t *testing.T) (*Engine, string) {
	t.Helper()
	return copawDamagedWith(t, Options{})
}

func copawDamagedWith(t *testing.T, o Options) (*Engine, string) {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "sessions")
	os.MkdirAll(dir, 0o755)
	e := testEngineWith(t, "copaw", dir, o)
	p := filepath.Join(dir, "c.json")
	os.WriteFile(p, []byte(`{"agent": {}}{"agent": {`), 0o644)
	return e, p
}

func TestNewBytesWrittenIntoTheOldInodeArePutBack(t *testing.T) {
	e, p := copawDamaged(t)
	var held *os.File
	e.onStep = func(s, path string) {
		if s == "temp-written" {
			held, _ = os.OpenFile(p, os.O_WRONLY, 0) // the app opened the old inode...
		}
		if s == "renamed" {
			held.WriteAt([]byte(`{"agent": {"n": 1}}      `), 0) // ...and writes after our rename
			held.Close()
		}
	}
	r := e.Heal(context.Background(), Target{Path: p, Rule: &e.Policy.Rules[0]}, false)
	if r.Verdict != Busy {
		t.Fatalf("want busy after the app raced the rename: %+v", r)
	}
	if b, _ := os.ReadFile(p); string(b) != `{"agent": {"n": 1}}      ` {
		t.Fatalf("the app's newest bytes are not at the path: %q", b)
	}
	// The heal's quarantine entry stays (its rename happened), and says the heal did not
	// stand: the file holds the app's bytes, neither the damaged ones nor the heal's.
	if all, _ := e.Quarantine.List(); len(all) != 1 || all[0].Status != state.StatusSuperseded {
		t.Fatalf("quarantine after the put-back: %d entries, %+v", len(all), all)
	}
}

// Report.Wrote names the version a heal left, and only while nobody wrote over it: an app
// without a lock that saves in place right after the rename made a version of its own.
func TestReportWroteIsTheHealsOwnVersion(t *testing.T) {
	e, p := copawDamaged(t)
	rule := &e.Policy.Rules[0]
	r := e.Heal(context.Background(), Target{Path: p, Rule: rule}, false)
	if r.Action != ActionHealed {
		t.Fatalf("heal: %+v", r)
	}
	now, err := Fingerprint(p)
	if err != nil {
		t.Fatal(err)
	}
	if w, ok := r.Wrote[p]; !ok || !w.Same(now) {
		t.Fatalf("Wrote[%s] = %+v (present %v), the file is %+v", p, w, ok, now)
	}

	os.WriteFile(p, []byte(`{"agent": {}}{"agent": {`), 0o644)
	e.onStep = func(s, path string) {
		if s == "renamed" {
			os.WriteFile(p, []byte(`{"agent": {"n": 1}}{"ag`), 0o644) // open "w", in place
		}
	}
	r = e.Heal(context.Background(), Target{Path: p, Rule: rule}, false)
	if r.Action != ActionHealed {
		t.Fatalf("heal: %+v", r)
	}
	if w, ok := r.Wrote[p]; ok {
		t.Fatalf("the app's save after the rename passes for the heal's: %+v", w)
	}
}

// An app without a lock that opened the file (open "w": truncated at once) just before the
// rename and writes a moment after it: the heal waits for it to close the old inode, then puts
// its bytes back; none lands in the unlinked inode unseen.
func TestSlowWriterOfTheOldInodeIsWaitedFor(t *testing.T) {
	var faults faultSwitch
	e, p := copawDamagedWith(t, Options{Faults: faults.fault})
	app := []byte(`{"agent": {"n": 2}}`)
	var writing atomic.Bool
	e.findWriters = func(dev, ino uint64) []int {
		if writing.Load() {
			return []int{4242}
		}
		return nil
	}
	var once sync.Once
	faults.set(func(op, path string) error {
		if op != "rename" || path != p {
			return nil
		}
		once.Do(func() {
			// Past every check, just before the rename: the app's save begins...
			f, err := os.OpenFile(p, os.O_WRONLY|os.O_TRUNC, 0)
			if err != nil {
				t.Error(err)
				return
			}
			writing.Store(true)
			go func() {
				time.Sleep(150 * time.Millisecond) // ...and ends after the rename
				f.Write(app)
				f.Close()
				writing.Store(false)
			}()
		})
		return nil
	})
	r := e.Heal(context.Background(), Target{Path: p, Rule: &e.Policy.Rules[0]}, false)
	if r.Verdict != Busy {
		t.Fatalf("want busy after the app raced the rename: %+v", r)
	}
	if b, _ := os.ReadFile(p); !bytes.Equal(b, app) {
		t.Fatalf("the app's save is not at the path: %q", b)
	}
}

// The app wrote into the old inode and then saved again through the path: its newer save
// stands, the older bytes are not put back over it.
func TestPutBackNeverCoversANewerSave(t *testing.T) {
	var faults faultSwitch
	e, p := copawDamagedWith(t, Options{Faults: faults.fault})
	older, newer := []byte(`{"agent": {"n": 1}}`), []byte(`{"agent": {"n": 1, "m": 2}}`)
	var held *os.File
	var writing atomic.Bool
	e.findWriters = func(dev, ino uint64) []int {
		if writing.Load() {
			// Polled after the rename: the app finishes its save into the old inode,
			// then saves again, through the path.
			held.Write(older)
			held.Close()
			os.WriteFile(p, newer, 0o644)
			writing.Store(false)
			return []int{4242}
		}
		return nil
	}
	var once sync.Once
	faults.set(func(op, path string) error {
		if op == "rename" && path == p {
			once.Do(func() {
				held, _ = os.OpenFile(p, os.O_WRONLY|os.O_TRUNC, 0)
				writing.Store(true)
			})
		}
		return nil
	})
	r := e.Heal(context.Background(), Target{Path: p, Rule: &e.Policy.Rules[0]}, false)
	if r.Verdict != Busy {
		t.Fatalf("want busy: %+v", r)
	}
	if b, _ := os.ReadFile(p); !bytes.Equal(b, newer) {
		t.Fatalf("the app's newest save is not at the path: %q", b)
	}
}

func TestCrashAtEveryStepLeavesOldOrNew(t *testing.T) {
	for _, step := range []string{"locked", "quarantined", "journaled", "temp-written", "renamed", "done"} {
		t.Run(step, func(t *testing.T) {
			e, p := praisonEngine(t)
			os.WriteFile(p, []byte(garbage), 0o600)
			e.onStep = func(s, path string) {
				if s == step {
					panic("crash at " + s)
				}
			}
			func() {
				defer func() { recover() }()
				e.Heal(context.Background(), Target{Path: p, Rule: &e.Policy.Rules[0]}, false)
			}()
			// The flock died with the "process": take it again as a restart would.
			e2 := New(e.Policy, Options{})
			if _, err := e2.Recover(); err != nil {
				t.Fatal(err)
			}
			b, _ := os.ReadFile(p)
			healed := []byte(`{"session_id": "s", "messages": []}`)
			if !bytes.Equal(b, []byte(garbage)) && !bytes.Equal(b, healed) {
				t.Fatalf("after a crash at %s the file is neither old nor new: %q", step, b)
			}
			if !bytes.Equal(b, []byte(garbage)) {
				all, _ := e2.Quarantine.List()
				if len(all) != 1 {
					t.Fatalf("file changed but quarantine has %d entries", len(all))
				}
				if q, _ := all[0].Bytes(); !bytes.Equal(q, []byte(garbage)) {
					t.Fatal("quarantine does not hold the original bytes")
				}
			}
			ents, _ := os.ReadDir(filepath.Dir(p))
			for _, en := range ents {
				if policy.IsOwnTemp(en.Name()) {
					t.Fatalf("stray temp %s after recovery", en.Name())
				}
			}
			if js, _ := os.ReadDir(e2.Journal.Root); len(js) != 0 {
				t.Fatalf("journal not resolved: %d entries", len(js))
			}
			// A heal after the restart finishes the job.
			r := e2.Heal(context.Background(), Target{Path: p, Rule: &e.Policy.Rules[0]}, false)
			if b, _ := os.ReadFile(p); !bytes.Equal(b, healed) {
				t.Fatalf("heal after restart: %+v", r)
			}
		})
	}
}

func TestSymlinksAndSpecialFilesAreSkipped(t *testing.T) {
	e, p := praisonEngine(t)
	outside := filepath.Join(t.TempDir(), "outside.json")
	os.WriteFile(outside, []byte(garbage), 0o600)
	os.Symlink(outside, p)
	r := e.Heal(context.Background(), Target{Path: p, Rule: &e.Policy.Rules[0]}, false)
	if r.Verdict != Skipped {
		t.Fatalf("symlink: %+v", r)
	}
	if b, _ := os.ReadFile(outside); string(b) != garbage {
		t.Fatal("a symlink target was modified")
	}
}

func TestObserveModeNeverWrites(t *testing.T) {
	e, p := praisonEngine(t)
	e.Policy.Rules[0].Mode = "observe"
	os.WriteFile(p, []byte(garbage), 0o600)
	r := e.Heal(context.Background(), Target{Path: p, Rule: &e.Policy.Rules[0]}, false)
	if r.Action != ActionRefused || r.Verdict != Damaged {
		t.Fatalf("observe: %+v", r)
	}
	if b, _ := os.ReadFile(p); string(b) != garbage {
		t.Fatal("observe mode wrote the file")
	}
	if _, err := os.Stat(e.StateDir); err == nil {
		t.Fatal("observe mode wrote state")
	}
}

func TestMaxLossRefuses(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "x.jsonl")
	os.WriteFile(p, []byte("{\"a\":1}\nnope\nnope\nnope\n"), 0o644)
	r := fuzzRule("jsonl")
	r.Limits.MaxLoss = 0.25
	e := New(&policy.Config{Version: 1, StateDir: filepath.Join(dir, ".state")}, Options{})
	rep := e.Heal(context.Background(), Target{Path: p, Rule: r}, false)
	if rep.Action != ActionRefused || rep.LostRecords != 3 {
		t.Fatalf("want refused over max_loss: %+v", rep)
	}
	if b, _ := os.ReadFile(p); string(b) != "{\"a\":1}\nnope\nnope\nnope\n" {
		t.Fatal("refused heal wrote the file")
	}
}

func TestHealedFileKeepsModeAndQuarantinePrunes(t *testing.T) {
	e, p := praisonEngine(t)
	os.WriteFile(p, []byte(garbage), 0o640)
	os.Chmod(p, 0o640)
	e.Heal(context.Background(), Target{Path: p, Rule: &e.Policy.Rules[0]}, false)
	fi, _ := os.Stat(p)
	if fi.Mode().Perm() != 0o640 {
		t.Fatalf("mode %v, want 0640", fi.Mode().Perm())
	}
	n, err := e.Quarantine.Prune(time.Now().Add(48*time.Hour), 24*time.Hour, 0)
	if err != nil || n != 1 {
		t.Fatalf("prune: %d %v", n, err)
	}
}

// A long-lived writer (an agent CLI that keeps its transcript open, O_APPEND) holds a file
// whose last line is torn: nothing is changed beside it, not even a cut in place. A cut in
// place (no lease is granted beside another descriptor) would take with it a record the
// writer appends between the cut's last check and the cut — seen in the race suite under
// load: a line appended then was cut off, neither healed nor reported. Deferred and said;
// the writer's appends land in the file, one made while the heal is under way too; once it
// lets the file go, the heal quarantines every byte it wrote.
func TestOpenWriterDefersEveryChange(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "t.jsonl")
	torn := "{\"a\":1}\n{\"a\":2}\n{\"a\""
	os.WriteFile(p, []byte(torn), 0o644)
	w, err := os.OpenFile(p, os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	fi, _ := w.Stat()
	ino := fsio.IdentityOf(fi).Ino
	e := New(&policy.Config{Version: 1, StateDir: filepath.Join(dir, ".state")}, Options{})
	var open atomic.Bool
	open.Store(true)
	e.findWriters = func(dev, i uint64) []int {
		if i == ino && open.Load() {
			return []int{4242}
		}
		return nil
	}
	for _, dry := range []bool{true, false} {
		r := e.Heal(context.Background(), Target{Path: p, Rule: fuzzRule("jsonl")}, dry)
		if r.Verdict != Busy || r.Action == ActionHealed || !strings.Contains(r.Reason, "held open for writing by pid [4242]") {
			t.Fatalf("dry run %v, beside a writer: %+v", dry, r)
		}
	}
	// The writer appends while a heal is under way (once the file is quarantined, before
	// anything would change it): busy, and its record is in the file.
	appended := "{\"a\":3}\n"
	var once sync.Once
	e.onStep = func(step, _ string) {
		if step == "quarantined" {
			once.Do(func() { w.Write([]byte(appended)) })
		}
	}
	if r := e.Heal(context.Background(), Target{Path: p, Rule: fuzzRule("jsonl")}, false); r.Verdict != Busy {
		t.Fatalf("an append during the heal beside a writer: %+v", r)
	}
	e.onStep = nil
	b, _ := os.ReadFile(p)
	if string(b) != torn+appended {
		t.Fatalf("beside a writer the file became %q, want %q", b, torn+appended)
	}
	if st, _ := os.Stat(p); fsio.IdentityOf(st).Ino != ino {
		t.Fatal("the file was replaced while a writer held it open")
	}
	if ms, _ := e.Quarantine.List(); len(ms) != 0 {
		t.Fatalf("%d quarantine entries of a heal that changed nothing", len(ms))
	}
	// The writer lets the file go: healed, every byte it wrote kept in quarantine.
	open.Store(false)
	w.Close()
	r := e.Heal(context.Background(), Target{Path: p, Rule: fuzzRule("jsonl")}, false)
	ms, _ := e.Quarantine.List()
	if r.Action != ActionHealed || len(ms) != 1 {
		t.Fatalf("after the writer let go: %+v, %d quarantine entries", r, len(ms))
	}
	if q, err := ms[0].Bytes(); err != nil || string(q) != torn+appended {
		t.Fatalf("quarantined %q (%v), want %q", q, err, torn+appended)
	}
}

// An app without a lock that appends (Claude Code's appendFile) appended to the old inode
// during the heal, then to the healed file: both appends are put back, in order, after the
// heal's bytes; none is lost in the unlinked inode. So for a heal planned on the bytes held
// and for one planned from the file (as every app log's is), whose bytes the put-back reads
// streaming.
func TestAppendsOnBothInodesArePutBackInOrder(t *testing.T) {
	for _, big := range []bool{false, true} {
		t.Run(fmt.Sprint("from the file: ", big), func(t *testing.T) { appendsOnBothInodes(t, big) })
	}
}

func appendsOnBothInodes(t *testing.T, big bool) {
	e, faults, _, p, appendTo := appendingApp(t)
	if big {
		e.bigThreshold = 1
	}
	var renamed atomic.Bool
	e.findWriters = func(dev, ino uint64) []int {
		if renamed.CompareAndSwap(true, false) {
			appendTo("{\"n\":4}\n") // after the rename: into the healed file
		}
		return nil
	}
	var once sync.Once
	faults.set(func(op, path string) error {
		if op == "rename" && path == p {
			once.Do(func() {
				appendTo("{\"n\":3}\n") // past every check, just before the rename: into the old inode
				renamed.Store(true)
			})
		}
		return nil
	})
	r := e.Heal(context.Background(), Target{Path: p, Rule: &e.Policy.Rules[0]}, false)
	if r.Verdict != Busy {
		t.Fatalf("want busy (looked at again later): %+v", r)
	}
	want := "{\"n\":1}\n{\"n\":2}\n{\"n\":3}\n{\"n\":4}\n"
	if b, _ := os.ReadFile(p); string(b) != want {
		t.Fatalf("after the heal: %q, want the healed bytes and both appends in order %q", b, want)
	}
	all, _ := e.Quarantine.List()
	if len(all) != 1 {
		t.Fatalf("%d quarantine entries, want the damaged original's", len(all))
	}
	// The entry holds the original (a linked one, the old inode: the append written into it
	// after the rename follows the original's bytes there, and is at the path too).
	if b, err := all[0].Bytes(); err != nil || string(b) != "{\"n\":1}\nxx\n{\"n\":2}\n" {
		t.Fatalf("quarantine %q (%v), want the original", b, err)
	}
}

// An app without a lock that appends (Claude Code's appendFile) appended to the old inode
// during the heal, and appends again, through the path, into the healed file while the old
// inode's bytes are copied for their put-back: that append is not lost under the put-back's
// rename; both appends are put back in order after the heal's bytes.
func TestAppendDuringThePutBackIsKept(t *testing.T) {
	for _, big := range []bool{false, true} {
		t.Run(fmt.Sprint("from the file: ", big), func(t *testing.T) { appendDuringThePutBack(t, big) })
	}
}

func appendDuringThePutBack(t *testing.T, big bool) {
	e, faults, dir, p, appendTo := appendingApp(t)
	if big {
		e.bigThreshold = 1
	}
	e.findWriters = func(dev, ino uint64) []int { return nil }
	renamed, copying := false, false
	faults.set(func(op, path string) error {
		switch {
		case op == "rename" && path == p && !renamed:
			renamed = true
			appendTo("{\"n\":3}\n") // past every check, just before the heal's rename: into the old inode
		case op == "fsync" && renamed && !copying && filepath.Dir(path) == dir:
			copying = true
			appendTo("{\"n\":4}\n") // while the put-back's temp is synced: into the healed file
		}
		return nil
	})
	r := e.Heal(context.Background(), Target{Path: p, Rule: &e.Policy.Rules[0]}, false)
	if !copying {
		t.Fatal("the heal put nothing back")
	}
	if r.Verdict != Busy {
		t.Fatalf("want busy (looked at again later): %+v", r)
	}
	want := "{\"n\":1}\n{\"n\":2}\n{\"n\":3}\n{\"n\":4}\n"
	if b, _ := os.ReadFile(p); string(b) != want {
		t.Fatalf("after the heal: %q, want the healed bytes and both appends in order %q", b, want)
	}
}

// appendingApp is an engine over a JSONL file with a damaged middle line whose app, without
// a lock, appends (Claude Code's appendFile): the engine, its fault switch, the directory,
// the file and the app's append.
func appendingApp(t *testing.T) (*Engine, *faultSwitch, string, string, func(string)) {
	t.Helper()
	faults := &faultSwitch{}
	dir := filepath.Join(t.TempDir(), "sessions")
	os.MkdirAll(dir, 0o755)
	cfg := &policy.Config{Version: 1, StateDir: filepath.Join(t.TempDir(), "state"), Rules: []policy.Rule{{
		Name: "j", Format: "jsonl", Paths: []string{dir}, Lock: policy.Lock{Protocol: "none"},
		Strategies: []policy.Strategy{policy.Salvage}, Limits: policy.Limits{MaxLoss: 0.9}, Mode: "heal",
	}}}
	e := New(cfg, Options{Faults: faults.fault, QuietCheck: time.Millisecond})
	p := filepath.Join(dir, "s.jsonl")
	os.WriteFile(p, []byte("{\"n\":1}\nxx\n{\"n\":2}\n"), 0o644)
	appendTo := func(s string) {
		f, err := os.OpenFile(p, os.O_WRONLY|os.O_APPEND, 0)
		if err != nil {
			t.Error(err)
			return
		}
		f.WriteString(s)
		f.Close()
	}
	return e, faults, dir, p, appendTo
}

// A file held open for writing is never changed, and a cut in place cuts the inode: never of
// a file another name links to (a session swapped for a hard link of a file outside the tree,
// held open by the attacker so that the heal would not replace it). Deferred, and the other
// name's file is untouched.
func TestTailCutBesideAWriterNeverCutsAHardLinkedFile(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "sessions")
	outside := filepath.Join(t.TempDir(), "secret.jsonl")
	os.MkdirAll(dir, 0o755)
	cfg := &policy.Config{Version: 1, StateDir: filepath.Join(t.TempDir(), "state"), Rules: []policy.Rule{{
		Name: "j", Format: "jsonl", Paths: []string{dir}, Lock: policy.Lock{Protocol: "none"},
		Strategies: []policy.Strategy{policy.Salvage}, Limits: policy.Limits{MaxLoss: 0.9}, Mode: "heal",
	}}}
	e := New(cfg, Options{QuietCheck: time.Millisecond, OpenWriters: func(dev, ino uint64) []int { return []int{4242} }})
	torn := "{\"n\":1}\n{\"n\":"
	if err := os.WriteFile(outside, []byte(torn), 0o644); err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(dir, "s.jsonl")
	if err := os.Link(outside, p); err != nil {
		t.Skip("no hard links here:", err)
	}
	r := e.Heal(context.Background(), Target{Path: p, Rule: &e.Policy.Rules[0]}, false)
	if b, _ := os.ReadFile(outside); string(b) != torn {
		t.Fatalf("the file outside was cut through its hard link: %q (heal: %+v)", b, r)
	}
	if r.Verdict != Busy {
		t.Fatalf("want deferred (busy): %+v", r)
	}
	// With no other name, deferred all the same beside the writer; cut once it is gone.
	os.Remove(outside)
	r = e.Heal(context.Background(), Target{Path: p, Rule: &e.Policy.Rules[0]}, false)
	if b, _ := os.ReadFile(p); r.Verdict != Busy || string(b) != torn {
		t.Fatalf("a lone file beside a writer: %q, %+v", b, r)
	}
	e.findWriters = nil
	r = e.Heal(context.Background(), Target{Path: p, Rule: &e.Policy.Rules[0]}, false)
	if b, _ := os.ReadFile(p); r.Action != ActionHealed || string(b) != "{\"n\":1}\n" {
		t.Fatalf("a lone file once its writer is gone: %q, %+v", b, r)
	}
}

// An app without a lock may be in the middle of a save: the file is written only once it
// has stayed the version planned from for the quiet check's time (counted from the end of
// the inspection), and a save in that time, while the journal and the quarantine are made,
// is seen: busy, the app's bytes stand, and nothing is left in quarantine.
func TestQuietCheckBeforeTheFirstWrite(t *testing.T) {
	const quiet = 200 * time.Millisecond
	for _, saves := range []bool{false, true} {
		t.Run(fmt.Sprint("saves: ", saves), func(t *testing.T) {
			e, _, _, p, appendTo := appendingApp(t)
			e.quietCheck = quiet
			start := time.Now()
			var firstWrite time.Duration
			e.onStep = func(s, path string) {
				if s == "quarantined" && saves {
					appendTo("{\"n\":3}\n")
				}
				if s == "temp-written" && firstWrite == 0 {
					firstWrite = time.Since(start)
				}
			}
			r := e.Heal(context.Background(), Target{Path: p, Rule: &e.Policy.Rules[0]}, false)
			if !saves {
				if r.Action != ActionHealed || firstWrite < quiet {
					t.Fatalf("healed %v, its temp written %v after the heal began (quiet check %v)", r.Action, firstWrite, quiet)
				}
				return
			}
			if r.Verdict != Busy || firstWrite != 0 {
				t.Fatalf("a save during the quiet check: %+v, temp written %v", r, firstWrite)
			}
			if b, _ := os.ReadFile(p); string(b) != linkedOrig+"{\"n\":3}\n" {
				t.Fatalf("the app's save does not stand: %q", b)
			}
			if all, _ := e.Quarantine.List(); len(all) != 0 || nlink(t, p) != 1 {
				t.Fatalf("%d quarantine entries, %d names of the file", len(all), nlink(t, p))
			}
		})
	}
}
