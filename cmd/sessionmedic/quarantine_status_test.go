package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

var (
	crashOnce sync.Once
	crashBin  string
	crashErr  error
)

// crashBinary is the binary built with the crashpoints tag: SESSIONMEDIC_CRASH_AT=STEP kills
// it at that step of the heal protocol (crashpoints.go).
func crashBinary(t *testing.T) string {
	t.Helper()
	crashOnce.Do(func() {
		crashBin = filepath.Join(filepath.Dir(binary), "sessionmedic-crashpoints")
		if out, err := exec.Command("go", "build", "-tags", "crashpoints", "-o", crashBin, ".").CombinedOutput(); err != nil {
			crashErr = fmt.Errorf("go build -tags crashpoints: %v\n%s", err, out)
		}
	})
	if crashErr != nil {
		t.Fatal(crashErr)
	}
	return crashBin
}

// killedBySIGKILL reports whether err is the exit of a process SIGKILL ended.
func killedBySIGKILL(err error) bool {
	var ee *exec.ExitError
	if !errors.As(err, &ee) {
		return false
	}
	ws, ok := ee.Sys().(syscall.WaitStatus)
	return ok && ws.Signaled() && ws.Signal() == syscall.SIGKILL
}

// listStatuses is `quarantine list` as id -> status, read from -json and checked against the
// text listing's status column.
func listStatuses(t *testing.T, home, policyFile string) map[string]string {
	t.Helper()
	out, errOut, code := sm(t, home, "quarantine", "list", "-json", "-config", policyFile)
	if code != 0 {
		t.Fatalf("quarantine list -json: exit %d\n%s%s", code, out, errOut)
	}
	got := map[string]string{}
	for _, l := range strings.Split(strings.TrimSpace(out), "\n") {
		if l == "" {
			continue
		}
		var m struct{ ID, Status string }
		if err := json.Unmarshal([]byte(l), &m); err != nil || m.Status == "" {
			t.Fatalf("quarantine list -json: %q: %v", l, err)
		}
		got[m.ID] = m.Status
	}
	text, _, _ := sm(t, home, "quarantine", "list", "-config", policyFile)
	rows := 0
	for _, l := range strings.Split(strings.TrimSpace(text), "\n") {
		if f := strings.Fields(l); len(f) > 1 {
			rows++
			if got[f[0]] != f[1] {
				t.Fatalf("quarantine list: %s has status %q, -json says %q\n%s", f[0], f[1], got[f[0]], text)
			}
		}
	}
	if rows != len(got) {
		t.Fatalf("quarantine list: %d rows, -json %d\n%s", rows, len(got), text)
	}
	return got
}

// TestQuarantineStatusAfterCrash kills the real binary (a `heal`, and the daemon) at each
// step of a heal's protocol, then starts it again, and checks what `quarantine list` (text
// and -json) says of the killed heal's entry: before the restart, in-flight wherever a
// journal entry names it (healed once the heal ended); after it, rolled-back where the file
// was never replaced (it still holds the damaged bytes), healed where the rename had
// happened (the recovery finishes the heal), and no entry at all where the kill came before
// the quarantine was written. The journal.recovered event says the same outcome, the file
// holds exactly the damaged or the healed bytes, and `quarantine restore` of a rolled-back
// entry says the file already holds those bytes and writes nothing.
func TestQuarantineStatusAfterCrash(t *testing.T) {
	bin := crashBinary(t)
	cases := []struct {
		step          string
		before, after string // the killed heal's entry in the listing ("": none)
		outcome       string // journal.recovered's outcome at the restart ("": none)
		replaced      bool   // the file holds the healed bytes after the restart's recovery
	}{
		{"locked", "", "", "", false},
		{"journaled", "", "", "rolled-back", false},
		{"quarantined", "in-flight", "rolled-back", "rolled-back", false},
		{"temp-written", "in-flight", "rolled-back", "rolled-back", false},
		{"renamed", "in-flight", "healed", "applied", true},
		{"done", "healed", "healed", "", true},
	}
	damaged, _ := os.ReadFile(filepath.Join(samples, "praisonai/corrupt_trailing_garbage/sessions/parent-chat.json"))
	healed, _ := os.ReadFile(filepath.Join(samples, "praisonai/healthy/sessions/parent-chat.json"))
	for _, mode := range []string{"heal", "run"} {
		for _, c := range cases {
			t.Run(mode+"/"+c.step, func(t *testing.T) {
				home := t.TempDir()
				dir, other := filepath.Join(home, "sessions"), filepath.Join(home, "other")
				copyDir(t, filepath.Join(samples, "praisonai/corrupt_trailing_garbage/sessions"), dir)
				copyDir(t, filepath.Join(samples, "praisonai/healthy/sessions"), other)
				target := filepath.Join(dir, "parent-chat.json")
				state := filepath.Join(home, "state")
				policyFile, otherPolicy := filepath.Join(home, "policy.yaml"), filepath.Join(home, "other.yaml")
				rule := "version: 1\nstate_dir: %s\nrules:\n  - {name: p, preset: praisonai, paths: [%s], settle: 50ms}\n"
				os.WriteFile(policyFile, fmt.Appendf(nil, rule, state, dir), 0o644)
				os.WriteFile(otherPolicy, fmt.Appendf(nil, rule, state, other), 0o644)

				// The killed run.
				crashAt(t, bin, mode, c.step, home, state, policyFile)
				before := listStatuses(t, home, policyFile)
				id := ""
				for k := range before {
					id = k
				}
				switch {
				case c.before == "" && len(before) != 0:
					t.Fatalf("killed at %s: entries %v, want none", c.step, before)
				case c.before != "" && (len(before) != 1 || before[id] != c.before):
					t.Fatalf("killed at %s: entries %v, want one %s", c.step, before, c.before)
				}

				// The restart. A heal of another tree resolves the journal as any start does
				// (and leaves this file to the restore below); the daemon's restart heals
				// the file again.
				var restarted string
				if mode == "heal" {
					_, restarted, _ = sm(t, home, "heal", "-config", otherPolicy, "-json")
				} else {
					d := startDaemon(t, home, "-config", policyFile)
					// A heal the restart makes is done once it is said (file.healed): its
					// bytes are in place at the rename, before its journal entry and its
					// quarantine status are closed. (Where the recovery put the healed bytes
					// in place, the restart makes none.)
					eventually(t, 20*time.Second, "the restarted daemon's heal", func() bool {
						b, _ := os.ReadFile(target)
						return bytes.Equal(b, healed) && len(d.events("sessionmedic.started")) == 1 &&
							(c.replaced || len(d.events("file.healed")) >= 1)
					})
					d.mu.Lock()
					restarted = d.raw.String()
					d.mu.Unlock()
				}
				var outcomes []string
				for _, l := range strings.Split(restarted, "\n") {
					var ev struct{ Msg, Outcome string }
					if json.Unmarshal([]byte(l), &ev) == nil && ev.Msg == "journal.recovered" {
						outcomes = append(outcomes, ev.Outcome)
					}
				}
				if want := strings.Fields(c.outcome); strings.Join(outcomes, " ") != strings.Join(want, " ") {
					t.Errorf("journal.recovered outcomes %v, want %v\n%s", outcomes, want, restarted)
				}

				after := listStatuses(t, home, policyFile)
				if c.after == "" {
					if _, ok := after[id]; id != "" && ok {
						t.Fatalf("restart after %s: the killed heal's entry is listed: %v", c.step, after)
					}
				} else if after[id] != c.after {
					t.Fatalf("restart after %s: %s is %q, want %q (%v)", c.step, id, after[id], c.after, after)
				}
				for k, s := range after {
					if k != id && s != "healed" {
						t.Errorf("restart after %s: the restart's own entry %s is %q", c.step, k, s)
					}
				}
				if mode == "run" {
					return
				}
				b, _ := os.ReadFile(target)
				if want := map[bool][]byte{false: damaged, true: healed}[c.replaced]; !bytes.Equal(b, want) {
					t.Fatalf("restart after %s: the file holds %q", c.step, b)
				}
				if c.after != "rolled-back" {
					return
				}
				if out, _, code := sm(t, home, "quarantine", "show", id, "-config", policyFile); code != 0 || !strings.Contains(out, "status: rolled-back: ") {
					t.Errorf("quarantine show of a rolled-back entry: exit %d\n%s", code, out)
				}
				out, errOut, code := sm(t, home, "quarantine", "restore", id, "-config", policyFile)
				if code != 0 || !strings.Contains(out, "nothing to restore: "+target+" already holds the bytes of "+id+" (its heal was rolled back)") {
					t.Fatalf("restore of a rolled-back entry: exit %d\n%s%s", code, out, errOut)
				}
				if b, _ := os.ReadFile(target); !bytes.Equal(b, damaged) {
					t.Fatalf("restore of a rolled-back entry changed the file: %q", b)
				}
				if now := listStatuses(t, home, policyFile); len(now) != len(after) {
					t.Fatalf("restore of a rolled-back entry quarantined something: %v", now)
				}
			})
		}
	}
}

// crashAt runs bin's heal (mode "heal") or daemon (mode "run") over policyFile with
// SESSIONMEDIC_CRASH_AT=step, and fails the test unless it is killed there (within 60 s).
func crashAt(t *testing.T, bin, mode, step, home, state, policyFile string) {
	t.Helper()
	args := []string{"heal", "-config", policyFile, "-json"}
	if mode == "run" {
		args = []string{"run", "-config", policyFile, "-log-format", "json"}
	}
	cmd := exec.Command(bin, args...)
	cmd.Env = []string{"HOME=" + home, "XDG_STATE_HOME=" + state, "PATH=" + os.Getenv("PATH"), "SESSIONMEDIC_CRASH_AT=" + step}
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case err := <-done:
		if !killedBySIGKILL(err) {
			t.Fatalf("%s did not die at %s: %v\n%s", mode, step, err, stderr.String())
		}
	case <-time.After(60 * time.Second):
		cmd.Process.Kill()
		t.Fatalf("%s never reached %s\n%s", mode, step, stderr.String())
	}
}
