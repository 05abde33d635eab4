package heal

import (
	"bytes"
	"crypto/sha256"
	"fmt"
	"math/rand"
	"os"
	"path/filepath"
	"regexp"
	"testing"

	"github.com/sessionmedic/sessionmedic/heal/format"
)

// allShapes are the damages TestSalvageFromIncremental appends.
var allShapes = []string{"glued", "stub before a record", "garbage line", "glued, then a torn stub", "NUL run before a record", "blank line, then glued", "blank line, then a torn stub", "garbage line, then a record without its newline"}

// salvageIncApps: the streamed apps whose appended damage the daemon salvages from its
// incremental state (tornIncApps but an app that finishes a salvage: Gemini CLI).
var salvageIncApps = map[string]bool{"claude-code": true, "codex": true, "pi": true, "openclaw": true}

// TestSalvageFromIncremental: the daemon's engine, having judged an app's log in full and then
// each append to it, plans the salvage of damage appended next — two writers' appends
// interleaved: a record glued to the next, another's stub before a record, a garbage line, a
// glue and a torn stub after it — from what it knows (step salvage-incremental, no pass over
// the file), and heals it as an engine that plans it from the file does, fed the same
// writes and checks: the same report (verdict, strategy, figures, or why not), bytes,
// quarantine and manifest sums; and again after its own heal, from the state that heal left.
//
// Again with a window of 64 bytes: lines over it are judged and salvaged from the file, never
// held, as the pass over the file takes them.
func TestSalvageFromIncremental(t *testing.T) {
	for _, window := range []int{format.LineWindow, 64} {
		t.Run(fmt.Sprint("window ", window), func(t *testing.T) {
			defer format.SetLineWindow(window)()
			salvageFromIncremental(t)
		})
	}
}

func salvageFromIncremental(t *testing.T) {
	rng := rand.New(rand.NewSource(37))
	fast := map[string]int{}
	resumed := map[string]int{} // ... with the result judged from the state the daemon kept
	shapes := map[string]int{}
	for _, a := range streamApps {
		src, lines := healthyLog(t, a.preset, a.rel)
		lines = moreLines(lines, 12)
		if len(lines) < 5 && !salvageIncApps[a.preset] {
			continue // (nanobot's: a log its app rewrites whole, never planned so)
		}
		if len(lines) < 5 {
			t.Fatalf("%s: %d lines: too few to grow", a.preset, len(lines))
		}
		for round := 0; round < len(allShapes); round++ {
			// Two daemons' engines over two copies of the tree, fed the same writes and
			// checks (each keeps the same last-good copies): the second plans every
			// salvage from the file.
			type side struct {
				e  *Engine
				p  string
				tg Target
			}
			var sides [2]side
			for i := range sides {
				e, root := bigEngineWith(t, 1, Options{})
				e.holdThreshold = 1
				e.twoPassTorn = i == 1
				copyTree(t, src, root)
				p := filepath.Join(root, a.rel)
				sides[i] = side{e, p, Target{Path: p, Rule: appRule(t, a.preset, root)}}
			}
			e, p, tg := sides[0].e, sides[0].p, sides[0].tg
			write := func(b []byte) {
				for _, sd := range sides {
					f, err := os.OpenFile(sd.p, os.O_WRONLY|os.O_APPEND, 0)
					if err != nil {
						t.Fatal(err)
					}
					f.Write(b)
					f.Close()
				}
			}
			check := func(what string) {
				for _, sd := range sides {
					if r := sd.e.Check(sd.tg); r.Verdict != Healthy {
						t.Fatalf("%s: %s: %+v", a.preset, what, r)
					}
				}
			}
			at := 3 + rng.Intn(max(1, len(lines)-7)) // (a conversation already: a record of each side)
			for _, sd := range sides {
				if err := os.WriteFile(sd.p, bytes.Join(lines[:at], nil), 0o600); err != nil {
					t.Fatal(err)
				}
			}
			check(fmt.Sprintf("the first %d lines", at))
			for heal := 0; heal < 2 && at < len(lines)-3; heal++ {
				appends := 0
				for k := rng.Intn(3); k > 0 && at < len(lines)-4; k-- {
					write(lines[at])
					at++
					appends++
					check(fmt.Sprintf("%d lines", at))
				}
				// The damage, as two writers' appends leave it.
				line := func(i int) []byte { return bytes.Clone(bytes.TrimSuffix(lines[i], []byte("\n"))) }
				stub := func(i int) []byte { l := line(i); return l[:1+rng.Intn(len(l)-1)] }
				var dmg []byte
				shape := allShapes[(round+heal)%len(allShapes)]
				switch shape {
				case "glued":
					dmg = append(append(line(at), lines[at+1]...), lines[at+2]...)
				case "stub before a record":
					dmg = append(append(stub(at), lines[at+1]...), lines[at+2]...)
				case "garbage line":
					dmg = append([]byte("\x1b[2K garbage {\"\n"), lines[at]...)
				case "NUL run before a record":
					dmg = append(make([]byte, 1+rng.Intn(600)), lines[at]...)
				case "blank line, then a torn stub": // (a cut TryTorn leaves: the blank line goes too)
					dmg = append(append([]byte("\n"), lines[at]...), stub(at+1)...)
				case "garbage line, then a record without its newline":
					dmg = append([]byte("}{\n"), line(at)...)
				case "blank line, then glued":
					dmg = append(append([]byte("\n"), line(at)...), lines[at+1]...)
				default:
					dmg = append(append(line(at), lines[at+1]...), stub(at+2)...)
				}
				at += 3
				write(dmg)
				data, err := os.ReadFile(p)
				if err != nil {
					t.Fatal(err)
				}
				samePlan(t, e, tg, data)
				r1, after1, steps := healSteps(t, e, tg)
				r2, after2, _ := healSteps(t, sides[1].e, sides[1].tg)
				q1, q2 := lastQuarantined(t, e), lastQuarantined(t, sides[1].e)
				m1, m2 := r1.Quarantine, r2.Quarantine
				r1.Quarantine, r2.Quarantine, r1.Wrote, r2.Wrote, r1.Path, r2.Path = "", "", nil, nil, "", ""
				name := fmt.Sprintf("%s, %s", a.preset, shape)
				if !equalReports(r1, r2) || !bytes.Equal(after1, after2) || !bytes.Equal(q1, q2) || !sameSums(t, m1, m2) {
					t.Fatalf("%s: %q\nfrom the incremental state %+v\nfrom the file %+v\nwrote %d and %d bytes, quarantined %q and %q",
						name, data, r1, r2, len(after1), len(after2), q1, q2)
				}
				if steps["salvage-incremental"] && !salvageIncApps[a.preset] {
					t.Fatalf("%s: planned from the incremental state", name)
				}
				if steps["salvage-incremental"] {
					fast[a.preset]++
					shapes[shape]++
				}
				if steps["salvage-judged-from-state"] {
					resumed[a.preset]++
					// The state carried over the appends the daemon accepted, and over its
					// own heal before.
					if appends > 0 {
						resumed["after appends"]++
					}
					if heal > 0 {
						resumed["after a heal"]++
					}
				}
				if r1.Action != ActionHealed {
					break
				}
			}
		}
	}
	t.Logf("salvages planned from the incremental state: %v, %v; their results judged from the state kept: %v", fast, shapes, resumed)
	for app := range salvageIncApps {
		if fast[app] == 0 {
			t.Errorf("%s: no salvage planned from the incremental state", app)
		}
		if resumed[app] == 0 {
			t.Errorf("%s: no salvage's result judged from the state the daemon kept", app)
		}
	}
	for _, way := range []string{"after appends", "after a heal"} {
		if resumed[way] == 0 {
			t.Errorf("no salvage's result judged from the state the daemon kept %s", way)
		}
	}
	for _, s := range allShapes {
		if shapes[s] == 0 {
			t.Errorf("%s: never salvaged from the incremental state", s)
		}
	}
}

// moreLines is a log's lines grown to n where they are fewer and the last is a record of a
// chain of ids (OpenClaw's short sample): copies of it, each with an id of its own and the one
// before for its parent.
func moreLines(lines [][]byte, n int) [][]byte {
	idRe, parentRe := regexp.MustCompile(`"id":"[^"]*"`), regexp.MustCompile(`"parentId":("[^"]*"|null)`)
	last := lines[len(lines)-1]
	m := idRe.Find(last)
	if len(lines) >= n || m == nil || !parentRe.Match(last) {
		return lines
	}
	prev := m[len(`"id":"`) : len(m)-1]
	for i := 0; len(lines) < n; i++ {
		id := []byte(fmt.Sprintf("c0ffee%02x", i))
		l := idRe.ReplaceAllLiteral(last, []byte(`"id":"`+string(id)+`"`))
		l = parentRe.ReplaceAllLiteral(l, []byte(`"parentId":"`+string(prev)+`"`))
		lines, prev = append(lines, l), id
	}
	return lines
}

// samePlan: what TrySalvage plans for tg's file (data), when it plans, is what the pass over
// the file gives: StreamInspect's verdict, PlanKeep's splice (its bytes) and figures, and
// the sha256 of the file and of the salvage's bytes.
func samePlan(t *testing.T, e *Engine, tg Target, data []byte) {
	t.Helper()
	typ := e.profile(tg.Rule.Format, tg.Path)
	_, v, tc, ok := e.inc.TrySalvage(tg.Path, typ, 0)
	if !ok {
		return
	}
	want, _, err := format.StreamInspect(tg.Path, typ)
	if err != nil {
		t.Fatal(err)
	}
	keep, fig, err := format.PlanKeep(typ, tg.Path, bytes.NewReader(data), int64(len(data)))
	if err != nil || keep == nil {
		t.Fatalf("%s: PlanKeep %v, %v", tg.Path, keep, err)
	}
	got, err := tc.Keep.Bytes(bytes.NewReader(data))
	if err != nil {
		t.Fatal(err)
	}
	kept, _ := keep.Bytes(bytes.NewReader(data))
	hex := func(b []byte) string { h := sha256.Sum256(b); return fmt.Sprintf("%x", h) }
	if v.Kind != want.Kind || v.Offset != want.Offset || v.Detail != want.Detail || v.Status != want.Status {
		t.Fatalf("%q: verdict %+v, the pass over the file %+v", data, v, want)
	}
	if !bytes.Equal(got, kept) || tc.Fig != fig || tc.OldSHA != hex(data) || tc.KeepSHA != hex(kept) {
		t.Fatalf("%q: planned %q %+v (sums %s %s), from the file %q %+v", data, got, tc.Fig, tc.OldSHA, tc.KeepSHA, kept, fig)
	}
}
