package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// A session file larger than its rule's max_file_size is not judged: check and heal say so
// on its skipped line, in the summary and on stderr, and exit 2 over the damage of the
// others (it was a skipped line among healthy ones, exit 0: a cron job took the tree for
// guarded); -json marks it not_judged.
func TestCheckSaysWhatItDoesNotJudge(t *testing.T) {
	home := t.TempDir()
	dir := filepath.Join(home, "s")
	os.MkdirAll(dir, 0o755)
	big := filepath.Join(dir, "big.jsonl")
	os.WriteFile(big, []byte(`{"a":"`+strings.Repeat("x", 3000)+`"}`+"\n"), 0o644)
	os.WriteFile(filepath.Join(dir, "torn.jsonl"), []byte("{\"a\":1}\n{\"a\""), 0o644)
	policy := filepath.Join(home, "policy.yaml")
	os.WriteFile(policy, []byte("version: 1\nstate_dir: "+filepath.Join(home, "state")+
		"\nrules:\n  - {name: j, format: jsonl, paths: ["+dir+"], limits: {max_file_size: 1000B}}\n"), 0o644)
	for _, cmd := range []string{"check", "heal"} {
		out, errOut, code := sm(t, home, cmd, "-config", policy)
		if code != 2 || !strings.Contains(out, "larger than max_file_size (1000 bytes)") || !strings.Contains(out, "1 skipped (1 not judged)") ||
			!strings.Contains(errOut, "1 not judged") || !strings.Contains(errOut, "max_file_size") {
			t.Fatalf("%s: exit %d\n%s%s", cmd, code, out, errOut)
		}
	}
	out, _, code := sm(t, home, "check", "-config", policy, "-json")
	found := false
	for _, l := range strings.Split(strings.TrimSpace(out), "\n") {
		var r struct {
			Path      string `json:"path"`
			NotJudged bool   `json:"not_judged"`
		}
		if json.Unmarshal([]byte(l), &r) == nil && r.Path == big {
			found = r.NotJudged
		}
	}
	if code != 2 || !found {
		t.Fatalf("check -json: exit %d, %s not marked not_judged:\n%s", code, big, out)
	}
}
