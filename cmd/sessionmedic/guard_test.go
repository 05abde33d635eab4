package main

import (
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

// quarantineEntries counts the manifests under a state dir's quarantine.
func quarantineEntries(t *testing.T, state string) int {
	t.Helper()
	n := 0
	filepath.WalkDir(filepath.Join(state, "quarantine"), func(p string, d fs.DirEntry, err error) error {
		if err == nil && d.Name() == "manifest.json" {
			n++
		}
		return nil
	})
	return n
}

const tornJSONL = "{\"a\":1}\n{\"a\":2}\n{\"a\""

// damagedTree writes n JSONL files with a torn last line under dir and a policy over it.
func damagedTree(t *testing.T, home string, n int, settle string) (dir, policyFile, state string) {
	t.Helper()
	dir = filepath.Join(home, "bot", "sessions")
	state = filepath.Join(home, "state")
	for i := range n {
		sub := filepath.Join(dir, fmt.Sprintf("d%02d", i%25))
		os.MkdirAll(sub, 0o755)
		if err := os.WriteFile(filepath.Join(sub, fmt.Sprintf("s%04d.jsonl", i)), []byte(tornJSONL), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	policyFile = filepath.Join(home, "policy.yaml")
	os.WriteFile(policyFile, []byte(fmt.Sprintf("version: 1\nstate_dir: %s\nrules:\n  - {name: bot, format: jsonl, paths: [%s], settle: %s, max_wait: 5s}\n",
		state, dir, settle)), 0o644)
	return dir, policyFile, state
}

func smAsync(home string, args ...string) (*exec.Cmd, *strings.Builder, *strings.Builder) {
	cmd := exec.Command(binary, args...)
	cmd.Env = []string{"HOME=" + home, "XDG_STATE_HOME=" + filepath.Join(home, "state"), "PATH=" + os.Getenv("PATH")}
	var o, e strings.Builder
	cmd.Stdout, cmd.Stderr = &o, &e
	return cmd, &o, &e
}

// Two heals over the same tree and state dir share the work: every file is healed exactly
// once, and neither reports a busy file or exits 1.
func TestTwoHealsHealEachFileOnce(t *testing.T) {
	home := t.TempDir()
	const n = 2500
	_, policyFile, state := damagedTree(t, home, n, "1s")
	var wg sync.WaitGroup
	codes := make([]int, 2)
	outs := make([]string, 2)
	for i := range 2 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			cmd, o, e := smAsync(home, "heal", "-config", policyFile)
			err := cmd.Run()
			if ee, ok := err.(*exec.ExitError); ok {
				codes[i] = ee.ExitCode()
			} else if err != nil {
				codes[i] = -1
			}
			outs[i] = o.String() + e.String()
		}()
	}
	wg.Wait()
	for i := range 2 {
		if codes[i] != 0 {
			t.Errorf("heal %d exited %d:\n%s", i, codes[i], tail(outs[i]))
		}
		if strings.Contains(outs[i], "busy\t") || strings.Contains(outs[i], "busy  ") {
			t.Errorf("heal %d reported busy files:\n%s", i, tail(outs[i]))
		}
	}
	if got := quarantineEntries(t, state); got != n {
		t.Fatalf("%d quarantine entries for %d damaged files: some were healed twice (or not at all)", got, n)
	}
}

// A heal run while the daemon heals the same files: each is healed once, and the heal exits 0.
func TestHealBesideTheDaemon(t *testing.T) {
	home := t.TempDir()
	const n = 300
	dir, policyFile, state := damagedTree(t, home, 0, "50ms")
	d := startDaemon(t, home, "-config", policyFile)
	eventually(t, 15*time.Second, "first scan", func() bool { return len(d.events("scan.finished")) >= 1 })
	for i := range n {
		sub := filepath.Join(dir, fmt.Sprintf("d%02d", i%25))
		os.MkdirAll(sub, 0o755)
		os.WriteFile(filepath.Join(sub, fmt.Sprintf("s%04d.jsonl", i)), []byte(tornJSONL), 0o644)
	}
	out, errOut, code := sm(t, home, "heal", "-config", policyFile)
	if code != 0 {
		t.Fatalf("heal beside the daemon exited %d:\n%s\n%s", code, tail(out), tail(errOut))
	}
	eventually(t, 30*time.Second, "every file healthy", func() bool {
		_, _, c := sm(t, home, "check", "-config", policyFile)
		return c == 0
	})
	time.Sleep(300 * time.Millisecond) // events of the last heals settle in the daemon
	if got := quarantineEntries(t, state); got != n {
		t.Fatalf("%d quarantine entries for %d damaged files (daemon healed %d)", got, n, len(d.events("file.healed")))
	}
}

// An operator's restore stands while the daemon runs: reported (file.restored, then
// file.damaged with hands_off), not healed, until the app writes the file again or a heal
// names it.
func TestRestoreStandsWhileTheDaemonRuns(t *testing.T) {
	home := t.TempDir()
	dir, policyFile, _ := damagedTree(t, home, 0, "100ms")
	os.MkdirAll(dir, 0o755)
	f := filepath.Join(dir, "s.jsonl")
	d := startDaemon(t, home, "-config", policyFile)
	eventually(t, 15*time.Second, "first scan", func() bool { return len(d.events("scan.finished")) >= 1 })
	os.WriteFile(f, []byte(tornJSONL), 0o644)
	eventually(t, 15*time.Second, "first heal", func() bool { return len(d.events("file.healed")) == 1 })
	q, _ := d.events("file.healed")[0]["quarantine"].(string)
	id := filepath.Base(q)
	out, errOut, code := sm(t, home, "quarantine", "restore", id, "-config", policyFile)
	if code != 0 {
		t.Fatalf("restore: %d %s %s", code, out, errOut)
	}
	eventually(t, 15*time.Second, "file.restored", func() bool { return len(d.events("file.restored")) == 1 })
	eventually(t, 15*time.Second, "file.damaged hands_off", func() bool {
		for _, ev := range d.events("file.damaged") {
			if ev["hands_off"] == true && ev["path"] == f {
				return true
			}
		}
		return false
	})
	if ev := d.events("file.restored")[0]; ev["path"] != f || ev["quarantine"] != id {
		t.Fatalf("file.restored: %v", ev)
	}
	if string(read(t, f)) != tornJSONL {
		t.Fatal("the daemon undid the operator's restore")
	}
	if n := len(d.events("file.healed")); n != 1 {
		t.Fatalf("%d heals after the restore", n)
	}
	// The app writes the file again, damaged: healed.
	os.WriteFile(f, []byte(tornJSONL+"1"), 0o644)
	eventually(t, 15*time.Second, "heal after the app wrote", func() bool { return len(d.events("file.healed")) == 2 })

	// Restored again, then the operator names it in a heal: healed by that heal.
	q2, _ := d.events("file.healed")[1]["quarantine"].(string)
	if _, _, code := sm(t, home, "quarantine", "restore", filepath.Base(q2), "-config", policyFile); code != 0 {
		t.Fatal("second restore failed")
	}
	eventually(t, 15*time.Second, "second file.restored", func() bool { return len(d.events("file.restored")) == 2 })
	out, errOut, code = sm(t, home, "heal", "-config", policyFile, f)
	if code != 0 || !strings.Contains(out, "healed") {
		t.Fatalf("heal naming the restored file: %d\n%s\n%s", code, out, errOut)
	}
	if string(read(t, f)) != "{\"a\":1}\n{\"a\":2}\n" {
		t.Fatalf("after heal PATH: %q", read(t, f))
	}
}

// A rule that guards nothing says so: a missing path (rule.path_missing) and a path with no
// matching file (rule.no_files), in run, check, heal and policy.
func TestRulesThatGuardNothingAreAnnounced(t *testing.T) {
	home := t.TempDir()
	empty := filepath.Join(home, "empty")
	os.MkdirAll(empty, 0o755)
	os.WriteFile(filepath.Join(empty, "notes.txt"), []byte("x"), 0o644)
	missing := filepath.Join(home, "nope", "sessions")
	policyFile := filepath.Join(home, "policy.yaml")
	os.WriteFile(policyFile, []byte(fmt.Sprintf("version: 1\nstate_dir: %s\nrules:\n  - {name: gone, format: jsonl, paths: [%s], settle: 100ms, max_wait: 1s}\n  - {name: bare, preset: copaw, paths: [%s]}\n",
		filepath.Join(home, "state"), missing, empty)), 0o644)

	wantEvents := func(what, log string) {
		t.Helper()
		for _, want := range []string{`"msg":"rule.path_missing","rule":"gone","path":"` + missing + `"`, `"msg":"rule.no_files","rule":"bare","path":"` + empty + `","patterns":["**/sessions/*.json"`} {
			if !strings.Contains(log, want) {
				t.Errorf("%s: no %s in\n%s", what, want, log)
			}
		}
	}
	for _, cmd := range []string{"check", "heal"} {
		out, errOut, code := sm(t, home, cmd, "-config", policyFile)
		if code != 0 {
			t.Errorf("%s: exit %d", cmd, code)
		}
		wantEvents(cmd, errOut)
		for _, want := range [][]string{{"missing", "gone", missing, "does not exist"}, {"no-files", "bare", empty, "**/sessions/*.json"}} {
			found := false
			for _, line := range strings.Split(out, "\n") {
				f := strings.Fields(line)
				found = found || len(f) > 3 && f[0] == want[0] && f[1] == want[1] && f[2] == want[2] && strings.Contains(line, want[3])
			}
			if !found {
				t.Errorf("%s output lacks a line %q:\n%s", cmd, want, out)
			}
		}
	}
	_, errOut, code := sm(t, home, "policy", "-config", policyFile)
	if code != 0 {
		t.Errorf("policy: exit %d", code)
	}
	wantEvents("policy", errOut)

	d := startDaemon(t, home, "-config", policyFile)
	eventually(t, 15*time.Second, "first scan", func() bool { return len(d.events("scan.finished")) == 2 })
	d.mu.Lock()
	log := d.raw.String()
	d.mu.Unlock()
	wantEvents("run", log)
	if n := len(d.events("rule.no_files")); n != 1 {
		t.Errorf("rule.no_files said %d times in one scan", n)
	}
	// The missing path appears: the daemon was waiting for it.
	os.MkdirAll(missing, 0o755)
	os.WriteFile(filepath.Join(missing, "s.jsonl"), []byte(tornJSONL), 0o644)
	eventually(t, 15*time.Second, "heal once the path appears", func() bool { return len(d.events("file.healed")) == 1 })
}

// The embedded default with no app installed says so at WARN, naming where it looked.
func TestDefaultWithNoAppSaysNothingIsGuarded(t *testing.T) {
	home := t.TempDir()
	d := startDaemon(t, home)
	eventually(t, 15*time.Second, "nothing_watched", func() bool { return len(d.events("sessionmedic.nothing_watched")) == 1 })
	ev := d.events("sessionmedic.nothing_watched")[0]
	paths, _ := ev["paths"].([]any)
	if ev["level"] != "WARN" || len(paths) == 0 || !strings.Contains(fmt.Sprint(paths), filepath.Join(home, ".qwenpaw")) {
		t.Fatalf("nothing_watched: %v", ev)
	}
	_, errOut, _ := sm(t, home, "check")
	if !strings.Contains(errOut, "sessionmedic.nothing_watched") {
		t.Fatalf("check on the default with no app: %s", errOut)
	}
}

func tail(s string) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	if len(lines) > 20 {
		lines = lines[len(lines)-20:]
	}
	return strings.Join(lines, "\n")
}

// A rule whose files an earlier rule takes is named as shadowed: `policy` warns with the
// file, line and field, and rule.no_files (and check's no-files line) names the earlier rule.
func TestShadowedRuleIsNamed(t *testing.T) {
	home := t.TempDir()
	dir := filepath.Join(home, "bot")
	os.MkdirAll(dir, 0o755)
	os.WriteFile(filepath.Join(dir, "rollout-1.jsonl"), []byte("{\"a\":1}\n"), 0o644)
	policyFile := filepath.Join(home, "policy.yaml")
	os.WriteFile(policyFile, []byte(fmt.Sprintf("version: 1\nstate_dir: %s\nrules:\n  - {name: all, format: jsonl, paths: [%s]}\n"+
		"  - name: rollouts\n    format: jsonl\n    paths:\n      - %s\n    match: [\"**/rollout-*.jsonl\"]\n",
		filepath.Join(home, "state"), dir, dir)), 0o644)
	event := `"msg":"rule.no_files","rule":"rollouts","path":"` + dir + `","patterns":["**/rollout-*.jsonl"],"shadowed_by":"all"}`

	out, errOut, code := sm(t, home, "policy", "-config", policyFile)
	warning := "sessionmedic: warning: " + policyFile + `:8: rules[1].paths[0]: ` + dir + `: shadowed by rule "all" (rules[0])`
	if code != 0 || !strings.Contains(out, "rollouts") || !strings.Contains(errOut, warning) || !strings.Contains(errOut, event) {
		t.Errorf("policy: exit %d; stderr lacks %q or %q:\n%s", code, warning, event, errOut)
	}
	out, errOut, code = sm(t, home, "check", "-config", policyFile)
	if code != 0 || !strings.Contains(strings.Join(strings.Fields(out), " "), "no-files rollouts "+dir+" shadowed by rule all,") || !strings.Contains(errOut, event) {
		t.Errorf("check: exit %d\n%s%s", code, out, errOut)
	}
}
