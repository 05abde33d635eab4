package heal

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/sessionmedic/sessionmedic/heal/format"
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
		for _, step := range []string{"", "journaled", "quarantined", "temp-written", "sum-journaled", "renamed", "done"} {
			t.Run(fmt.Sprintf("%s/%s/states every %d", a.preset, step, every), func(t *testing.T) {
				e, root := bigEngine(t, 1)
				p := filepath.Join(root, a.rel)
				os.MkdirAll(filepath.Dir(p), 0o755)
				if err := os.WriteFile(p, damaged, 0o600); err != nil {
					t.Fatal(err)
				}
				tg := Target{Path: p, Rule: appRule(t, a.preset, root)}
				tg.Rule.Strategies = []policy.Strategy{policy.Salvage}
				var atWrite, atSum *state.Entry
				var temp []byte
				e.onStep = func(s, _ string) {
					switch s {
					case "temp-written":
						atWrite = journalEntry(t, e)
						if atWrite != nil {
							temp, _ = os.ReadFile(atWrite.Edits[0].Temp)
						}
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
				if written && (atWrite == nil || atWrite.Edits[0].NewSHA256 != "") {
					t.Fatalf("while the temp is written the journal holds %+v, want an entry without the new sum", atWrite)
				}
				if written && step != "temp-written" {
					if atSum == nil || string(temp) != string(healed) {
						t.Fatalf("before the rename: journal %+v, temp %d bytes (want the healed %d)", atSum, len(temp), len(healed))
					}
					if s := sha256.Sum256(temp); atSum.Edits[0].NewSHA256 != hex.EncodeToString(s[:]) {
						t.Fatalf("the journal's new sum %s is not the temp's", atSum.Edits[0].NewSHA256)
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
			p := filepath.Join(root, streamApps[0].rel)
			os.MkdirAll(filepath.Dir(p), 0o755)
			if err := os.WriteFile(p, damaged, 0o600); err != nil {
				t.Fatal(err)
			}
			tg := Target{Path: p, Rule: appRule(t, streamApps[0].preset, root)}
			tg.Rule.Strategies = []policy.Strategy{policy.Salvage}
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
