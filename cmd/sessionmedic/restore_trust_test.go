package main

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

// TestRestoreRederivesFromThePolicy: a quarantine manifest is a record, never an
// instruction. Run as root over a tree another user owns, a restore of a file that is gone
// gives it its directory's owner and group and permission bits only, whatever owner and
// setuid mode the manifest records; a manifest whose path no rule guards is refused.
func TestRestoreRederivesFromThePolicy(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root to give the tree another owner")
	}
	home := t.TempDir()
	base := t.TempDir()
	sessions := filepath.Join(base, "sessions")
	os.Mkdir(sessions, 0o750)
	os.Chown(sessions, 65534, 65534)
	f := filepath.Join(sessions, "s.jsonl")
	os.WriteFile(f, []byte("{\"a\":1}\n{\"a\""), 0o640)
	os.Chown(f, 65534, 65534)
	state := filepath.Join(base, "state")
	policyFile := filepath.Join(base, "policy.yaml")
	os.WriteFile(policyFile, []byte(fmt.Sprintf("version: 1\nstate_dir: %s\nrules:\n  - {name: j, format: jsonl, paths: [%s]}\n", state, sessions)), 0o644)
	out, errOut, code := sm(t, home, "heal", "-config", policyFile)
	if code != 0 {
		t.Fatalf("heal: exit %d\n%s%s", code, out, errOut)
	}
	var st syscall.Stat_t
	if err := syscall.Stat(f, &st); err != nil || st.Uid != 65534 || st.Gid != 65534 || st.Mode&0o7777 != 0o640 {
		t.Fatalf("healed file: uid %d gid %d mode %o (%v); want 65534 65534 0640", st.Uid, st.Gid, st.Mode&0o7777, err)
	}
	out, _, _ = sm(t, home, "quarantine", "list", "-config", policyFile)
	id := strings.Fields(out)[0]
	manifests, _ := filepath.Glob(filepath.Join(state, "quarantine", "*", id, "manifest.json"))
	if len(manifests) != 1 {
		t.Fatalf("manifest of %s: %v", id, manifests)
	}
	// An old entry (or a forged one) recording root as the owner and a setuid mode.
	var m map[string]any
	b, _ := os.ReadFile(manifests[0])
	json.Unmarshal(b, &m)
	ident := m["identity"].(map[string]any)
	ident["mode"], ident["uid"], ident["gid"] = 0o4755, 0, 0
	b, _ = json.Marshal(m)
	os.WriteFile(manifests[0], b, 0o600)
	os.Remove(f)
	if out, errOut, code := sm(t, home, "quarantine", "restore", id, "-config", policyFile); code != 0 {
		t.Fatalf("restore: exit %d\n%s%s", code, out, errOut)
	}
	if err := syscall.Stat(f, &st); err != nil || st.Uid != 65534 || st.Gid != 65534 || st.Mode&0o7777 != 0o755 {
		t.Fatalf("restored file: uid %d gid %d mode %o (%v); want the directory's owner 65534:65534 and mode 0755 without setuid", st.Uid, st.Gid, st.Mode&0o7777, err)
	}

	// A manifest pointing outside every rule: refused, nothing written there.
	elsewhere := filepath.Join(base, "root-only", "x.jsonl")
	os.Mkdir(filepath.Dir(elsewhere), 0o700)
	m["path"] = elsewhere
	b, _ = json.Marshal(m)
	os.WriteFile(manifests[0], b, 0o600)
	out, errOut, code = sm(t, home, "quarantine", "restore", id, "-config", policyFile)
	if code != 2 || !strings.Contains(errOut, elsewhere+" is guarded by no rule of the current policy") {
		t.Fatalf("restore outside the rules: exit %d\n%s%s", code, out, errOut)
	}
	if _, err := os.Lstat(elsewhere); !os.IsNotExist(err) {
		t.Fatalf("the restore wrote outside every rule: %v", err)
	}
}
