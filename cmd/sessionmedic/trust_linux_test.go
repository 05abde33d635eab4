package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

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
