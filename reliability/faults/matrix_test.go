package faults

import (
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/sessionmedic/sessionmedic/heal"
)

var matrixCases = []sample{
	{app: "copaw", src: "corrupt_extra_data_race"},
	{app: "copaw", src: "corrupt_extra_data_race", foreign: true},
	{app: "nanobot", src: "corrupt_bad_middle_line"},
	{app: "nanobot", src: "corrupt_truncated_midline", big: true},
	{app: "praisonai", src: "corrupt_trailing_garbage"},
	{app: "praisonai", src: "corrupt_trailing_garbage", foreign: true},
	{app: "praisonai", src: "extended_fields_wiped"},
	{app: "openviking", src: "lost_clear"},
	{app: "openviking", src: "corrupt_truncated_messages"},
	{app: "openclaw", src: "03-trailing-garbage"},
	{app: "openclaw", src: "04-placeholder-with-bak", foreign: true},
	{app: "openclaw", src: "05-missing-newest-bak-corrupt"},
	{app: "openclaw", src: "12-utf8-bom"},
}

// recording is a clean heal of a case: every operation the fault hook saw, which target's
// heal each belongs to, and the states before and after.
type recording struct {
	calls    []call
	starts   []int // call index where each target's heal starts
	reports  []heal.Report
	orig     map[string]fileState
	healed   map[string]fileState
	changes  map[string]int // relative path → index of the call (rename, link, truncate) that put its healed bytes there
	owner    map[string]int // relative path → the target (index) whose heal changes it
	caseDir  string
	stateDir string
}

// span is the target whose heal call i belongs to.
func (r *recording) span(i int) int {
	k := -1
	for j, s := range r.starts {
		if s <= i {
			k = j
		}
	}
	return k
}

func record(t *testing.T, s sample, in *injector) *recording {
	t.Helper()
	e, caseDir, state := s.layout(t, 2*time.Second, in)
	rec := &recording{caseDir: caseDir, stateDir: state, changes: map[string]int{}, owner: map[string]int{}}
	rec.orig, _ = readTree(t, caseDir)
	in.reset(caseDir, state)
	rec.reports, rec.starts = healAll(t, e, in)
	rec.calls = in.recorded()
	var temps []string
	rec.healed, temps = readTree(t, caseDir)
	if len(temps) > 0 {
		t.Fatalf("a clean heal left temps: %v", temps)
	}
	healed := 0
	for k, r := range rec.reports {
		if r.Action != heal.ActionHealed {
			continue
		}
		healed++
		for _, p := range append([]string{r.Path}, r.Also...) {
			rel, _ := filepath.Rel(caseDir, p)
			rec.owner[rel] = k
			end := len(rec.calls)
			if k+1 < len(rec.starts) {
				end = rec.starts[k+1]
			}
			rec.changes[rel] = -1
			for i := rec.starts[k]; i < end; i++ {
				if c := rec.calls[i]; c.path == p && (c.op == "rename" || c.op == "link" || c.op == "truncate") {
					rec.changes[rel] = i
				}
			}
			if rec.changes[rel] < 0 {
				t.Fatalf("no rename, link or truncate of %s in the recorded calls", rel)
			}
		}
	}
	if healed == 0 {
		t.Fatalf("a clean heal healed nothing: %+v", rec.reports)
	}
	for rel := range union(rec.orig, rec.healed) {
		if _, ok := rec.owner[rel]; !ok && !rec.orig[rel].same(rec.healed[rel]) {
			t.Fatalf("%s changed but no report names it", rel)
		}
	}
	return rec
}

func union(a, b map[string]fileState) map[string]bool {
	out := map[string]bool{}
	for k := range a {
		out[k] = true
	}
	for k := range b {
		out[k] = true
	}
	return out
}

// expected says what a file must hold after a heal in which call i failed: the original
// unless its heal ran past its rename before the fault (or ran with no fault at all).
func (r *recording) expected(rel string, i int) (fileState, bool, string) {
	k, changed := r.owner[rel]
	if !changed {
		f, ok := r.orig[rel]
		return f, ok, "original (no heal changes it)"
	}
	if r.span(i) == k && i <= r.changes[rel] {
		f, ok := r.orig[rel]
		return f, ok, "original (the fault came before its rename)"
	}
	f, ok := r.healed[rel]
	return f, ok, "healed"
}

func describe(f fileState, ok bool) string {
	if !ok {
		return "absent"
	}
	return f.String()
}

// TestEveryOperationFails fails each operation of the heal of each case in turn, once, with
// EIO (and a write also with ENOSPC).
func TestEveryOperationFails(t *testing.T) {
	in := &injector{}
	ops := map[string]bool{}
	ran := 0
	for _, s := range matrixCases {
		t.Run(s.String(), func(t *testing.T) {
			ran++
			rec := record(t, s, in)
			for i, c := range rec.calls {
				if c.where == "other" {
					t.Errorf("operation %s on %s is neither in the session nor in the state directory", c.op, c.path)
					continue
				}
				ops[c.op] = true
				errnos := []syscall.Errno{syscall.EIO}
				if c.op == "write" {
					errnos = append(errnos, syscall.ENOSPC)
				}
				for _, errno := range errnos {
					injectOnce(t, s, rec, in, i, errno)
				}
			}
		})
	}
	for _, op := range []string{"create", "chown", "chmod", "write", "fsync", "close", "rename", "link", "truncate", "fsync-dir", "mkdir"} {
		if ran == len(matrixCases) && !ops[op] {
			t.Errorf("no heal of the matrix performs %q", op)
		}
	}
}

func injectOnce(t *testing.T, s sample, rec *recording, in *injector, at int, errno syscall.Errno) {
	t.Helper()
	want := rec.calls[at]
	what := fmt.Sprintf("%s failing with %v (call %d: %s in %s)", s, errno, at, want.op, want.where)
	stats.scenarios.Add(1)
	e, caseDir, state := s.layout(t, 2*time.Second, in)
	before, _ := readTree(t, caseDir)
	in.reset(caseDir, state)
	diverged := ""
	in.arm(func(i int, c call) error {
		if i == at {
			if c.op != want.op || c.where != want.where {
				diverged = fmt.Sprintf("call %d is %s in %s, the clean heal's was %s in %s", i, c.op, c.where, want.op, want.where)
				return nil
			}
			return errno
		}
		return nil
	})
	reports, _ := healAll(t, e, in)
	in.arm(nil)
	if diverged != "" {
		t.Fatalf("%s: the operations diverged before the fault: %s", what, diverged)
	}
	if len(in.firedCalls()) != 1 {
		stats.notFired.Add(1)
		violate(t, "%s: the fault never fired", what)
		return
	}
	now, temps := readTree(t, caseDir)
	var bad []string
	for rel := range union(rec.orig, rec.healed) {
		wantF, wantOK, why := rec.expected(rel, at)
		got, ok := now[rel]
		if ok != wantOK || (ok && !got.same(wantF)) {
			bad = append(bad, fmt.Sprintf("%s must be %s (%s) but is %s", rel, why, describe(wantF, wantOK), describe(got, ok)))
			continue
		}
		if strings.HasPrefix(why, "original") && ok && got.ino != before[rel].ino {
			bad = append(bad, fmt.Sprintf("%s holds its original bytes but was replaced (inode %d, was %d)", rel, got.ino, before[rel].ino))
		}
		if o, inO := rec.orig[rel]; inO && (!ok || !got.same(o)) && !quarantined(state, filepath.Join(caseDir, rel), o.data) {
			bad = append(bad, fmt.Sprintf("%s changed but its original bytes are not in quarantine", rel))
		}
	}
	// The heal the fault hit must say so unless it took full effect.
	if k := rec.span(at); k >= 0 && k < len(reports) {
		r := reports[k]
		done := true
		for rel, owner := range rec.owner {
			if owner == k && !now[rel].same(rec.healed[rel]) {
				done = false
			}
		}
		switch {
		case r.Action == heal.ActionHealed && !done:
			bad = append(bad, fmt.Sprintf("reported healed but the files are not: %+v", r))
		case !done && r.Reason == "":
			bad = append(bad, fmt.Sprintf("a failed heal without a reason: %+v", r))
		case !done && !strings.Contains(r.Reason, errno.Error()):
			bad = append(bad, fmt.Sprintf("the reason does not name the error %q: %q", errno.Error(), r.Reason))
		}
	}
	for _, tmp := range temps {
		bad = append(bad, "stray temp "+tmp)
	}
	for _, tmp := range ownTemps(state) {
		bad = append(bad, "stray temp in the state dir "+tmp)
	}
	for _, j := range journalLeft(state) {
		bad = append(bad, "journal entry left "+j)
	}
	stats.orphans.Add(int64(orphanQuarantine(state)))
	// The fault clears: the next heal finishes the job.
	again, _ := healAll(t, e, nil)
	now, temps = readTree(t, caseDir)
	for rel := range union(rec.healed, now) {
		got, ok := now[rel]
		w, inH := rec.healed[rel]
		if ok != inH || (ok && !got.same(w)) {
			bad = append(bad, fmt.Sprintf("after the fault cleared, %s is not healed: %s, want %s (reports %s)", rel, describe(got, ok), describe(w, inH), brief(again)))
		}
	}
	if len(temps) > 0 {
		bad = append(bad, fmt.Sprintf("after the fault cleared: temps %v", temps))
	}
	if j := journalLeft(state); len(j) > 0 && !slices.ContainsFunc(bad, func(b string) bool { return strings.HasPrefix(b, "journal entry left") }) {
		bad = append(bad, fmt.Sprintf("after the fault cleared: journal %v", j))
	}
	slices.Sort(bad)
	for _, b := range bad {
		violate(t, "%s: %s", what, b)
	}
}

func brief(rs []heal.Report) string {
	var out []string
	for _, r := range rs {
		if r.Verdict != heal.Healthy {
			out = append(out, fmt.Sprintf("%s %s %s %s %q", filepath.Base(r.Path), r.Verdict, r.Kind, r.Action, r.Reason))
		}
	}
	return "[" + strings.Join(out, "; ") + "]"
}

// TestFullStateFilesystem: the state directory's filesystem is full (ENOSPC on every write,
// and in a second round on every create and mkdir too): no session file is touched, every
// damaged file is reported with the error, nothing is left behind; once space is back, the
// heal succeeds.
func TestFullStateFilesystem(t *testing.T) {
	in := &injector{}
	for _, s := range matrixCases {
		for _, full := range [][]string{{"write"}, {"write", "create", "mkdir"}} {
			t.Run(s.String()+"/"+strings.Join(full, "+"), func(t *testing.T) {
				rec := record(t, s, in)
				stats.scenarios.Add(1)
				e, caseDir, state := s.layout(t, 2*time.Second, in)
				in.reset(caseDir, state)
				in.arm(func(i int, c call) error {
					if c.where == "state" && slices.Contains(full, c.op) {
						return syscall.ENOSPC
					}
					return nil
				})
				reports, _ := healAll(t, e, in)
				in.arm(nil)
				if len(in.firedCalls()) == 0 {
					violate(t, "no write to the state dir was attempted")
				}
				now, temps := readTree(t, caseDir)
				for rel := range union(rec.orig, now) {
					if o, ok := rec.orig[rel]; !ok || !now[rel].same(o) {
						violate(t, "%s was touched while the state dir was full: %s", rel, describe(now[rel], true))
					}
				}
				for _, r := range reports {
					if r.Verdict == heal.Damaged && (r.Action == heal.ActionHealed || !strings.Contains(r.Reason, "no space left on device")) {
						violate(t, "a damaged file with the state dir full: action %q, reason %q", r.Action, r.Reason)
					}
				}
				if len(temps) > 0 || len(ownTemps(state)) > 0 || len(journalLeft(state)) > 0 {
					violate(t, "left behind: temps %v %v, journal %v", temps, ownTemps(state), journalLeft(state))
				}
				healAll(t, e, nil)
				now, _ = readTree(t, caseDir)
				for rel := range union(rec.healed, now) {
					if !now[rel].same(rec.healed[rel]) {
						violate(t, "once space is back, %s is not healed", rel)
					}
				}
			})
		}
	}
}

// TestChownRefusedRefusesTheHeal: a heal never changes a file's owner. Without the right to
// give the new file the old one's owner (EPERM, as for a non-root daemon over another
// user's file), the heal is refused and the file left as it was, as for any other chown or
// chmod error.
func TestChownRefusedRefusesTheHeal(t *testing.T) {
	in := &injector{}
	s := sample{app: "praisonai", src: "corrupt_trailing_garbage", foreign: true}
	rec := record(t, s, in)
	pc := filepath.Join("sessions", "parent-chat.json")
	for _, tc := range []struct {
		op     string
		errno  syscall.Errno
		healed bool
	}{{"chown", syscall.EPERM, false}, {"chown", syscall.EIO, false}, {"chown", syscall.EROFS, false}, {"chmod", syscall.EPERM, false}, {"chmod", syscall.EIO, false}} {
		t.Run(tc.op+"/"+tc.errno.Error(), func(t *testing.T) {
			stats.scenarios.Add(1)
			e, caseDir, state := s.layout(t, 2*time.Second, in)
			in.reset(caseDir, state)
			in.arm(func(i int, c call) error {
				if c.op == tc.op && c.where == "session" {
					return tc.errno
				}
				return nil
			})
			reports, _ := healAll(t, e, in)
			in.arm(nil)
			if len(in.firedCalls()) == 0 {
				violate(t, "%s was never called", tc.op)
				return
			}
			now, temps := readTree(t, caseDir)
			got := now[pc]
			var r heal.Report
			for _, x := range reports {
				if strings.HasSuffix(x.Path, pc) {
					r = x
				}
			}
			if tc.healed {
				if r.Action != heal.ActionHealed || string(got.data) != string(rec.healed[pc].data) || got.perm != rec.orig[pc].perm {
					violate(t, "with chown refused: %+v, file %s", r, got)
				}
			} else if r.Action == heal.ActionHealed || r.Reason == "" || !got.same(rec.orig[pc]) {
				violate(t, "with %s failing (%v): %+v, file %s", tc.op, tc.errno, r, got)
			}
			if len(temps) > 0 || len(journalLeft(state)) > 0 {
				violate(t, "left behind: temps %v, journal %v", temps, journalLeft(state))
			}
		})
	}
}
