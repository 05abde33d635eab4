package heal

import (
	"bytes"
	"crypto/sha256"
	"fmt"
	"io/fs"
	"math/rand"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/sessionmedic/sessionmedic/heal/apps"
	"github.com/sessionmedic/sessionmedic/heal/format"
)

// TestSamplesJudgedRecordByRecordAsWhole: every JSONL file of every sample (healthy and
// damaged) whose profile has a record-by-record checklist gets, streamed, the verdict read
// whole gives it: status, kind, offset, detail and warnings. A file too large to hold is
// judged so, and a first scan of a large transcript never builds the whole file's trees.
func TestSamplesJudgedRecordByRecordAsWhole(t *testing.T) {
	reg := apps.Registry()
	entries, err := os.ReadDir(samples)
	if err != nil {
		t.Fatal(err)
	}
	judged := map[string]int{}
	for _, app := range entries {
		if !app.IsDir() {
			continue
		}
		preset := app.Name()
		err := filepath.WalkDir(filepath.Join(samples, preset), func(path string, d fs.DirEntry, err error) error {
			if err != nil || d.IsDir() || !strings.HasSuffix(path, ".jsonl") {
				return err
			}
			typ := reg.Profile(preset, path)
			if _, ok := typ.(format.SequenceChecker); !ok || !typ.JSONL() {
				return nil
			}
			data, err := os.ReadFile(path)
			if err != nil {
				return err
			}
			if diff := streamedDiff(path, typ, data); diff != "" {
				t.Error(diff)
			}
			judged[typ.Name()]++
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	for _, name := range []string{"claude-code", "codex", "gemini-cli", "pi", "qwen-code", "copilot-cli", "openclaw-transcript"} {
		if judged[name] == 0 {
			t.Errorf("no sample of %s was judged both ways (judged: %v)", name, judged)
		}
	}
}

// streamedDiff says how the verdict on data, the file at path, streamed differs from the one
// read whole ("" for none).
func streamedDiff(path string, typ format.Profile, data []byte) string {
	whole := format.Inspect(typ, format.File{Path: path}, data)
	streamed, _, err := format.StreamInspect(path, typ)
	if err != nil {
		return fmt.Sprintf("%s: %v", path, err)
	}
	at, err := format.InspectAt(typ, path, bytes.NewReader(data), int64(len(data)))
	if err != nil {
		return fmt.Sprintf("%s: InspectAt: %v", path, err)
	}
	// InspectSum hashes what it judges healthy in the same read.
	if v, sum, err := format.InspectSum(typ, path, bytes.NewReader(data), int64(len(data))); err != nil || v.Status != at.Status ||
		(v.Status == format.Healthy) != (sum == fmt.Sprintf("%x", sha256.Sum256(data))) {
		return fmt.Sprintf("%s: InspectSum: %s %q %v, InspectAt %s", path, v.Status, sum, err, at.Status)
	}
	for _, v := range []struct {
		how string
		v   format.Verdict
	}{{"streamed", streamed}, {"InspectAt", at}} {
		if whole.Status != v.v.Status || whole.Kind != v.v.Kind || whole.Offset != v.v.Offset ||
			whole.Detail != v.v.Detail || strings.Join(whole.Warnings, "\n") != strings.Join(v.v.Warnings, "\n") {
			return fmt.Sprintf("%s (%s):\n  read whole: %s %s at %d: %s %q\n  %s: %s %s at %d: %s %q", path, typ.Name(),
				whole.Status, whole.Kind, whole.Offset, whole.Detail, whole.Warnings,
				v.how, v.v.Status, v.v.Kind, v.v.Offset, v.v.Detail, v.v.Warnings)
		}
	}
	return ""
}

// streamApps are the presets whose transcripts are judged record by record, each with a
// file's place as its app lays it out (a sample's, below its case directory).
var streamApps = []struct{ preset, rel string }{
	{"claude-code", "home/.claude/projects/-tmp-demo-proj/7c2e1b4a-9d3f-4e8a-b6c1-2f5a8d9e0b13.jsonl"},
	{"codex", "home/.codex/sessions/2026/11/22/rollout-2026-11-22T21-46-17-01a20539-677f-7710-87e4-54a740761238.jsonl"},
	{"gemini-cli", "home/.gemini/tmp/proj/chats/session-2026-11-22T21-40-7759d9fe.jsonl"},
	{"pi", "home/.pi/agent/sessions/--tmp-demo-proj--/2026-11-24T23-24-56-267Z_01a20fe0-6e4b-74a6-a8ea-61958601a7c1.jsonl"},
	{"qwen-code", "home/.qwen/projects/-tmp-oracle-proj/chats/2e7f8d81-0fed-4f4d-93ed-de324a5bf18d.jsonl"},
	{"copilot-cli", "home/.copilot/session-state/568f5a60-7fc4-4a49-a663-724cd54a5984/events.jsonl"},
	{"openclaw", "state/agents/main/sessions/5dbda090-2ac0-44ad-b015-c3eca97cfdce.jsonl"},
	{"nanobot", "sessions/1a90ee6c483ef484075bb4aec4e29b33/Y2xpOmRpcmVjdA.jsonl"}, // rewritten whole
}

// seedStreamApps seeds a fuzz target of (app, data) with every JSONL sample of each of
// streamApps.
func seedStreamApps(f *testing.F) {
	for i, a := range streamApps {
		for _, b := range jsonlSamples(f, a.preset, "") {
			if len(b) < 64<<10 {
				f.Add(uint8(i), b)
			}
		}
	}
}

// jsonlSamples are the JSONL files of the preset's samples whose path holds within.
func jsonlSamples(t testing.TB, preset, within string) [][]byte {
	var out [][]byte
	filepath.WalkDir(filepath.Join(samples, preset), func(p string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() && strings.HasSuffix(p, ".jsonl") && strings.Contains(p, within) {
			if b, err := os.ReadFile(p); err == nil {
				out = append(out, b)
			}
		}
		return nil
	})
	if len(out) == 0 {
		t.Fatalf("%s: no sample", preset)
	}
	return out
}

// FuzzStreamedVerdictMatchesWhole: whatever a transcript holds, the verdict record by record
// (a file too large to hold, a first scan) is the one read whole.
func FuzzStreamedVerdictMatchesWhole(f *testing.F) {
	seedStreamApps(f)
	reg := apps.Registry()
	f.Fuzz(func(t *testing.T, app uint8, data []byte) {
		a := streamApps[int(app)%len(streamApps)]
		path := filepath.Join(t.TempDir(), a.rel)
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, data, 0o644); err != nil {
			t.Fatal(err)
		}
		typ := reg.Profile(a.preset, path)
		if len(data) == 0 || format.AllNUL(data) || bytes.HasPrefix(data, format.BOM) {
			return // judged before any record is looked at
		}
		if s, ok := typ.(format.Skipper); ok && s.SkipReason(path, data) != "" {
			return
		}
		if diff := streamedDiff(path, typ, data); diff != "" {
			t.Fatalf("%s\ninput %q", diff, data)
		}
	})
}

// planKeepDiff says how the salvage of data planned streaming (PlanKeep, the splice read and
// written) differs from the one planned held whole (KeepLines), in bytes or
// figures ("" for none), and gives the latter.
func planKeepDiff(typ format.Profile, path string, data []byte) (whole []byte, diff string) {
	whole = format.KeepLines(typ, path, data)
	r := bytes.NewReader(data)
	s, fig, err := format.PlanKeep(typ, path, r, int64(len(data)))
	if err != nil {
		return whole, err.Error()
	}
	var streamed []byte
	if s != nil {
		if streamed, err = s.Bytes(r); err != nil {
			return whole, err.Error()
		}
		var w bytes.Buffer
		if _, err := s.WriteOut(&w, r); err != nil || !bytes.Equal(w.Bytes(), streamed) {
			return whole, fmt.Sprintf("WriteOut %q (%v), At %q", w.Bytes(), err, streamed)
		}
	}
	if !bytes.Equal(streamed, whole) || (s == nil) != (whole == nil) {
		return whole, fmt.Sprintf("streamed salvage %q, whole %q", streamed, whole)
	}
	if msg := figuresDiff(typ, path, data, whole, fig); msg != "" {
		return whole, msg
	}
	_, diff = tornCutDiff(typ, path, data)
	return whole, diff
}

// tornCutDiff says how the plan of a torn last line cut from the verdict (PlanTornCut)
// differs from the salvage's walk (PlanKeep, the original's sha256) and the judge of its result
// (InspectSum): the same bytes, figures, sums and verdict ("" for none; cut says it planned one).
func tornCutDiff(typ format.Profile, path string, data []byte) (cut bool, diff string) {
	r := bytes.NewReader(data)
	size := int64(len(data))
	v, err := format.InspectAt(typ, path, r, size)
	if err != nil || v.Kind != format.KindTruncated || v.Offset <= 0 {
		return false, ""
	}
	tc, ok, err := format.PlanTornCut(typ, path, r, size, v.Offset)
	if err != nil {
		return false, "PlanTornCut: " + err.Error()
	}
	if !ok {
		return false, ""
	}
	s, fig, err := format.PlanKeep(typ, path, r, size)
	if err != nil || s == nil {
		return true, fmt.Sprintf("PlanTornCut planned %d bytes, PlanKeep %v (%v)", tc.Keep.Size(), s, err)
	}
	sum := fmt.Sprintf("%x", sha256.Sum256(data))
	want, _ := s.Bytes(r)
	got, _ := tc.Keep.Bytes(r)
	kv, ksum, err := format.InspectSum(typ, path, s.At(r), s.Size())
	switch {
	case err != nil:
		return true, err.Error()
	case !bytes.Equal(got, want) || !tc.Keep.Prefix():
		return true, fmt.Sprintf("PlanTornCut keeps %q (a prefix: %v), the walk %q", got, tc.Keep.Prefix(), want)
	case tc.Fig != fig:
		return true, fmt.Sprintf("PlanTornCut figures %+v, the walk's %+v", tc.Fig, fig)
	case tc.OldSHA != sum:
		return true, fmt.Sprintf("PlanTornCut's sum of the original %s, the walk's %s", tc.OldSHA, sum)
	case tc.KeepSHA != ksum || fmt.Sprint(tc.Verdict) != fmt.Sprint(kv) || !slices.Equal(tc.Verdict.Warnings, kv.Warnings):
		return true, fmt.Sprintf("PlanTornCut's result %v (sum %s), InspectSum's %v (sum %s)", tc.Verdict, tc.KeepSHA, kv, ksum)
	}
	return true, ""
}

// TestTornCutMatchesTheWalk: every app's healthy samples with their last line torn every 16
// bytes, alone and with what a cut from the verdict must see: a blank line before it
// (dropped by the walk), a record repeated (dropped by a profile that drops repeats), the
// torn line a torn copy of an earlier record (whose whole version is then kept), a record
// glued before the torn bytes (rebuilt by the walk), CRLF lines. Planned from the verdict
// (PlanTornCut) or not, a cut is the walk's.
func TestTornCutMatchesTheWalk(t *testing.T) {
	t.Run("one CPU", tornCutMatchesTheWalk)
	// Every file judged on several CPUs, in blocks of 64 bytes: lines across blocks, a
	// blank or repeated line in any block, a sum read beside the judge.
	t.Run("blocks on several CPUs", func(t *testing.T) {
		defer format.SetParallel(1, 64)()
		tornCutMatchesTheWalk(t)
	})
}

func tornCutMatchesTheWalk(t *testing.T) {
	reg := apps.Registry()
	cuts, elsewhere := 0, 0
	for _, a := range streamApps {
		path := filepath.Join("/nonexistent", a.rel)
		typ := reg.Profile(a.preset, path)
		appCuts := 0
		for _, healthy := range jsonlSamples(t, a.preset, "healthy") {
			lines := bytes.SplitAfter(healthy, []byte("\n"))
			if len(lines) < 3 || len(lines[len(lines)-1]) != 0 {
				continue
			}
			lines = lines[:len(lines)-1]
			body := bytes.Join(lines[:len(lines)-1], nil)
			last := lines[len(lines)-1]
			first := lines[0]
			variants := map[string][]byte{
				"alone":    body,
				"blank":    append(append(bytes.Clone(lines[0]), "  \n"...), bytes.Join(lines[1:len(lines)-1], nil)...),
				"repeated": append(bytes.Clone(body), lines[len(lines)-2]...),
				"crlf":     bytes.ReplaceAll(body, []byte("\n"), []byte("\r\n")),
			}
			for name, pre := range variants {
				// The last line cut every 16 bytes, or at 32 places spread over a longer one
				// (FuzzPlanKeepMatchesWhole cuts anywhere).
				tails := [][]byte{}
				for i := 1; i < len(last)-1; i += max(16, len(last)/32) {
					tails = append(tails, last[:i])
				}
				tails = append(tails, first[:len(first)/2], append(bytes.Clone(bytes.TrimSuffix(first, []byte("\n"))), last[:len(last)/2]...))
				for _, tail := range tails {
					data := append(bytes.Clone(pre), tail...)
					cut, diff := tornCutDiff(typ, path, data)
					if diff != "" {
						t.Fatalf("%s, %s: %s\ninput %q", a.preset, name, diff, data)
					}
					if cut {
						cuts++
						appCuts++
						if bytes.HasPrefix(first, tail) {
							elsewhere++
						}
					}
				}
			}
		}
		t.Logf("%s: %d cuts planned from the verdict", a.preset, appCuts)
		if appCuts == 0 {
			t.Errorf("%s: no cut planned from the verdict", a.preset)
		}
	}
	if cuts == 0 || elsewhere == 0 {
		t.Fatalf("%d cuts planned from the verdict, %d of a torn copy of an earlier record", cuts, elsewhere)
	}
}

// figuresDiff says how a streamed salvage's figures (fig) differ from those of the salvage
// planned on the file held whole (whole, of data): the same figures, the records it holds
// counted as Records counts them, and as many records in the damaged file as Loss counts.
func figuresDiff(typ format.Profile, path string, data, whole []byte, fig format.KeepFigures) string {
	_, want := format.KeepLinesFigures(typ, path, data)
	if fig != want {
		return fmt.Sprintf("streamed figures %+v, held whole %+v", fig, want)
	}
	if keep := format.Records(typ, whole); fig.Keep != keep {
		return fmt.Sprintf("keeps %d records, the salvage holds %d", fig.Keep, keep)
	}
	if total, _, _ := format.Loss(typ, path, data, whole, fig.Keep); fig.Total != total {
		return fmt.Sprintf("counts %d records in the damaged file, Loss %d", fig.Total, total)
	}
	if fig.Lost > fig.Total {
		return fmt.Sprintf("loses %d of %d records", fig.Lost, fig.Total)
	}
	return ""
}

// FuzzPlanKeepMatchesWhole: the salvage planned streaming (PlanKeep: the damaged lines held
// a run at a time, the rest ranges of the original) is byte for byte the one planned on the
// file held whole (KeepLines), and its figures are Records and Loss of that result.
func FuzzPlanKeepMatchesWhole(f *testing.F) {
	seedStreamApps(f)
	reg := apps.Registry()
	f.Fuzz(func(t *testing.T, app uint8, data []byte) {
		a := streamApps[int(app)%len(streamApps)]
		path := filepath.Join("/nonexistent", a.rel)
		typ := reg.Profile(a.preset, path)
		if _, diff := planKeepDiff(typ, path, data); diff != "" {
			t.Fatalf("%s: %s\ninput %q", a.preset, diff, data)
		}
	})
}

// FuzzPlanKeepLongLines is FuzzPlanKeepMatchesWhole with lines over a small line window
// (8 to 263 bytes) taking the long lines' way: a damaged one is held for its records as a
// shorter one is (heldDamaged), a valid one kept as a range of the file.
func FuzzPlanKeepLongLines(f *testing.F) {
	rng := rand.New(rand.NewSource(5))
	for i, a := range streamApps {
		for _, b := range jsonlSamples(f, a.preset, "") {
			if len(b) < 64<<10 {
				f.Add(uint8(i), uint8(rng.Intn(256)), damageLines(rng, b, 1+rng.Intn(2)))
			}
		}
	}
	reg := apps.Registry()
	f.Fuzz(func(t *testing.T, app, window uint8, data []byte) {
		defer format.SetLineWindow(8 + int(window))()
		a := streamApps[int(app)%len(streamApps)]
		path := filepath.Join("/nonexistent", a.rel)
		typ := reg.Profile(a.preset, path)
		if _, diff := planKeepDiff(typ, path, data); diff != "" {
			t.Fatalf("%s, window %d: %s\ninput %q", a.preset, 8+int(window), diff, data)
		}
	})
}

// damageLines damages a healthy JSONL file the ways the apps' files are found damaged, n
// times at random places: lines glued, a torn first try glued before a record, a line torn
// (its '\n' kept), a NUL run over a range, a line repeated, a raw newline inside a record,
// the tail cut.
func damageLines(rng *rand.Rand, data []byte, n int) []byte {
	b := bytes.Clone(data)
	for range n {
		lines := bytes.SplitAfter(b, []byte("\n"))
		if len(lines) < 2 {
			break
		}
		i := rng.Intn(len(lines) - 1)
		l := lines[i]
		switch rng.Intn(7) {
		case 0: // glued to the next line
			lines[i] = bytes.TrimSuffix(l, []byte("\n"))
		case 1: // a torn first try of another record before it
			o := lines[rng.Intn(len(lines))]
			lines[i] = append(bytes.Clone(o[:rng.Intn(len(o)+1)]), l...)
			lines[i] = bytes.ReplaceAll(lines[i][:len(lines[i])-len(l)], []byte("\n"), nil)
			lines[i] = append(lines[i], l...)
		case 2: // torn, its '\n' kept
			if len(l) > 1 {
				lines[i] = append(bytes.Clone(l[:rng.Intn(len(l)-1)]), '\n')
			}
		case 3: // a NUL run
			at := rng.Intn(len(b))
			end := min(len(b), at+1+rng.Intn(300))
			b = append(append(bytes.Clone(b[:at]), bytes.Repeat([]byte{0}, end-at)...), b[end:]...)
			continue
		case 4: // repeated
			lines = append(lines[:i+1], append([][]byte{bytes.Clone(l)}, lines[i+1:]...)...)
		case 5: // a raw newline inside it
			if k := bytes.Index(l, []byte(`\n`)); k >= 0 {
				lines[i] = append(append(bytes.Clone(l[:k]), '\n'), l[k+2:]...)
			} else if len(l) > 2 {
				k := 1 + rng.Intn(len(l)-2)
				lines[i] = append(append(bytes.Clone(l[:k]), '\n'), l[k:]...)
			}
		case 6: // the tail cut
			b = b[:rng.Intn(len(b)+1)]
			continue
		}
		b = bytes.Join(lines, nil)
	}
	return b
}

// TestPlanKeepMatchesWholeOnDamage: FuzzPlanKeepMatchesWhole's property on every app's
// healthy samples damaged at random (a fixed seed), one to four damages each.
func TestPlanKeepMatchesWholeOnDamage(t *testing.T) {
	t.Run("one CPU", planKeepMatchesWholeOnDamage)
	// Every file judged in blocks of 64 bytes on several CPUs: the first fault found in
	// whichever block, a sum read beside the judge.
	t.Run("blocks on several CPUs", func(t *testing.T) {
		defer format.SetParallel(1, 64)()
		planKeepMatchesWholeOnDamage(t)
	})
}

func planKeepMatchesWholeOnDamage(t *testing.T) {
	reg := apps.Registry()
	rng := rand.New(rand.NewSource(21))
	cases := 0
	for _, a := range streamApps {
		healthy := jsonlSamples(t, a.preset, "healthy")
		path := filepath.Join("/nonexistent", a.rel)
		typ := reg.Profile(a.preset, path)
		real := filepath.Join(t.TempDir(), a.rel)
		if err := os.MkdirAll(filepath.Dir(real), 0o755); err != nil {
			t.Fatal(err)
		}
		for range 80 {
			data := damageLines(rng, healthy[rng.Intn(len(healthy))], 1+rng.Intn(4))
			whole, diff := planKeepDiff(typ, path, data)
			if diff != "" {
				t.Errorf("%s: %s\ninput %q", a.preset, diff, data)
			}
			// The damaged file and its salvage are judged streaming as they are held whole.
			for _, b := range [][]byte{data, whole} {
				if len(b) == 0 || format.AllNUL(b) || bytes.HasPrefix(b, format.BOM) {
					continue
				}
				if err := os.WriteFile(real, b, 0o644); err != nil {
					t.Fatal(err)
				}
				if diff := streamedDiff(real, reg.Profile(a.preset, real), b); diff != "" {
					t.Errorf("%s\ninput %q", diff, b)
				}
			}
			cases++
		}
	}
	t.Logf("%d damaged files", cases)
}
