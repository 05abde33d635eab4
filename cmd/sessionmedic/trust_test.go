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

// aclBlob is a system.posix_acl_access value: owner rw-, user uid rw-, group r--, mask rw-,
// other ---.
func aclBlob(uid uint32) []byte {
	var b []byte
	le := func(v uint32, n int) {
		for i := range n {
			b = append(b, byte(v>>(8*i)))
		}
	}
	le(2, 4) // version
	for _, e := range []struct {
		tag, perm uint32
		id        uint32
	}{{0x01, 6, 0xffffffff}, {0x02, 6, uid}, {0x04, 4, 0xffffffff}, {0x10, 6, 0xffffffff}, {0x20, 0, 0xffffffff}} {
		le(e.tag, 2)
		le(e.perm, 2)
		le(e.id, 4)
	}
	return b
}

// TestHealKeepsACLsAndXattrs: a healed file keeps its POSIX ACL and its user.* extended
// attributes, and so its mode (an ACL's mask is its group bits).
func TestHealKeepsACLsAndXattrs(t *testing.T) {
	base := t.TempDir()
	sessions := filepath.Join(base, "sessions")
	os.Mkdir(sessions, 0o755)
	f := filepath.Join(sessions, "s.jsonl")
	os.WriteFile(f, []byte("{\"a\":1}\n{\"a\""), 0o600)
	if err := syscall.Setxattr(f, "user.note", []byte("keep me"), 0); err != nil {
		t.Skipf("no user xattrs here: %v", err)
	}
	acl := aclBlob(65534)
	if err := syscall.Setxattr(f, "system.posix_acl_access", acl, 0); err != nil {
		t.Skipf("no POSIX ACLs here: %v", err)
	}
	var before syscall.Stat_t
	syscall.Stat(f, &before)
	policyFile := filepath.Join(base, "policy.yaml")
	os.WriteFile(policyFile, []byte(fmt.Sprintf("version: 1\nstate_dir: %s\nrules:\n  - {name: j, format: jsonl, paths: [%s]}\n", filepath.Join(base, "state"), sessions)), 0o644)
	if out, errOut, code := sm(t, t.TempDir(), "heal", "-config", policyFile); code != 0 || !strings.Contains(out, "healed") {
		t.Fatalf("heal: exit %d\n%s%s", code, out, errOut)
	}
	var after syscall.Stat_t
	syscall.Stat(f, &after)
	if after.Ino == before.Ino {
		t.Fatal("not replaced: the test needs a heal that writes a new file")
	}
	get := func(name string) string {
		buf := make([]byte, 1024)
		n, err := syscall.Getxattr(f, name, buf)
		if err != nil {
			return "error: " + err.Error()
		}
		return string(buf[:n])
	}
	if got := get("user.note"); got != "keep me" {
		t.Errorf("user.note after the heal: %q", got)
	}
	if got := get("system.posix_acl_access"); got != string(acl) {
		t.Errorf("ACL after the heal: %x, want %x", got, acl)
	}
	if after.Mode&0o7777 != before.Mode&0o7777 {
		t.Errorf("mode %o after the heal, %o before", after.Mode&0o7777, before.Mode&0o7777)
	}
}
