package heal

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/sessionmedic/sessionmedic/heal/format"
	"github.com/sessionmedic/sessionmedic/heal/fsio"
	"github.com/sessionmedic/sessionmedic/heal/state"
	"github.com/sessionmedic/sessionmedic/policy"
)

// gluedApp is a healthy sample of each of streamApps with its middle record glued to the
// next (a replace: its salvage puts the '\n' back), beside the sample itself.
func gluedApp(t *testing.T, preset string) (damaged, healed []byte) {
	t.Helper()
	for _, orig := range jsonlSamples(t, preset, "healthy") {
		lines := bytes.SplitAfter(orig, []byte("\n"))
		if len(lines) > 0 && len(lines[len(lines)-1]) == 0 {
			lines = lines[:len(lines)-1]
		}
		if len(lines) < 3 {
			continue
		}
		k := len(lines) / 2
		glued := append(bytes.Clone(bytes.TrimSuffix(lines[k], []byte("\n"))), lines[k+1]...)
		var d []byte
		for i, l := range lines {
			switch i {
			case k:
				d = append(d, glued...)
			case k + 1:
			default:
				d = append(d, l...)
			}
		}
		return d, orig
	}
	t.Fatalf("%s: no sample of three lines", preset)
	return nil, nil
}

// salvageTarget writes data at rel under root and is its path and its target: the preset's
// rule, healed by its salvage alone.
func salvageTarget(t *testing.T, root, preset, rel string, data []byte) (string, Target) {
	t.Helper()
	p := filepath.Join(root, rel)
	os.MkdirAll(filepath.Dir(p), 0o755)
	if err := os.WriteFile(p, data, 0o600); err != nil {
		t.Fatal(err)
	}
	tg := Target{Path: p, Rule: appRule(t, preset, root)}
	tg.Rule.Strategies = []policy.Strategy{policy.Salvage}
	return p, tg
}

// journalEntry is the one journal entry under e's journal, or nil.
func journalEntry(t *testing.T, e *Engine) *state.Entry {
	t.Helper()
	ents, _ := filepath.Glob(filepath.Join(e.Journal.Root, "*.json"))
	if len(ents) != 1 {
		return nil
	}
	b, err := os.ReadFile(ents[0])
	if err != nil {
		t.Fatal(err)
	}
	var en state.Entry
	if err := json.Unmarshal(b, &en); err != nil {
		t.Fatal(err)
	}
	return &en
}

// TestBigReplaceSumTakenAsWritten: a big app log whose salvage replaces it (a record glued
// in its middle) has its result's sha256 taken while the new file is written, not in its
// plan: the journal entry has no new sum while the temp is written, has the temp's own sum
// before the rename, and a crash at any step leaves the old file or the healed one, which
// the restart's recovery tells apart (rolled back before the rename, applied after).
func TestBigReplaceSumTakenAsWritten(t *testing.T) {
	for _, every := range []int64{0, 64} {
		// Also with the original's hash state kept every 64 bytes: the result's sum goes on
		// from the state of the bytes it starts with (format.Splice.ResumeSum).
		if every > 0 {
			defer format.SetHashStateEvery(every)()
		}
		bigReplaceSumTakenAsWritten(t, every)
	}
}

func bigReplaceSumTakenAsWritten(t *testing.T, every int64) {
	for _, a := range []struct{ preset, rel string }{streamApps[0], streamApps[1], streamApps[4]} {
		damaged, healed := gluedApp(t, a.preset)
		for _, step := range []string{"", "journaled", "quarantined", "temp-written", "quarantined-late", "sum-journaled", "renamed", "done"} {
			t.Run(fmt.Sprintf("%s/%s/states every %d", a.preset, step, every), func(t *testing.T) {
				e, root := bigEngine(t, 1)
				p, tg := salvageTarget(t, root, a.preset, a.rel, damaged)
				var atWrite, atSum *state.Entry
				var temp []byte
				var qBefore []string // the quarantine's entries once the new file is written
				e.onStep = func(s, _ string) {
					switch s {
					case "temp-written":
						atWrite = journalEntry(t, e)
						if atWrite != nil {
							temp, _ = os.ReadFile(atWrite.Edits[0].Temp)
						}
						qBefore, _ = filepath.Glob(filepath.Join(e.Quarantine.Root, "*", "*"))
					case "sum-journaled":
						atSum = journalEntry(t, e)
					}
					if s == step {
						panic("crash at " + s)
					}
				}
				func() {
					defer func() {
						if r := recover(); r != nil && step == "" {
							panic(r)
						}
					}()
					r := e.Heal(context.Background(), tg, false)
					if r.Action != ActionHealed {
						t.Fatalf("not healed: %+v", r)
					}
				}()
				written := step != "journaled" && step != "quarantined"
				// The original's sum is taken beside the write: the journal learns it with
				// the new one, and the original goes to quarantine once the new file is
				// written, before the rename.
				if written && (atWrite == nil || atWrite.Edits[0].NewSHA256 != "" || atWrite.Edits[0].OldSHA256 != "" || len(qBefore) != 0) {
					t.Fatalf("while the temp is written the journal holds %+v and the quarantine %q, want an entry without the sums and no quarantine yet", atWrite, qBefore)
				}
				if written && step != "temp-written" && step != "quarantined-late" {
					if atSum == nil || string(temp) != string(healed) {
						t.Fatalf("before the rename: journal %+v, temp %d bytes (want the healed %d)", atSum, len(temp), len(healed))
					}
					if s := sha256.Sum256(temp); atSum.Edits[0].NewSHA256 != hex.EncodeToString(s[:]) {
						t.Fatalf("the journal's new sum %s is not the temp's", atSum.Edits[0].NewSHA256)
					}
					if s := sha256.Sum256(damaged); atSum.Edits[0].OldSHA256 != hex.EncodeToString(s[:]) {
						t.Fatalf("the journal's old sum %s is not the original's", atSum.Edits[0].OldSHA256)
					}
				}
				if step == "" {
					// The entry is the original's own inode, its manifest the two sums.
					ms, err := e.Quarantine.List()
					if err != nil || len(ms) != 1 {
						t.Fatalf("quarantine: %d entries (%v), want 1", len(ms), err)
					}
					m := ms[0]
					old, nw := sha256.Sum256(damaged), sha256.Sum256(healed)
					q, _ := os.ReadFile(filepath.Join(e.Quarantine.EntryDir(m, m.Created), m.File))
					if m.SHA256 != hex.EncodeToString(old[:]) || m.NewSHA256 != hex.EncodeToString(nw[:]) || string(q) != string(damaged) {
						t.Fatalf("quarantine manifest %+v and %d bytes, want the original's sum, the result's, and the original", m, len(q))
					}
				}
				e2 := New(e.Policy, Options{})
				e2.bigThreshold = 1
				rec, err := e2.Recover()
				if err != nil {
					t.Fatal(err)
				}
				b, _ := os.ReadFile(p)
				want := "applied"
				switch string(b) {
				case string(healed):
				case string(damaged):
					want = "rolled-back"
				default:
					t.Fatalf("after a crash at %s the file is neither old nor new (%d bytes)", step, len(b))
				}
				if (step == "" || step == "done") != (want == "applied") && step != "renamed" {
					t.Fatalf("crash at %q: the file is %s", step, want)
				}
				if step == "renamed" && want != "applied" {
					t.Fatal("crash after the rename: the file is the old one")
				}
				for _, r := range rec {
					if r.Outcome != want {
						t.Fatalf("crash at %s: recovered %s, the file %s", step, r.Outcome, want)
					}
				}
				if step != "" && step != "done" && len(rec) != 1 {
					t.Fatalf("crash at %s: %d journal entries resolved, want 1", step, len(rec))
				}
				ents, _ := os.ReadDir(filepath.Dir(p))
				for _, en := range ents {
					if policy.IsOwnTemp(en.Name()) {
						t.Fatalf("stray temp %s after recovery", en.Name())
					}
				}
				e2.Heal(context.Background(), tg, false)
				if b, _ := os.ReadFile(p); string(b) != string(healed) {
					t.Fatalf("heal after restart: %d bytes, want %d", len(b), len(healed))
				}
			})
		}
	}
}

// TestBigReplaceJournalUpdateFails: when the journal cannot be told the new sum (its entry
// cannot be written again), the file is never replaced: the temp is removed, the heal says
// why, the journal is resolved, and a heal once the fault clears heals.
func TestBigReplaceJournalUpdateFails(t *testing.T) {
	for _, op := range []string{"create", "write", "fsync", "rename"} {
		t.Run(op, func(t *testing.T) {
			damaged, healed := gluedApp(t, streamApps[0].preset)
			journal := 0
			failing := true
			e, root := bigEngineWith(t, 1, Options{Faults: func(o, path string) error {
				if failing && strings.Contains(path, string(filepath.Separator)+"journal"+string(filepath.Separator)) && o == op {
					if journal++; journal == 2 {
						return syscall.EIO
					}
				}
				return nil
			}})
			p, tg := salvageTarget(t, root, streamApps[0].preset, streamApps[0].rel, damaged)
			told := false
			e.onStep = func(s, _ string) { told = told || s == "sum-journaled" }
			r := e.Heal(context.Background(), tg, false)
			if r.Action == ActionHealed || told || journal < 2 {
				t.Fatalf("the journal's update failed (%d %s), yet: %+v (told %v)", journal, op, r, told)
			}
			if b, _ := os.ReadFile(p); !bytes.Equal(b, damaged) {
				t.Fatal("the file changed though the journal was not told its new sum")
			}
			ents, _ := os.ReadDir(filepath.Dir(p))
			for _, en := range ents {
				if policy.IsOwnTemp(en.Name()) {
					t.Fatalf("stray temp %s", en.Name())
				}
			}
			if js, _ := filepath.Glob(filepath.Join(e.Journal.Root, "*.json")); len(js) != 0 {
				t.Fatalf("journal entries left: %v", js)
			}
			failing = false
			if r := e.Heal(context.Background(), tg, false); r.Action != ActionHealed {
				t.Fatalf("once the fault cleared: %+v", r)
			}
			if b, _ := os.ReadFile(p); !bytes.Equal(b, healed) {
				t.Fatal("not healed once the fault cleared")
			}
		})
	}
}

// TestAppWritesBeforeTheLateQuarantine: an app that writes its log while its replace's new
// file is written (the original's sum taken beside it, its quarantine made after it) makes
// the heal back off: busy, the temp removed, nothing kept in quarantine, the journal
// resolved, the app's bytes as it wrote them; the next heal of the quiet file heals it.
func TestAppWritesBeforeTheLateQuarantine(t *testing.T) {
	a := streamApps[0]
	damaged, healed := gluedApp(t, a.preset)
	e, root := bigEngine(t, 1)
	p, tg := salvageTarget(t, root, a.preset, a.rel, damaged)
	appended := []byte(`{"type":"last-prompt","lastPrompt":"x","sessionId":"7c2e1b4a-9d3f-4e8a-b6c1-2f5a8d9e0b13"}` + "\n")
	wrote := false
	e.onStep = func(s, _ string) {
		if s == "temp-written" && !wrote {
			wrote = true
			f, err := os.OpenFile(p, os.O_WRONLY|os.O_APPEND, 0)
			if err != nil {
				t.Fatal(err)
			}
			f.Write(appended)
			f.Close()
		}
	}
	r := e.Heal(context.Background(), tg, false)
	if !wrote || r.Verdict != Busy || r.Action != ActionNone || r.Quarantine != "" {
		t.Fatalf("an app's write beside the new file's: %+v, want busy (wrote: %v)", r, wrote)
	}
	if b, _ := os.ReadFile(p); string(b) != string(damaged)+string(appended) {
		t.Fatalf("the file after the backoff: %d bytes, want the app's %d", len(b), len(damaged)+len(appended))
	}
	if ms, _ := e.Quarantine.List(); len(ms) != 0 {
		t.Fatalf("%d quarantine entries after a heal that backed off", len(ms))
	}
	if en := journalEntry(t, e); en != nil {
		t.Fatalf("journal entry left: %+v", en)
	}
	ents, _ := os.ReadDir(filepath.Dir(p))
	for _, en := range ents {
		if policy.IsOwnTemp(en.Name()) {
			t.Fatalf("stray temp %s", en.Name())
		}
	}
	r = e.Heal(context.Background(), tg, false)
	if b, _ := os.ReadFile(p); r.Action != ActionHealed || string(b) != string(healed)+string(appended) {
		t.Fatalf("the next heal: %+v, %d bytes, want healed, %d", r, len(b), len(healed)+len(appended))
	}
}

// TestOldSumFailedOnAChangedFile: a read of the original for its sum that failed, once the
// file is no longer the version planned from, is busy (the next settle heals it); on the
// version planned from, an error that says so.
func TestOldSumFailedOnAChangedFile(t *testing.T) {
	e, root := bigEngine(t, 1)
	p := filepath.Join(root, "s.jsonl")
	if err := os.WriteFile(p, []byte("{}\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	id, err := fsio.StatIdentity(p)
	if err != nil {
		t.Fatal(err)
	}
	failing := func() *edit {
		return &edit{path: p, oldID: id, big: &bigEdit{oldSum: format.HashAside(failingReader{}, 10)}}
	}
	if err := e.waitOld(failing()); err == nil || errors.Is(err, errBusy) || !strings.Contains(err.Error(), "the sum of its bytes") {
		t.Fatalf("a failed sum of the version planned from: %v, want an error that says so", err)
	}
	if err := os.WriteFile(p, []byte("{}\n{}\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := e.waitOld(failing()); !errors.Is(err, errBusy) {
		t.Fatalf("a failed sum of a file changed since: %v, want busy", err)
	}
	ok := &edit{path: p, oldID: id, big: &bigEdit{oldSum: format.HashAside(strings.NewReader("{}\n"), 3)}}
	if err := e.waitOld(ok); err != nil || ok.big.oldSHA != fmt.Sprintf("%x", sha256.Sum256([]byte("{}\n"))) || ok.big.oldSum != nil {
		t.Fatalf("a sum taken: %v, %q", err, ok.big.oldSHA)
	}
}

type failingReader struct{}

func (failingReader) ReadAt([]byte, int64) (int, error) { return 0, syscall.EIO }
