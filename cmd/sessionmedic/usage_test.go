package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestPolicyReportsEveryError: `policy` names each problem of a file, one a line.
func TestPolicyReportsEveryError(t *testing.T) {
	home := t.TempDir()
	bad := filepath.Join(t.TempDir(), "bad.yaml")
	os.WriteFile(bad, []byte("version: 1\nlog: {format: yaml}\nrules:\n  - name: x\n    paths: [/tmp]\n    format: json\n    settle: 2x\n    mode: sometimes\n"), 0o644)
	out, errOut, code := sm(t, home, "policy", "-config", bad)
	if code != 2 || out != "" {
		t.Fatalf("exit %d, stdout %q", code, out)
	}
	for _, want := range []string{bad + ":2: log.format: unknown log format", bad + ":7: rules[0].settle: \"2x\" is not a duration", bad + ":8: rules[0].mode: unknown mode"} {
		if !strings.Contains(errOut, "sessionmedic: "+want) {
			t.Errorf("no %q in\n%s", want, errOut)
		}
	}
	if n := strings.Count(errOut, "\n"); n != 3 {
		t.Errorf("%d lines, want one per error:\n%s", n, errOut)
	}
}

// TestPolicyEchoesSizes: `policy` prints its header once and sizes in the unit written.
func TestPolicyEchoesSizes(t *testing.T) {
	home := t.TempDir()
	f := filepath.Join(t.TempDir(), "p.yaml")
	os.WriteFile(f, []byte("version: 1\nquarantine: {max_bytes: 1 GB}\nrules:\n  - {name: x, format: json, paths: [/tmp], limits: {max_file_size: 200 MB}}\n"), 0o644)
	out, errOut, code := sm(t, home, "policy", "-config", f)
	if code != 0 {
		t.Fatalf("exit %d\n%s", code, errOut)
	}
	if n := strings.Count(out, "effective policy from"); n != 1 || !strings.HasPrefix(out, "# effective policy from "+f+"\n") {
		t.Errorf("header printed %d times:\n%s", n, out)
	}
	for _, want := range []string{"max_bytes: 1GB\n", "max_file_size: 200MB}"} {
		if !strings.Contains(out, want) {
			t.Errorf("no %q in\n%s", want, out)
		}
	}
}

func TestUnknownPresetListsAliases(t *testing.T) {
	_, errOut, code := sm(t, t.TempDir(), "check", "-preset", "nosuch", ".")
	if code != 2 || !strings.Contains(errOut, "qwenpaw") || !strings.Contains(errOut, "gemini-cli") {
		t.Fatalf("exit %d\n%s", code, errOut)
	}
}
