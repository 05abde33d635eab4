package main

import (
	"encoding/json"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

// The Claude Code case of these tests: samples/claude-code/live_pid_file (a torn transcript
// and the registry entry of the process that has its session open), the entry naming a pid
// namespace that is no one's here, as a Claude process of another container sharing the
// home would.
const (
	busySID    = "7c2e1b4a-9d3f-4e8a-b6c1-2f5a8d9e0b13"
	busyDomain = "linux:00000000000000000000000000000000:pid:[1]"
)

// claudeForeignTree lays the case out under home/.claude and writes a policy for it; it
// returns the transcript, the registry entry and the policy file.
func claudeForeignTree(t *testing.T, home, listen string) (transcript, entry, policyFile string) {
	t.Helper()
	copyDir(t, filepath.Join(samples, "claude-code/live_pid_file/home"), home)
	cfg := filepath.Join(home, ".claude")
	transcript = filepath.Join(cfg, "projects/-tmp-demo-proj", busySID+".jsonl")
	entry = filepath.Join(cfg, "sessions/19481.json")
	b := regexp.MustCompile(`"pidDomain":"[^"]*"`).ReplaceAll(read(t, entry), []byte(`"pidDomain":`+strconv.Quote(busyDomain)))
	if err := os.WriteFile(entry, b, 0o600); err != nil {
		t.Fatal(err)
	}
	http := ""
	if listen != "" {
		http = fmt.Sprintf("http: {listen: %q}\n", listen)
	}
	policyFile = filepath.Join(home, "policy.yaml")
	os.WriteFile(policyFile, []byte(fmt.Sprintf("version: 1\nstate_dir: %s\n%srules:\n"+
		"  - {name: cc, preset: claude-code, paths: [%s], settle: 100ms, max_wait: 1s, lock: {protocol: claude-code, wait: 10ms}}\n",
		filepath.Join(home, "state"), http, cfg)), 0o644)
	return transcript, entry, policyFile
}

// busyHolder is what every busy report of the case must say: the protocol, the registry
// entry, and why its process counts as running.
func busyHolder(entry string) []string {
	return []string{"busy: in use by the app (lock protocol claude-code): " + entry + ": it names session " + busySID,
		"pidDomain " + busyDomain + " is not ours"}
}

// TestHealSaysWhoKeepsAFileBusy: `heal` on a damaged transcript whose session a Claude
// process of another pid namespace names reports it busy with the protocol, the registry
// entry and the pid namespace, as text and as JSON, and leaves it as it is.
func TestHealSaysWhoKeepsAFileBusy(t *testing.T) {
	home := t.TempDir()
	transcript, entry, policyFile := claudeForeignTree(t, home, "")
	orig := read(t, transcript)
	out, errOut, code := sm(t, home, "heal", "-config", policyFile)
	if code != exitDamage {
		t.Fatalf("heal: exit %d, want 1\n%s\n%s", code, out, errOut)
	}
	line := ""
	for _, l := range strings.Split(out, "\n") {
		if strings.HasPrefix(l, "busy ") && strings.Contains(l, transcript) {
			line = l
		}
	}
	if line == "" || !strings.Contains(line, "truncated at ") || !strings.Contains(line, "; not healed: ") {
		t.Fatalf("no busy line naming the damage for %s:\n%s", transcript, out)
	}
	for _, want := range busyHolder(entry) {
		if !strings.Contains(line, want) {
			t.Errorf("busy line does not say %q:\n%s", want, line)
		}
	}
	out, _, code = sm(t, home, "heal", "-json", "-config", policyFile)
	var r map[string]any
	if code != exitDamage || json.Unmarshal([]byte(strings.TrimSpace(out)), &r) != nil {
		t.Fatalf("heal -json: exit %d\n%s", code, out)
	}
	if r["verdict"] != "busy" || r["kind"] != "truncated" {
		t.Errorf("heal -json: %v", r)
	}
	for _, want := range busyHolder(entry) {
		if reason, _ := r["reason"].(string); !strings.Contains(reason, want) {
			t.Errorf("-json reason %q does not say %q", reason, want)
		}
	}
	if string(read(t, transcript)) != string(orig) {
		t.Error("the busy transcript was written")
	}
}

// TestDryRunSaysBusyAsHealDoes: `heal -dry-run` takes heal's liveness decision without
// writing: where heal says busy, so does the dry run, with the same reason and exit code,
// where it used to say would-heal.
func TestDryRunSaysBusyAsHealDoes(t *testing.T) {
	home := t.TempDir()
	transcript, entry, policyFile := claudeForeignTree(t, home, "")
	cfg := filepath.Join(home, ".claude")
	before := treeState(t, cfg)
	healOne := func(args ...string) (map[string]any, int) {
		t.Helper()
		out, errOut, code := sm(t, home, append([]string{"heal", "-json", "-config", policyFile}, args...)...)
		var r map[string]any
		if json.Unmarshal([]byte(strings.TrimSpace(out)), &r) != nil {
			t.Fatalf("heal %v: exit %d\n%s\n%s", args, code, out, errOut)
		}
		return r, code
	}
	dry, dryCode := healOne("-dry-run")
	if after := treeState(t, cfg); after != before {
		t.Error("the dry run wrote in the Claude tree")
	}
	real, realCode := healOne()
	if dry["verdict"] != "busy" || dry["action"] != "none" || dry["reason"] != real["reason"] || dryCode != realCode || dryCode != exitDamage {
		t.Errorf("dry run: %v (exit %d)\nheal: %v (exit %d)", dry, dryCode, real, realCode)
	}
	for _, want := range busyHolder(entry) {
		if reason, _ := dry["reason"].(string); !strings.Contains(reason, want) {
			t.Errorf("dry run reason %q does not say %q", reason, want)
		}
	}
	out, _, _ := sm(t, home, "heal", "-dry-run", "-config", policyFile)
	if !strings.Contains(out, "busy  cc  "+transcript+"  truncated at ") || !strings.Contains(out, "; not healed: busy: in use by the app (lock protocol claude-code)") {
		t.Errorf("dry run, as text:\n%s", out)
	}

	// Once the entry is gone, the dry run would heal.
	os.Remove(entry)
	if dry, code := healOne("-dry-run"); dry["action"] != "would-heal" || code != exitDamage {
		t.Errorf("dry run without the entry: %v (exit %d)", dry, code)
	}
}

// treeState is every path below dir with its size and mtime.
func treeState(t *testing.T, dir string) string {
	t.Helper()
	var b strings.Builder
	filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		fi, _ := d.Info()
		fmt.Fprintf(&b, "%s %d %v\n", p, fi.Size(), fi.ModTime().UnixNano())
		return nil
	})
	return b.String()
}
