package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// panicRun runs the crashpoints build with SESSIONMEDIC_PANIC_AT=at: a defect of
// sessionmedic met on a file, raised where that step is reached.
func panicRun(t *testing.T, home, at string, args ...string) (stdout, stderr string, code int) {
	t.Helper()
	cmd := exec.Command(crashBinary(t), args...)
	cmd.Env = []string{"HOME=" + home, "XDG_STATE_HOME=" + filepath.Join(home, "state"), "PATH=" + os.Getenv("PATH"), "SESSIONMEDIC_PANIC_AT=" + at}
	var o, e bytes.Buffer
	cmd.Stdout, cmd.Stderr = &o, &e
	err := cmd.Run()
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatal(err)
	}
	return o.String(), e.String(), code
}

// TestAPanicOnOneFileIsContained: a panic while one file is judged or its heal planned (a
// defect met on that file) is that file's report — not judged, left as it is, said on
// stderr and in the exit code (3) — and the other files are judged and healed as ever.
func TestAPanicOnOneFileIsContained(t *testing.T) {
	home, root := t.TempDir(), t.TempDir()
	policyFile := filepath.Join(home, "policy.yaml")
	os.WriteFile(policyFile, []byte(fmt.Sprintf("version: 1\nstate_dir: %s\nrules:\n  - {name: j, format: jsonl, paths: [%s]}\n",
		filepath.Join(home, "state"), root)), 0o644)
	torn := []byte("{\"a\":1}\n{\"a\"")
	for _, n := range []string{"a.jsonl", "b.jsonl"} {
		os.WriteFile(filepath.Join(root, n), torn, 0o644)
	}

	for _, c := range []struct{ cmd, at string }{{"check", "judged"}, {"heal", "judged"}, {"heal", "planned"}} {
		out, errOut, code := panicRun(t, home, c.at, c.cmd, "-json", "-config", policyFile)
		if code != exitInternal {
			t.Fatalf("%s, a panic at %s: exit %d, want %d\n%s%s", c.cmd, c.at, code, exitInternal, out, errOut)
		}
		if !strings.Contains(errOut, "1 not judged (an internal error") {
			t.Errorf("%s, a panic at %s: stderr does not say it:\n%s", c.cmd, c.at, errOut)
		}
		var contained, other map[string]any
		for _, l := range strings.Split(strings.TrimSpace(out), "\n") {
			var m map[string]any
			if err := json.Unmarshal([]byte(l), &m); err != nil {
				t.Fatalf("%q: %v", l, err)
			}
			if m["internal_error"] != nil {
				contained = m
			} else {
				other = m
			}
		}
		if contained == nil || other == nil {
			t.Fatalf("%s, a panic at %s: want one contained report and one other:\n%s", c.cmd, c.at, out)
		}
		if contained["verdict"] != "skipped" || !strings.Contains(contained["internal_error"].(string), "SESSIONMEDIC_PANIC_AT "+c.at) ||
			!strings.Contains(contained["detail"].(string), "not judged") {
			t.Errorf("%s, a panic at %s: the contained report: %v", c.cmd, c.at, contained)
		}
		p := contained["path"].(string)
		if b, _ := os.ReadFile(p); !bytes.Equal(b, torn) {
			t.Errorf("%s, a panic at %s: %s was changed: %q", c.cmd, c.at, p, b)
		}
		want := "damaged"
		if c.cmd == "heal" {
			want = "healed"
		}
		if other["verdict"] != "damaged" || (c.cmd == "heal" && other["action"] != want) {
			t.Errorf("%s, a panic at %s: the other file: %v", c.cmd, c.at, other)
		}
		if c.cmd == "heal" {
			os.WriteFile(other["path"].(string), torn, 0o644) // damaged again for the next run
		}
	}
	if n := quarantineEntries(t, filepath.Join(home, "state")); n != 2 {
		t.Errorf("%d quarantine entries, want 2 (the other file's two heals; nothing of a contained one)", n)
	}
}

// TestDaemonContainsAPanicOnOneFile: the daemon whose judge of one file panics says it
// (file.internal_error, at ERROR, with the panic, where it was raised and what to do;
// sessionmedic_internal_errors_total), goes on guarding the others, and judges that file
// again when it changes.
func TestDaemonContainsAPanicOnOneFile(t *testing.T) {
	home, root, addr, policyFile := httpJSONLPolicy(t, "")
	torn := []byte("{\"a\":1}\n{\"a\"")
	first := filepath.Join(root, "first.jsonl")
	os.WriteFile(first, torn, 0o644)

	cmd := exec.Command(crashBinary(t), "run", "-log-format", "json", "-config", policyFile)
	cmd.Env = []string{"HOME=" + home, "PATH=" + os.Getenv("PATH"), "SESSIONMEDIC_PANIC_AT=judged:1"}
	d := startDaemonCmd(t, cmd)
	eventually(t, 20*time.Second, "file.internal_error", func() bool { return len(d.events("file.internal_error")) == 1 })
	ev := d.events("file.internal_error")[0]
	if ev["level"] != "ERROR" || ev["path"] != first || ev["rule"] != "j" ||
		!strings.Contains(fmt.Sprint(ev["err"]), "SESSIONMEDIC_PANIC_AT judged") || !strings.Contains(fmt.Sprint(ev["at"]), "heal.(*Engine).Heal") ||
		!strings.Contains(fmt.Sprint(ev["advice"]), "defect") {
		t.Errorf("file.internal_error: %v", ev)
	}
	eventually(t, 10*time.Second, "sessionmedic_internal_errors_total at 1", func() bool {
		l := metricLines(addr, `sessionmedic_internal_errors_total{rule="j"} `)
		return len(l) == 1 && strings.HasSuffix(l[0], " 1")
	})
	if b, _ := os.ReadFile(first); !bytes.Equal(b, torn) {
		t.Errorf("the file whose judge panicked was changed: %q", b)
	}

	second := filepath.Join(root, "second.jsonl")
	os.WriteFile(second, torn, 0o644)
	eventually(t, 20*time.Second, "the second file healed", func() bool {
		b, _ := os.ReadFile(second)
		return string(b) == "{\"a\":1}\n"
	})
	os.WriteFile(first, []byte("{\"a\":1}\n{\"c\":2}\n{\"b\""), 0o644) // the app writes it again
	eventually(t, 20*time.Second, "the first file judged again and healed", func() bool {
		b, _ := os.ReadFile(first)
		return string(b) == "{\"a\":1}\n{\"c\":2}\n"
	})
	select {
	case err := <-d.done:
		t.Fatalf("the daemon ended: %v", err)
	default:
	}
}
