package main

import (
	"bytes"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// smWith runs the built binary as sm does, with env added.
func smWith(t *testing.T, home string, env []string, args ...string) (stderr string, code int) {
	t.Helper()
	cmd := exec.Command(binary, args...)
	cmd.Env = append([]string{"HOME=" + home, "XDG_STATE_HOME=" + filepath.Join(home, "state"), "PATH=" + os.Getenv("PATH")}, env...)
	var e bytes.Buffer
	cmd.Stderr = &e
	err := cmd.Run()
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatal(err)
	}
	return e.String(), code
}

// jsonLines parses every line of out as a JSON object, or fails.
func jsonLines(t *testing.T, what, out string) []map[string]any {
	t.Helper()
	var ms []map[string]any
	for _, l := range strings.Split(strings.TrimSuffix(out, "\n"), "\n") {
		var m map[string]any
		if err := json.Unmarshal([]byte(l), &m); err != nil {
			t.Fatalf("%s: stderr line %q is not JSON:\n%s", what, l, out)
		}
		ms = append(ms, m)
	}
	return ms
}

// TestStartupErrorsAreJSONUnderJournald: under journald (JOURNAL_STREAM set, as systemd
// sets it for the shipped units, which pass no -log-format), the errors `run` says before
// its policy is loaded are JSON lines of its log, as the daemon's would be: one
// policy.invalid per policy error with its file, line and field as keys, then
// sessionmedic.fatal; a policy that cannot be read, and a bad flag, are one
// sessionmedic.fatal line. A policy whose log.format is json says its errors in JSON
// anywhere, one whose log.format is text (or -log-format text) in text; without journald and
// without either, they stay plain lines.
func TestStartupErrorsAreJSONUnderJournald(t *testing.T) {
	home := t.TempDir()
	journal := []string{"JOURNAL_STREAM=8:123456"}
	bad := filepath.Join(home, "bad.yaml")
	os.WriteFile(bad, []byte("version: 1\nrules:\n  - name: a\n    format: jsonl\n    paths: [/tmp]\n    settle: 2x\n    bogus: 1\n"), 0o644)

	out, code := smWith(t, home, journal, "run", "-config", bad)
	lines := jsonLines(t, "bad policy under journald", out)
	if code != exitUsage || len(lines) != 3 {
		t.Fatalf("bad policy under journald: exit %d, %d lines, want 2 and 3:\n%s", code, len(lines), out)
	}
	for i, want := range []struct {
		field, err string
		line       float64
	}{{"rules[0].settle", `"2x" is not a duration`, 6}, {"rules[0].bogus", "unknown key", 7}} {
		m := lines[i]
		if m["msg"] != "policy.invalid" || m["level"] != "ERROR" || m["path"] != bad || m["line"] != want.line || m["field"] != want.field || m["err"] != want.err {
			t.Errorf("line %d: %v, want policy.invalid at %s:%v %s: %s", i+1, m, bad, want.line, want.field, want.err)
		}
	}
	if m := lines[2]; m["msg"] != "sessionmedic.fatal" || !strings.Contains(m["err"].(string), bad+":6: rules[0].settle") {
		t.Errorf("last line: %v, want sessionmedic.fatal naming the errors", m)
	}

	// The same without journald: the plain lines of every command.
	out, code = smWith(t, home, nil, "run", "-config", bad)
	if code != exitUsage || out != "sessionmedic: "+bad+`:6: rules[0].settle: "2x" is not a duration`+"\nsessionmedic: "+bad+":7: rules[0].bogus: unknown key\n" {
		t.Errorf("bad policy, no journald: exit %d\n%s", code, out)
	}
	// -log-format text under journald: text.
	if out, _ = smWith(t, home, journal, "run", "-log-format", "text", "-config", bad); !strings.HasPrefix(out, "sessionmedic: "+bad+":6:") {
		t.Errorf("-log-format text under journald:\n%s", out)
	}

	// The policy's own log.format says, journald or not.
	asJSON := filepath.Join(home, "json.yaml")
	os.WriteFile(asJSON, []byte("version: 1\nlog: {format: json}\nstate_dir: [oops]\nrules:\n  - {name: a, format: jsonl, paths: [/tmp]}\n"), 0o644)
	out, code = smWith(t, home, nil, "run", "-config", asJSON)
	if lines := jsonLines(t, "log.format json", out); code != exitUsage || len(lines) != 2 || lines[0]["field"] != "state_dir" || lines[0]["line"] != float64(3) {
		t.Errorf("log.format json, no journald: exit %d\n%s", code, out)
	}
	asText := filepath.Join(home, "text.yaml")
	os.WriteFile(asText, []byte("version: 1\nlog: {format: text}\nstate_dir: [oops]\nrules:\n  - {name: a, format: jsonl, paths: [/tmp]}\n"), 0o644)
	if out, _ = smWith(t, home, journal, "run", "-config", asText); !strings.HasPrefix(out, "sessionmedic: "+asText+":3: state_dir") {
		t.Errorf("log.format text under journald:\n%s", out)
	}

	// A policy that cannot be read, a bad flag: one sessionmedic.fatal line.
	for _, args := range [][]string{{"run", "-config", home}, {"run", "-log-format", "debug"}, {"run", "extra"}} {
		out, code = smWith(t, home, journal, args...)
		if lines := jsonLines(t, strings.Join(args, " "), out); code != exitUsage || len(lines) != 1 || lines[0]["msg"] != "sessionmedic.fatal" || lines[0]["err"] == "" {
			t.Errorf("%v under journald: exit %d\n%s", args, code, out)
		}
	}
}
