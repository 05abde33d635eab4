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

// TestHealActsAsTheTreesOwner: run as root, a heal in a user's tree writes with that user's
// file-system identity: where the user could not write (a root-owned directory inside
// their tree), the heal is refused and the file left as it is, and in a directory someone
// else may write (mode 0777), it is refused too, saying why.
func TestHealActsAsTheTreesOwner(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root")
	}
	base := t.TempDir()
	tree := filepath.Join(base, "tree")
	os.Mkdir(tree, 0o755)
	os.Chown(tree, 65534, 65534)
	const torn = "{\"a\":1}\n{\"a\""
	put := func(dir string, uid int, mode os.FileMode) string {
		os.MkdirAll(dir, 0o755)
		os.Chmod(dir, mode)
		f := filepath.Join(dir, "s.jsonl")
		os.WriteFile(f, []byte(torn), 0o644)
		os.Chown(f, 65534, 65534)
		return f
	}
	ok := put(filepath.Join(tree, "ok"), 65534, 0o755)
	os.Chown(filepath.Dir(ok), 65534, 65534)
	rootDir := put(filepath.Join(tree, "rootdir"), 0, 0o755) // the user cannot write here
	open := put(filepath.Join(tree, "open"), 65534, 0o777)
	os.Chown(filepath.Dir(open), 65534, 65534)
	os.Chmod(filepath.Dir(open), 0o777)
	policyFile := filepath.Join(base, "policy.yaml")
	os.WriteFile(policyFile, []byte(fmt.Sprintf("version: 1\nstate_dir: %s\nrules:\n  - {name: j, format: jsonl, paths: [%s]}\n", filepath.Join(base, "state"), tree)), 0o644)
	out, errOut, code := sm(t, t.TempDir(), "heal", "-json", "-config", policyFile)
	if code != 1 {
		t.Fatalf("heal: exit %d, want 1 (two refused)\n%s%s", code, out, errOut)
	}
	type report struct{ Path, Action, Reason string }
	byPath := map[string]report{}
	for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
		var r report
		if json.Unmarshal([]byte(line), &r) == nil && r.Path != "" {
			byPath[r.Path] = r
		}
	}
	if r := byPath[ok]; r.Action != "healed" {
		t.Errorf("%s: %+v, want healed", ok, r)
	}
	var st syscall.Stat_t
	if syscall.Stat(ok, &st); st.Uid != 65534 || st.Gid != 65534 {
		t.Errorf("healed file belongs to %d:%d", st.Uid, st.Gid)
	}
	if r := byPath[rootDir]; r.Action != "refused" || !strings.Contains(r.Reason, "permission denied") {
		t.Errorf("%s (a directory its user cannot write): %+v, want refused: permission denied", rootDir, r)
	}
	if r := byPath[open]; r.Action != "refused" || !strings.Contains(r.Reason, "parent directory has insecure permissions: "+filepath.Dir(open)+" is writable by others (mode 0777)") {
		t.Errorf("%s (a world-writable directory): %+v, want refused: insecure permissions", open, r)
	}
	for _, f := range []string{rootDir, open} {
		if b, _ := os.ReadFile(f); string(b) != torn {
			t.Errorf("%s was written: %q", f, b)
		}
	}
}
