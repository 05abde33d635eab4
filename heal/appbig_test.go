package heal

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"math/rand"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/sessionmedic/sessionmedic/heal/format"
	"github.com/sessionmedic/sessionmedic/policy"
)

// appRule is an app preset's rule over root, without its lock (nothing else writes the
// test's files).
func appRule(t *testing.T, preset, root string) *policy.Rule {
	t.Helper()
	r, ok := policy.PresetRule(preset, policy.Env{Home: t.TempDir(), Getenv: func(string) string { return "" }, Exists: func(string) bool { return false }})
	if !ok {
		t.Fatalf("no preset %s", preset)
	}
	r.Paths, r.Lock, r.Mode = []string{root}, policy.Lock{Protocol: "none"}, policy.ModeHeal
	r.Limits.MaxLoss, r.Limits.MaxFileSize = 1, 0
	return &r
}

// healApp heals data at rel under a fresh engine whose streamed path takes files over
// threshold bytes (0: the default, an app log up to appBigFile then planned on its bytes
// held whole by the reference the planner from the file is held to: heldplan_test.go),
// with lastGood planted first when set: the report, the file after, the quarantined bytes,
// and whether the file was planned streaming.
func healApp(t *testing.T, preset, rel string, data, lastGood []byte, threshold int64) (Report, []byte, []byte, bool) {
	t.Helper()
	return healAppWith(t, preset, rel, data, lastGood, threshold, 0, Options{})
}

// healAppWith is healApp with the engine's options o, and its logs judged streaming over
// hold bytes (0: the default).
func healAppWith(t *testing.T, preset, rel string, data, lastGood []byte, threshold, hold int64, o Options) (Report, []byte, []byte, bool) {
	t.Helper()
	return healAppTweak(t, preset, rel, data, lastGood, threshold, o, func(e *Engine) { e.holdThreshold = hold })
}

// healAppTweak is healAppWith with the engine set by tweak before the heal.
func healAppTweak(t *testing.T, preset, rel string, data, lastGood []byte, threshold int64, o Options, tweak func(*Engine)) (Report, []byte, []byte, bool) {
	t.Helper()
	e, root := bigEngineWith(t, threshold, o)
	e.heldPlans = threshold == 0
	tweak(e)
	p := filepath.Join(root, rel)
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, data, 0o600); err != nil {
		t.Fatal(err)
	}
	if lastGood != nil {
		if err := e.LastGood.Put(p, lastGood); err != nil {
			t.Fatal(err)
		}
	}
	tg := Target{Path: p, Rule: appRule(t, preset, root)}
	big := e.inspect(tg).big
	r := e.Heal(context.Background(), tg, false)
	after, q := healedBytes(t, e, p)
	return r, after, q, big
}

// healedBytes is the file at p after e healed it, and the bytes e quarantined when it made
// one quarantine entry (else nil).
func healedBytes(t *testing.T, e *Engine, p string) (after, q []byte) {
	t.Helper()
	after, err := os.ReadFile(p)
	if err != nil && !os.IsNotExist(err) {
		t.Fatal(err)
	}
	if all, _ := e.Quarantine.List(); len(all) == 1 {
		if q, err = original(t, all[0]); err != nil {
			t.Fatal(err)
		}
	}
	return after, q
}

// TestAppBigPathMatchesInMemory: a damaged app transcript planned streaming (a threshold of
// one byte) is healed as the one planned on its bytes held whole — the same verdict, plan,
// figures, bytes written and quarantine — with and without a last-good copy, for every
// damage of damageLines at random places of each app's healthy samples. Run again with a
// line window of 64 bytes: a damaged line over the window (up to the salvage's 16 MiB hunk
// budget) is salvaged as one under it is — records glued in it split, a record torn across
// it and the next line rejoined, a torn one found whole in the copy not counted lost (it was
// dropped whole, counted one record: 12 of 48 inputs differed). No union of the salvage and
// the copy is the plan chosen with lines that short, by either planner.
func TestAppBigPathMatchesInMemory(t *testing.T) {
	for _, window := range []int{0, 64} {
		t.Run(fmt.Sprintf("window=%d", window), func(t *testing.T) {
			if window > 0 {
				defer format.SetLineWindow(window)()
			}
			appBigMatchesInMemory(t, window)
		})
	}
}

// appBigMatchesInMemory is TestAppBigPathMatchesInMemory with lines over window bytes (0:
// the default) taking the long lines' way.
func appBigMatchesInMemory(t *testing.T, window int) {
	rng := rand.New(rand.NewSource(18))
	n := 9
	if window > 0 {
		n = 6
	}
	if testing.Short() {
		n = 3
	}
	streamed, unions, long := 0, 0, 0 // long: inputs with a damaged line over the window
	for _, a := range streamApps {
		healthy := jsonlSamples(t, a.preset, "healthy")
		for i := range n {
			orig := healthy[rng.Intn(len(healthy))]
			data := damageLines(rng, orig, 1+rng.Intn(3))
			// A last-good copy: the file before the damage, or an older one (its first
			// half: the copy taken before the last appends), or none.
			var lg []byte
			switch i % 3 {
			case 0:
				lg = orig
			case 1:
				lines := bytes.SplitAfter(orig, []byte("\n"))
				lg = bytes.Join(lines[:len(lines)/2], nil)
			}
			r1, f1, q1, big1 := healApp(t, a.preset, a.rel, data, lg, 0)
			r2, f2, q2, big2 := healApp(t, a.preset, a.rel, data, lg, 1)
			if big1 {
				t.Fatalf("%s: the in-memory engine took the streamed path", a.preset)
			}
			// The engine as it runs plans it from the file at this size too, its tail cut
			// made by a replace (the whole original quarantined), as in memory.
			r3, f3, q3, big3 := healAppTweak(t, a.preset, a.rel, data, lg, 0, Options{}, func(e *Engine) { e.heldPlans = false })
			r3.Quarantine, r3.Wrote, r3.Path = "", nil, ""
			if r1.Verdict == Damaged && !big3 {
				t.Fatalf("%s: damaged, %d bytes, not planned from the file", a.preset, len(data))
			}
			if big2 {
				streamed++
				if r2.Strategy == "salvage+last-good" {
					unions++
				}
			}
			r1.Quarantine, r2.Quarantine, r1.Wrote, r2.Wrote, r1.Path, r2.Path = "", "", nil, nil, "", ""
			if !equalReports(r1, r3) || !bytes.Equal(f1, f3) || !bytes.Equal(q1, q3) {
				t.Fatalf("%s: the heal as it runs differs from the held one:\nheld %+v\nruns %+v", a.preset, r1, r3)
			}
			if big2 && r2.QuarantinedBytes == int64(len(data)-len(f2)) && bytes.HasPrefix(data, f2) && len(f2) > 0 {
				r2.QuarantinedBytes = r1.QuarantinedBytes // a streamed tail cut quarantines what it cuts
			}
			if !equalReports(r1, r2) || !bytes.Equal(f1, f2) || !bytes.Equal(q1, q2) {
				if dir := os.Getenv("APPBIG_DUMP"); dir != "" {
					os.WriteFile(filepath.Join(dir, "input"), data, 0o644)
					os.WriteFile(filepath.Join(dir, "last-good"), lg, 0o644)
				}
				t.Fatalf("%s (streamed: %v; $APPBIG_DUMP=DIR keeps the input):\nin memory %+v\nstreamed  %+v\nwrote %d and %d bytes, quarantined %d and %d",
					a.preset, big2, r1, r2, len(f1), len(f2), len(q1), len(q2))
			}
			for _, l := range bytes.Split(data, []byte("\n")) {
				if window > 0 && len(l) > window && !json.Valid(l) {
					long++
					break
				}
			}
		}
	}
	if streamed == 0 || unions == 0 && window == 0 {
		t.Fatalf("%d files took the streamed path, %d healed by a union", streamed, unions)
	}
	if window > 0 && long < n*len(streamApps)/3 {
		t.Fatalf("only %d inputs had a damaged line over the window", long)
	}
	t.Logf("%d of %d files planned streaming, %d healed by the union of salvage and last-good", streamed, n*len(streamApps), unions)
}

// TestAppBigLastGoodOutkept: a big app log rewritten with two records glued, beside a copy
// older than it, is planned streaming without its copy held: the salvage keeps as many
// records as the copy and their union (counted from the files), and the heal is the one
// planned on the bytes held whole. A copy holding records the file lacks (a write lost
// since) is looked at — judged and measured from its file when no union is to be built —
// and heals by itself or its union, as in memory.
func TestAppBigLastGoodOutkept(t *testing.T) {
	outkept, looked, byCopy, fromFile, unionFromFile, byUnion := 0, 0, 0, 0, 0, 0
	for _, a := range streamApps {
		for _, orig := range jsonlSamples(t, a.preset, "healthy") {
			lines := bytes.SplitAfter(orig, []byte("\n"))
			if len(lines) < 6 || !bytes.HasSuffix(orig, []byte("\n")) {
				continue
			}
			for _, shape := range []string{"glued", "lost", "destroyed"} {
				lost := shape != "glued" // the copy holds records the file lacks
				// Rewritten with a record glued to the next in its first quarter, inside
				// what the copy holds (so that the copy is no prefix the salvage keeps).
				glued := func(ls [][]byte) []byte {
					i := len(ls) / 4
					out := bytes.Join(ls[:i], nil)
					out = append(out, bytes.TrimSuffix(ls[i], []byte("\n"))...)
					return append(out, bytes.Join(ls[i+1:], nil)...)
				}
				data, lg := glued(lines), bytes.Join(lines[:len(lines)/2], nil)
				switch shape {
				case "lost": // the file lost its last third since the copy, which holds it
					data, lg = glued(lines[:2*len(lines)/3]), orig
				case "destroyed": // a record the copy holds turned to NULs since: their union
					ls := slices.Clone(lines)
					i := len(ls)/4 + 1
					ls[i] = append(bytes.Repeat([]byte{0}, len(ls[i])-1), '\n')
					data = glued(ls)
				}
				steps := 0
				step := func(s, _ string) {
					switch s {
					case "last-good-outkept":
						steps++
					case "last-good-from-file":
						fromFile++
					case "union-from-file":
						unionFromFile++
					}
				}
				r1, f1, q1, _ := healApp(t, a.preset, a.rel, data, lg, 0)
				// Streamed, its copy not read whole with it (as a log over the hold size).
				r2, f2, q2, big2 := healAppWith(t, a.preset, a.rel, data, lg, 1, 1, Options{Step: step})
				r1.Quarantine, r2.Quarantine, r1.Wrote, r2.Wrote, r1.Path, r2.Path = "", "", nil, nil, "", ""
				if !big2 || !equalReports(r1, r2) || !bytes.Equal(f1, f2) || !bytes.Equal(q1, q2) {
					t.Fatalf("%s (lost %v, streamed %v):\nin memory %+v\nstreamed  %+v", a.preset, lost, big2, r1, r2)
				}
				switch {
				case steps > 0 && shape == "lost":
					t.Fatalf("%s: a copy holding records the file lost was not looked at", a.preset)
				case steps > 0:
					outkept++
				case lost:
					looked++
					if r2.Strategy != "salvage" {
						byCopy++
					}
					if r2.Strategy == "salvage+last-good" && shape == "destroyed" {
						byUnion++
					}
				}
			}
		}
	}
	if outkept == 0 || looked == 0 || byCopy == 0 || fromFile == 0 || unionFromFile == 0 || byUnion == 0 {
		t.Fatalf("%d copies left unread, %d looked at (%d from their file, %d unions of it), %d heals by the copy or the union (%d by a union)", outkept, looked, fromFile, unionFromFile, byCopy, byUnion)
	}
	t.Logf("%d copies left unread, %d looked at (%d from their file, %d unions of it), %d heals by the copy or the union (%d by a union)", outkept, looked, fromFile, unionFromFile, byCopy, byUnion)
}
