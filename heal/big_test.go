package heal

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	fmtpkg "github.com/sessionmedic/sessionmedic/heal/format"
	"github.com/sessionmedic/sessionmedic/policy"
)

// bigRule: the strategies that apply to generic JSON and JSONL.
func bigRule(format, root string) *policy.Rule {
	return &policy.Rule{Name: "big-" + format, Format: format, Paths: []string{root}, Lock: policy.Lock{Protocol: "none"},
		Strategies: []policy.Strategy{"salvage", "normalize", "last-good"}, KeepLastGood: true, Mode: "heal",
		Limits: policy.Limits{MaxLoss: 1}}
}

// bigEngine is an engine whose streamed path takes every file over threshold bytes (0: the
// default size, so that the small test files take the in-memory path).
func bigEngine(t *testing.T, threshold int64) (*Engine, string) {
	t.Helper()
	return bigEngineWith(t, threshold, Options{})
}

func bigEngineWith(t *testing.T, threshold int64, o Options) (*Engine, string) {
	t.Helper()
	dir := t.TempDir()
	root := filepath.Join(dir, "sessions")
	os.MkdirAll(root, 0o755)
	e := New(&policy.Config{Version: 1, StateDir: filepath.Join(dir, "state")}, o)
	e.bigThreshold = threshold
	return e, root
}

type bigCase struct {
	name, format, data string
	lastGood           string // a last-good copy to plant, if any
}

var bigCases = []bigCase{
	{"json/trailing", "json", `{"a":1}{"a":`, ""},
	{"json/trailing-lines", "json", "{\"a\": [1, 2]}\n  }\n}", ""},
	{"json/array-trailing", "json", `[1,2] x`, ""},
	{"json/number", "json", `  12x`, ""},
	{"json/string", "json", `"s" 1`, ""},
	{"json/nul-tail", "json", "{\"a\":1}\x00\x00\x00", ""},
	{"json/bom", "json", "\xef\xbb\xbf{\"a\":1}\n", ""},
	{"json/bom-array", "json", "\xef\xbb\xbf [1]", ""},
	{"json/bom-garbage", "json", "\xef\xbb\xbf{\"a\":1} x", ""},
	{"json/truncated", "json", `{"a":[1,2`, ""},
	{"json/truncated-last-good", "json", `{"a":[1,2`, `{"a":[1]}`},
	{"json/trailing-last-good", "json", `{"a":1} x`, `{"a":1,"b":2}`},
	{"json/nul", "json", "\x00\x00\x00\x00", `{"a":0}`},
	{"json/utf8", "json", "{\"a\":\"\xc3\xa9\"} \xff", ""},
	{"json/bad-utf8", "json", "{\"a\":\"\xff\"}", ""},
	{"json/healthy", "json", `{"a":1}`, ""},
	{"jsonl/torn", "jsonl", "{\"a\":1}\n{\"b\":2}\n{\"c\":", ""},
	{"jsonl/torn-contained", "jsonl", "{\"a\":1}\n{\"a\":", ""},
	{"jsonl/middle", "jsonl", "{\"a\":1}\n[1]\nnot json\n{\"b\":2}\n", ""},
	{"jsonl/blank", "jsonl", "{\"a\":1}\n\n  \n{\"b\":2}\n{", ""},
	{"jsonl/blank-tail", "jsonl", "{\"a\":1}\n{\"b\":2}\n\n\nx", ""},
	{"jsonl/unterminated", "jsonl", "{\"a\":1}\n{\"b\":2}", ""},
	{"jsonl/crlf", "jsonl", "{\"a\":1}\r\n{\"b\":2}\r\n{\"c\"\r\n", ""},
	{"jsonl/bom", "jsonl", "\xef\xbb\xbf{\"a\":1}\n{\"b\":2}\n", ""},
	{"jsonl/bom-only", "jsonl", "\xef\xbb\xbf\n{\"b\":2}\n", ""},
	{"jsonl/bom-torn", "jsonl", "\xef\xbb\xbf{\"a\":1}\n{\"b\":", ""},
	{"jsonl/nul", "jsonl", "\x00\x00\x00\x00\x00", "{\"a\":1}\n"},
	{"jsonl/not-object-last", "jsonl", "{\"a\":1}\n[1]", ""},
	{"jsonl/all-bad", "jsonl", "x\ny\n", ""},
	{"jsonl/all-bad-last-good", "jsonl", "x\ny\n", "{\"a\":1}\n{\"b\":2}\n"},
	{"jsonl/union", "jsonl", "{\"a\":1}\n{\"a\":2}\nxx\n{\"a\":4}\n", "{\"a\":1}\n{\"a\":2}\n{\"a\":3}\n"},
	{"jsonl/last-good-wins", "jsonl", "{\"a\":1}\nx\n", "{\"a\":1}\n{\"b\":2}\n{\"c\":3}\n"},
	{"jsonl/bad-utf8", "jsonl", "{\"a\":1}\n{\"b\":\"\xff\"}\n{\"c\":3}\n", ""},
	{"jsonl/healthy", "jsonl", "{\"a\":1}\n{\"b\":2}\n", ""},
	// A healthy file that is a line-aligned prefix of its last-good copy is cut short, on
	// both paths, whether or not the copy itself is fit to restore.
	{"jsonl/prefix-of-last-good", "jsonl", "{\"a\":1}\n", "{\"a\":1}\n{\"b\":2}\n{\"c\":3}\n"},
	{"jsonl/prefix-of-bad-last-good", "jsonl", "{\"a\":1}\n", "{\"a\":1}\n{\"b\":2}garbage\n"},
	// With a backup (bigBackups), beside the salvage and the last-good copy.
	{"jsonl/backup", "jsonl", "x\ny\n", ""},
	{"jsonl/backup-keeps-more", "jsonl", "{\"a\":1}\nx\n", ""},
	{"jsonl/backup-keeps-less", "jsonl", "{\"a\":1}\n{\"b\":2}\n{\"c\"\n", ""},
	{"jsonl/backup-damaged", "jsonl", "{\"a\":1}\nx\n", ""},
	{"jsonl/backup-and-last-good", "jsonl", "x\n{\"a\":1}\n", "{\"a\":1}\n{\"b\":2}\n"},
	{"jsonl/backup-crlf", "jsonl", "{\"a\":1}\r\nx\r\n", ""},
	{"jsonl/backup-ties-salvage", "jsonl", "{\"a\":1}\n{\"b\":2}\nx\n", ""},
	{"json/backup", "json", `{"a":1} x`, ""},
	{"json/last-good-not-object", "json", `[1] x`, `[1,2]`}, // no record in either: the salvage, first
}

// bigBackups are the backups planted for the cases named (the rule then has the backup
// strategy): a big log's is measured and copied from its file.
var bigBackups = map[string]string{
	"jsonl/backup-ties-salvage":  "{\"a\":1}\n{\"c\":3}\n", // as many records: the salvage, first in the rule
	"jsonl/backup":               "{\"a\":1}\n{\"b\":2}\n",
	"jsonl/backup-keeps-more":    "{\"a\":1}\n{\"b\":2}\n{\"c\":3}\n",
	"jsonl/backup-keeps-less":    "{\"a\":1}\n",
	"jsonl/backup-damaged":       "{\"a\":1}\n{\"b\":",
	"jsonl/backup-and-last-good": "{\"a\":1}\n{\"c\":3}\n{\"d\":4}\n",
	"jsonl/backup-crlf":          "{\"a\":1}\r\n{\"b\":2}\r\n",
	"json/backup":                `{"a":1,"b":2}`,
}

// healOnce heals one case on a fresh engine whose streamed path takes files over threshold
// bytes (0: the reference, planned on the bytes held whole; -1: the engine as it runs) and
// returns the report, the file after, the quarantine entry (if any) and whether the streamed
// path planned it.
func healOnce(t *testing.T, c bigCase, threshold int64) (Report, []byte, os.FileInfo, *Manifest, []byte, bool) {
	t.Helper()
	e, root := bigEngine(t, threshold)
	e.heldPlans = threshold == 0 // the reference: planned on the bytes held whole
	e.onStep = func(step, _ string) {
		switch step {
		case "backup-from-file":
			backupsFromFile.Add(1)
		case "last-good-from-file":
			copiesFromFile.Add(1)
		case "candidate-from-file":
			docCandsFromFile.Add(1)
		}
	}
	name := "s." + c.format
	p := filepath.Join(root, name)
	if err := os.WriteFile(p, []byte(c.data), 0o640); err != nil {
		t.Fatal(err)
	}
	tg := Target{Path: p, Rule: bigRule(c.format, root)}
	if b, ok := bigBackups[c.name]; ok {
		if err := os.WriteFile(p+".bak", []byte(b), 0o640); err != nil {
			t.Fatal(err)
		}
		tg.Rule.Strategies = []policy.Strategy{"salvage", "backup", "normalize", "last-good"}
		tg.Rule.Backups = []string{"{file}.bak"}
	}
	if c.lastGood != "" {
		if err := e.LastGood.Put(p, []byte(c.lastGood)); err != nil {
			t.Fatal(err)
		}
	}
	big := e.inspect(tg).big
	before, _ := os.Stat(p)
	r := e.Heal(context.Background(), tg, false)
	after, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	fi, _ := os.Stat(p)
	if r.Action != ActionHealed && !os.SameFile(before, fi) {
		t.Fatalf("%s: not healed (%+v) but the file was replaced", c.name, r)
	}
	var m *Manifest
	var q []byte
	if all, _ := e.Quarantine.List(); len(all) == 1 {
		m = all[0]
		if q, err = original(t, m); err != nil {
			t.Fatal(err)
		}
	} else if len(all) > 1 {
		t.Fatalf("%s: %d quarantine entries", c.name, len(all))
	}
	if js, _ := os.ReadDir(e.Journal.Root); len(js) != 0 {
		t.Fatalf("%s: journal entries left", c.name)
	}
	return r, after, fi, m, q, big
}

// original is the whole original a quarantine entry keeps. The entry of a tail cut holds the
// bytes the cut removed, and the file the bytes it left: exactly its first m.Prefix bytes
// right after the heal (as every caller here reads it).
func original(t *testing.T, m *Manifest) ([]byte, error) {
	t.Helper()
	if m.Prefix == 0 {
		return m.Bytes()
	}
	if _, err := m.Bytes(); err == nil {
		t.Fatalf("quarantine %s: Bytes of a tail entry gave bytes", m.ID)
	}
	cur, err := os.ReadFile(m.Path)
	if err != nil {
		return nil, err
	}
	if int64(len(cur)) != m.Prefix {
		t.Fatalf("quarantine %s: a tail entry from offset %d, and the file holds %d bytes", m.ID, m.Prefix, len(cur))
	}
	if fi, err := os.Stat(filepath.Join(m.Dir, m.File)); err != nil || fi.Size() != m.Size-m.Prefix {
		t.Fatalf("quarantine %s: a tail entry of %d bytes from offset %d holds %v (%v)", m.ID, m.Size, m.Prefix, fi, err)
	}
	return m.Join(cur)
}

// TestBigPathMatchesInMemory heals the same damaged inputs through the in-memory path and the
// streamed one (a threshold of one byte): same verdicts, same plans, same bytes written, same
// quarantine and manifests.
func TestBigPathMatchesInMemory(t *testing.T) {
	was, wasCopies, wasDocs := backupsFromFile.Load(), copiesFromFile.Load(), docCandsFromFile.Load()
	for _, c := range bigCases {
		t.Run(c.name, func(t *testing.T) { compareBig(t, c) })
	}
	if n := backupsFromFile.Load() - was; n < 4 {
		t.Errorf("%d backups measured from their files", n)
	}
	if n := copiesFromFile.Load() - wasCopies; n < 4 {
		t.Errorf("%d last-good copies measured from their files", n)
	}
	if n := docCandsFromFile.Load() - wasDocs; n < 4 {
		t.Errorf("%d copies and backups of plain JSON judged from their files", n)
	}
	// Lines over the line window: a backup the survey cannot measure from its file is
	// measured held after all, with the same result.
	restore := fmtpkg.SetLineWindow(6)
	defer restore()
	for _, c := range bigCases {
		if _, ok := bigBackups[c.name]; ok {
			t.Run(c.name+"/long-lines", func(t *testing.T) { compareBig(t, c) })
		}
	}
}

// backupsFromFile, copiesFromFile and docCandsFromFile count the backups and the last-good
// copies of logs, and the backups and copies of documents, the streamed path measured from
// their files.
var backupsFromFile, copiesFromFile, docCandsFromFile atomic.Int64

// FuzzBigPathMatchesInMemory: the same comparison on any input, as JSON and as JSONL.
func FuzzBigPathMatchesInMemory(f *testing.F) {
	for _, c := range bigCases {
		f.Add([]byte(c.data), []byte(c.lastGood), c.format == "jsonl")
	}
	f.Fuzz(func(t *testing.T, data, lastGood []byte, jsonl bool) {
		c := bigCase{name: "fuzz", format: "json", data: string(data), lastGood: string(lastGood)}
		if jsonl {
			c.format = "jsonl"
		}
		if len(data) < 2 {
			return // the streamed path takes files over one byte
		}
		compareBig(t, c)
	})
}

func compareBig(t *testing.T, c bigCase) {
	{
		{
			r1, f1, fi1, m1, q1, big1 := healOnce(t, c, 0)
			r2, f2, fi2, m2, q2, big2 := healOnce(t, c, 1)
			if big1 {
				t.Fatal("the in-memory engine took the streamed path")
			}
			// A cut the file shows only against its last-good copy is judged whole.
			cut := c.format == "jsonl" && fmtpkg.IsLinePrefix([]byte(c.data), []byte(c.lastGood))
			if !big2 && r2.Verdict == Damaged && !cut {
				t.Fatal("the streamed engine did not take the streamed path")
			}
			r1.Quarantine, r2.Quarantine, r1.Wrote, r2.Wrote = "", "", nil, nil
			r1.Path, r2.Path = "", ""
			if m2 != nil && m2.Prefix > 0 {
				// A streamed tail cut quarantines the bytes it removes; the file keeps the rest.
				if r2.QuarantinedBytes != m2.Size-m2.Prefix || r1.QuarantinedBytes != m2.Size {
					t.Fatalf("a tail cut from %d of %d quarantined %d bytes (held whole: %d)", m2.Prefix, m2.Size, r2.QuarantinedBytes, r1.QuarantinedBytes)
				}
				r2.QuarantinedBytes = r1.QuarantinedBytes
			}
			if !equalReports(r1, r2) {
				t.Fatalf("reports differ:\nin memory %+v\nstreamed  %+v", r1, r2)
			}
			// The engine as it runs plans it from the file at this size too, a tail cut
			// made by a replace (the whole original quarantined), as in memory.
			r3, f3, _, _, q3, big3 := healOnce(t, c, -1)
			r3.Quarantine, r3.Wrote, r3.Path = "", nil, ""
			if !big3 && r3.Verdict == Damaged && !cut && len(c.data) > 0 {
				t.Fatal("the engine as it runs did not plan it from the file")
			}
			if !equalReports(r1, r3) || !bytes.Equal(f1, f3) || !bytes.Equal(q1, q3) {
				t.Fatalf("the heal as it runs differs:\nin memory %+v\nas it runs %+v", r1, r3)
			}
			if !bytes.Equal(f1, f2) {
				t.Fatalf("results differ:\nin memory %q\nstreamed  %q", f1, f2)
			}
			if fi1.Mode() != fi2.Mode() {
				t.Fatalf("modes differ: %v %v", fi1.Mode(), fi2.Mode())
			}
			if (m1 == nil) != (m2 == nil) {
				t.Fatalf("quarantine: in memory %v, streamed %v", m1 != nil, m2 != nil)
			}
			if m1 != nil {
				if !bytes.Equal(q1, q2) || !bytes.Equal(q2, []byte(c.data)) {
					t.Fatalf("quarantined bytes differ: %q %q", q1, q2)
				}
				a, b := *m1, *m2
				if b.Prefix > 0 {
					// The streamed tail cut's entry says where its bytes begin, and the sum
					// of the bytes the cut left (the result's).
					if b.PrefixSHA256 != b.NewSHA256 || int64(len(f2)) != b.Prefix {
						t.Fatalf("tail entry from %d (prefix sum %s) of a result of %d bytes (sum %s)", b.Prefix, b.PrefixSHA256, len(f2), b.NewSHA256)
					}
					b.Prefix, b.PrefixSHA256 = 0, ""
				}
				for _, m := range []*Manifest{&a, &b} {
					m.ID, m.Created, m.Dir, m.Path, m.Rule, m.Identity = "", time.Time{}, "", "", "", Identity{}
				}
				if a != b {
					t.Fatalf("manifests differ:\nin memory %+v\nstreamed  %+v", a, b)
				}
			}
			t.Logf("%s %s %s: %s, lost %d records %d bytes", r2.Verdict, r2.Kind, r2.Action, r2.Strategy, r2.LostRecords, r2.LostBytes)
			if r2.Action == ActionHealed {
				e, _ := bigEngine(t, 1)
				tg := Target{Path: filepath.Join(t.TempDir(), "r."+c.format), Rule: bigRule(c.format, "")}
				os.WriteFile(tg.Path, f2, 0o600)
				if v := e.Check(tg); v.Verdict != Healthy {
					t.Fatalf("the streamed result does not validate streaming: %+v", v)
				}
			}
		}
	}
}

func equalReports(a, b Report) bool {
	if len(a.Warnings) != len(b.Warnings) || len(a.Also) != len(b.Also) {
		return false
	}
	a.Warnings, b.Warnings, a.Also, b.Also = nil, nil, nil, nil
	return a.Rule == b.Rule && a.Format == b.Format && a.Verdict == b.Verdict && a.Kind == b.Kind &&
		a.Offset == b.Offset && a.Detail == b.Detail && a.Action == b.Action && a.Strategy == b.Strategy &&
		a.LostBytes == b.LostBytes && a.LostRecords == b.LostRecords && a.Reason == b.Reason &&
		a.QuarantinedBytes == b.QuarantinedBytes
}

// bigTorn is a JSONL file with a torn last line, healed by a tail cut.
const bigTorn = "{\"a\":1}\n{\"b\":2}\n{\"c\":"

func bigTarget(t *testing.T, e *Engine, root, data string) Target {
	p := filepath.Join(root, "s.jsonl")
	if err := os.WriteFile(p, []byte(data), 0o600); err != nil {
		t.Fatal(err)
	}
	return Target{Path: p, Rule: bigRule("jsonl", root)}
}

// A big file's tail cut is made in place under a write lease, which the kernel grants only
// while no other descriptor has the file open: a writer the /proc walk still names that has
// let the file go by then keeps nothing off. Beside a writer that holds it (no lease), the
// cut is deferred (TestOpenWriterDefersEveryChange); so is a rewrite beside a named writer.
func TestBigTailCutBesideAWriter(t *testing.T) {
	e, root := bigEngine(t, 1)
	tg := bigTarget(t, e, root, bigTorn)
	e.findWriters = func(dev, ino uint64) []int { return []int{4242} }
	before, _ := os.Stat(tg.Path)
	r := e.Heal(context.Background(), tg, false)
	after, _ := os.Stat(tg.Path)
	if r.Action != ActionHealed || !os.SameFile(before, after) {
		t.Fatalf("a tail cut in place was expected: %+v", r)
	}
	if b, _ := os.ReadFile(tg.Path); string(b) != "{\"a\":1}\n{\"b\":2}\n" {
		t.Fatalf("cut to %q", b)
	}
	// Dropping a middle record is not a tail cut: deferred.
	tg = bigTarget(t, e, root, "{\"a\":1}\nx\n{\"b\":2}\n")
	if r := e.Heal(context.Background(), tg, false); r.Verdict != Busy || r.Action == ActionHealed {
		t.Fatalf("a rewrite beside a writer must be deferred: %+v", r)
	}
}

// TestBigAppWriteIsPutBack: an app that wrote into the old inode after the rename gets its
// bytes put back, copied streaming from that inode. (The app holds the file open from before
// the cut: no lease is granted, and the tail cut is a replace.)
func TestBigAppWriteIsPutBack(t *testing.T) {
	e, root := bigEngine(t, 1)
	tg := bigTarget(t, e, root, bigTorn)
	newer := "{\"a\":1}\n{\"b\":2}\n{\"c\":3}\n{\"d\":4}\n"
	var held *os.File
	e.onStep = func(s, path string) {
		if s == "quarantined" {
			held, _ = os.OpenFile(path, os.O_WRONLY, 0) // the app opened the old inode...
		}
		if s == "renamed" {
			held.WriteAt([]byte(newer), 0) // ...and writes after our rename
			held.Close()
		}
	}
	r := e.Heal(context.Background(), tg, false)
	if r.Verdict != Busy {
		t.Fatalf("want busy after the app raced the rename: %+v", r)
	}
	if b, _ := os.ReadFile(tg.Path); string(b) != newer {
		t.Fatalf("the app's newest bytes are not at the path: %q", b)
	}
}

func TestBigCrashAtEveryStep(t *testing.T) {
	healed := "{\"a\":1}\n{\"b\":2}\n"
	for _, step := range []string{"locked", "quarantined", "journaled", "temp-written", "renamed", "done"} {
		for _, writer := range []bool{false, true} {
			name := step
			if writer {
				name += "/tail-cut"
			}
			t.Run(name, func(t *testing.T) {
				e, root := bigEngine(t, 1)
				tg := bigTarget(t, e, root, bigTorn)
				if writer {
					e.findWriters = func(dev, ino uint64) []int { return []int{4242} }
				}
				e.onStep = func(s, path string) {
					if s == step {
						panic("crash at " + s)
					}
				}
				func() {
					defer func() { recover() }()
					e.Heal(context.Background(), tg, false)
				}()
				e2 := New(e.Policy, Options{})
				e2.bigThreshold = 1
				rec, err := e2.Recover()
				if err != nil {
					t.Fatal(err)
				}
				b, _ := os.ReadFile(tg.Path)
				if string(b) != bigTorn && string(b) != healed {
					t.Fatalf("after a crash at %s the file is neither old nor new: %q", step, b)
				}
				for _, r := range rec {
					want := "rolled-back"
					if string(b) == healed {
						want = "applied"
					}
					if r.Outcome != want {
						t.Fatalf("recovered %s, file %q", r.Outcome, b)
					}
				}
				if string(b) == healed {
					all, _ := e2.Quarantine.List()
					if len(all) != 1 {
						t.Fatalf("file changed but quarantine has %d entries", len(all))
					}
					if q, _ := original(t, all[0]); string(q) != bigTorn {
						t.Fatal("quarantine does not hold the original bytes")
					}
				}
				ents, _ := os.ReadDir(root)
				for _, en := range ents {
					if policy.IsOwnTemp(en.Name()) {
						t.Fatalf("stray temp %s after recovery", en.Name())
					}
				}
				if js, _ := os.ReadDir(e2.Journal.Root); len(js) != 0 {
					t.Fatalf("journal not resolved: %d entries", len(js))
				}
				e2.Heal(context.Background(), tg, false)
				if b, _ := os.ReadFile(tg.Path); string(b) != healed {
					t.Fatalf("heal after restart: %q", b)
				}
			})
		}
	}
}

// TestBigIOFaults: TestIOFaults through the streamed path (the quarantine copy and the temp
// file are written streaming).
func TestBigIOFaults(t *testing.T) {
	healed := "{\"a\":1}\n{\"b\":2}\n"
	ops := []string{"create", "chmod", "write", "fsync", "close", "rename", "fsync-dir", "mkdir", "truncate"}
	for _, op := range ops {
		for _, where := range []string{"session", "state"} {
			t.Run(op+"/"+where, func(t *testing.T) {
				var faults faultSwitch
				e, root := bigEngineWith(t, 1, Options{Faults: faults.fault})
				tg := bigTarget(t, e, root, bigTorn)
				if op == "truncate" {
					e.findWriters = func(dev, ino uint64) []int { return []int{4242} }
				}
				fired := 0
				faults.set(func(o, path string) error {
					if o == op && strings.HasPrefix(path, e.StateDir) == (where == "state") {
						fired++
						return syscall.ENOSPC
					}
					return nil
				})
				r := e.Heal(context.Background(), tg, false)
				faults.set(nil)
				now, _ := os.ReadFile(tg.Path)
				switch {
				case fired == 0:
					if r.Action != ActionHealed {
						t.Fatalf("no fault fired but not healed: %+v", r)
					}
					return
				case string(now) == bigTorn:
					if r.Action == ActionHealed || r.Reason == "" {
						t.Fatalf("unchanged file, report %+v", r)
					}
				case string(now) == healed:
				default:
					t.Fatalf("after a %s fault the file holds %q", op, now)
				}
				ents, _ := os.ReadDir(root)
				for _, en := range ents {
					if policy.IsOwnTemp(en.Name()) {
						t.Fatalf("stray temp %s", en.Name())
					}
				}
				if js, _ := os.ReadDir(e.Journal.Root); len(js) != 0 {
					t.Fatalf("journal entry left behind")
				}
				e.Heal(context.Background(), tg, false)
				if b, _ := os.ReadFile(tg.Path); string(b) != healed {
					t.Fatalf("retry after the fault cleared: %q", b)
				}
			})
		}
	}
}

// TestBigChangedDuringQuarantine: a file that changes between the plan and the quarantine copy
// is not healed, and no quarantine entry is left.
func TestBigChangedDuringQuarantine(t *testing.T) {
	e, root := bigEngine(t, 1)
	tg := bigTarget(t, e, root, bigTorn)
	newer := bigTorn + "3}\n"
	e.onStep = func(s, path string) {
		if s == "locked" {
			os.WriteFile(path, []byte(newer), 0o600)
		}
	}
	r := e.Heal(context.Background(), tg, false)
	if r.Verdict != Busy {
		t.Fatalf("want busy: %+v", r)
	}
	if b, _ := os.ReadFile(tg.Path); string(b) != newer {
		t.Fatalf("the app's write was lost: %q", b)
	}
	if all, _ := e.Quarantine.List(); len(all) != 0 {
		t.Fatalf("%d quarantine entries", len(all))
	}
}
