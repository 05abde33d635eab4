package faults

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/sessionmedic/sessionmedic/daemon"
	"github.com/sessionmedic/sessionmedic/heal"
	"github.com/sessionmedic/sessionmedic/policy"
)

// logBuffer collects the daemon's JSON log lines.
type logBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *logBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *logBuffer) lines() []map[string]any {
	l.mu.Lock()
	defer l.mu.Unlock()
	var out []map[string]any
	for _, line := range strings.Split(l.b.String(), "\n") {
		var m map[string]any
		if json.Unmarshal([]byte(line), &m) == nil {
			out = append(out, m)
		}
	}
	return out
}

func (l *logBuffer) tail(n int) string {
	l.mu.Lock()
	defer l.mu.Unlock()
	s := l.b.String()
	if len(s) > n {
		s = "…" + s[len(s)-n:]
	}
	return s
}

// fault is one kind of failure kept up while it is armed: every op in where fails.
type fault struct {
	op, where string
	errno     syscall.Errno
	// afterRename: the first such call of a heal comes after the file is replaced, so the
	// file ends healed even though the heal reports the error.
	afterRename bool
}

var daemonCases = []sample{
	{app: "copaw", src: "corrupt_extra_data_race"},
	{app: "nanobot", src: "corrupt_bad_middle_line"},
	{app: "praisonai", src: "corrupt_trailing_garbage", foreign: true},
	{app: "openviking", src: "lost_clear"},
	{app: "openclaw", src: "03-trailing-garbage"},
}

// faultsOf lists, from a clean heal, every (operation, directory) the heals of the damaged
// files perform, with EIO (and ENOSPC for writes).
func faultsOf(rec *recording) []fault {
	var out []fault
	seen := map[string]bool{}
	for i, c := range rec.calls {
		k := rec.span(i)
		if k < 0 || rec.reports[k].Action != heal.ActionHealed || seen[c.op+c.where] {
			continue
		}
		seen[c.op+c.where] = true
		after := true
		for rel, owner := range rec.owner {
			if owner == k && i <= rec.changes[rel] {
				after = false
			}
		}
		out = append(out, fault{op: c.op, where: c.where, errno: syscall.EIO, afterRename: after})
		if c.op == "write" {
			out = append(out, fault{op: c.op, where: c.where, errno: syscall.ENOSPC, afterRename: after})
		}
	}
	return out
}

// TestDaemonThroughFaults runs the daemon over a damaged case while one kind of operation
// fails: the heal is refused (file.heal_refused with a reason) or retried, the file keeps its
// original bytes (or, for a fault after the rename, its healed bytes), nothing is left
// behind; once the fault clears and the file is written again, the daemon heals it. The
// daemon keeps running through every fault.
func TestDaemonThroughFaults(t *testing.T) {
	in := &injector{}
	for _, s := range daemonCases {
		t.Run(s.String(), func(t *testing.T) {
			rec := record(t, s, in)
			faults := faultsOf(rec)
			var damaged []string // the files the heal changes, relative
			for rel := range rec.owner {
				damaged = append(damaged, rel)
			}
			slices.Sort(damaged)

			e, caseDir, state := s.layout(t, 50*time.Millisecond, in)
			cfg := e.Policy
			in.reset(caseDir, state)
			var logs logBuffer
			ready := make(chan struct{})
			ctx, cancel := context.WithCancel(context.Background())
			done := make(chan error, 1)
			in.arm(armed(faults[0]))
			go func() {
				done <- daemon.Run(ctx, daemon.Options{
					Load:   func() (*policy.Config, []string, error) { return cfg, nil, nil },
					Log:    slog.New(slog.NewJSONHandler(&logs, &slog.HandlerOptions{Level: slog.LevelDebug})),
					Notify: func(string) error { return nil }, Ready: ready,
					Backoff: 20 * time.Millisecond, FlapHeals: 1 << 20, Rescan: time.Hour,
					Faults: in.faults(),
				})
			}()
			defer func() {
				cancel()
				select {
				case err := <-done:
					if err != nil {
						violate(t, "daemon.Run returned %v", err)
					}
				case <-time.After(15 * time.Second):
					violate(t, "the daemon did not stop within 15s")
				}
			}()
			select {
			case <-ready:
			case err := <-done:
				t.Fatalf("the daemon stopped at start: %v", err)
			case <-time.After(15 * time.Second):
				t.Fatal("the daemon was not ready within 15s")
			}
			// Ready comes after the first scan, not after the watches are in place (see
			// TestDaemonSeesADamageRightAfterReady): give them time before writing.
			time.Sleep(500 * time.Millisecond)
			for n, f := range faults {
				what := fmt.Sprintf("%s: %s in %s failing with %v", s, f.op, f.where, f.errno)
				stats.scenarios.Add(1)
				mark := 0 // the first fault was armed before the daemon started
				if n > 0 {
					mark = len(logs.lines())
					in.arm(armed(f))
					damage(t, caseDir, damaged, rec)
				}
				// The heal fails: refused (or busy, and retried) for every damaged file.
				outcome := waitEvents(t, &logs, mark, caseDir, damaged, 10*time.Second, "file.heal_refused", "file.healed", "file.busy")
				fired := len(in.firedCalls()) > 0
				now, temps := readTree(t, caseDir)
				var bad []string
				if !fired {
					stats.notFired.Add(1)
					t.Logf("%s: never reached (the heal performs no such operation once the state dir is set up)", what)
				}
				for _, rel := range damaged {
					ev := outcome[rel]
					switch {
					case ev == nil:
						bad = append(bad, rel+": no file.heal_refused, file.busy or file.healed within 10s")
						continue
					case ev["msg"] == "file.heal_refused" && fmt.Sprint(ev["reason"]) == "" || ev["reason"] == nil && ev["msg"] == "file.heal_refused":
						bad = append(bad, rel+": file.heal_refused without a reason")
					}
					isOrig, isHealed := now[rel].same(rec.orig[rel]), now[rel].same(rec.healed[rel])
					switch {
					case !fired:
					case f.afterRename && !isHealed:
						bad = append(bad, fmt.Sprintf("%s: a fault after the rename, but the file is not healed: %s", rel, now[rel]))
					case !f.afterRename && !isOrig:
						bad = append(bad, fmt.Sprintf("%s: a fault before the rename, but the file is not its original: %s", rel, now[rel]))
					case !f.afterRename && ev["msg"] == "file.healed":
						bad = append(bad, rel+": file.healed while the file holds its original bytes")
					}
					if !isOrig && !quarantined(state, filepath.Join(caseDir, rel), rec.orig[rel].data) {
						bad = append(bad, rel+": changed but its original bytes are not in quarantine")
					}
				}
				if len(temps) > 0 || len(ownTemps(state)) > 0 {
					bad = append(bad, fmt.Sprintf("stray temps %v %v", temps, ownTemps(state)))
				}
				if j := journalLeft(state); len(j) > 0 {
					bad = append(bad, fmt.Sprintf("journal entries left %v", j))
				}
				// The fault clears; a refused heal is not retried by itself: write the file again.
				in.arm(nil)
				mark = len(logs.lines())
				var again []string
				for _, rel := range damaged {
					if !now[rel].same(rec.healed[rel]) {
						again = append(again, rel)
					}
				}
				if len(again) > 0 {
					damage(t, caseDir, again, rec)
					outcome = waitEvents(t, &logs, mark, caseDir, again, 10*time.Second, "file.healed")
					for _, rel := range again {
						if outcome[rel] == nil {
							bad = append(bad, rel+": not healed within 10s after the fault cleared")
						}
					}
				}
				now, temps = readTree(t, caseDir)
				for _, rel := range damaged {
					if !now[rel].same(rec.healed[rel]) {
						bad = append(bad, fmt.Sprintf("%s after the fault cleared: %s, want the healed %s", rel, now[rel], rec.healed[rel]))
					}
				}
				if len(temps) > 0 || len(journalLeft(state)) > 0 {
					bad = append(bad, fmt.Sprintf("after the fault cleared: temps %v, journal %v", temps, journalLeft(state)))
				}
				select {
				case err := <-done:
					done <- err
					bad = append(bad, fmt.Sprintf("the daemon stopped: %v", err))
				default:
				}
				for _, b := range bad {
					violate(t, "%s: %s", what, b)
				}
				if len(bad) > 0 {
					t.Logf("daemon log: %s", logs.tail(4000))
					if slices.ContainsFunc(bad, func(b string) bool { return strings.Contains(b, "daemon stopped") }) {
						return
					}
				}
			}
		})
	}
}

// armed fails every call of f's kind.
func armed(f fault) func(int, call) error {
	return func(_ int, c call) error {
		if c.op == f.op && c.where == f.where {
			return f.errno
		}
		return nil
	}
}

// damage writes the damaged bytes back (in place, as an app's plain write does).
func damage(t *testing.T, caseDir string, rels []string, rec *recording) {
	t.Helper()
	for _, rel := range rels {
		o, ok := rec.orig[rel]
		if !ok {
			t.Fatalf("%s has no original bytes to write back", rel)
		}
		if err := os.WriteFile(filepath.Join(caseDir, rel), o.data, o.perm); err != nil {
			t.Fatal(err)
		}
	}
}

// waitEvents waits up to within for one of msgs about each of rels after line mark; it
// returns the first such event per file.
func waitEvents(t *testing.T, logs *logBuffer, mark int, caseDir string, rels []string, within time.Duration, msgs ...string) map[string]map[string]any {
	t.Helper()
	out := map[string]map[string]any{}
	deadline := time.Now().Add(within)
	for {
		lines := logs.lines()
		for _, m := range lines[min(mark, len(lines)):] {
			msg, _ := m["msg"].(string)
			p, _ := m["path"].(string)
			if !slices.Contains(msgs, msg) || p == "" {
				continue
			}
			rel, _ := filepath.Rel(caseDir, p)
			if _, seen := out[rel]; !seen && slices.Contains(rels, rel) {
				out[rel] = m
			}
		}
		if len(out) == len(rels) || time.Now().After(deadline) {
			return out
		}
		time.Sleep(10 * time.Millisecond)
	}
}
