package policy

import (
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"syscall"
)

// untrustedPolicy says why a policy file that root is about to use could have been written
// by someone else, or nil (DESIGN §4 "Trust": root and the policy's owner are trusted, no
// one else; sshd's StrictModes). Only a process running as root checks: the policy tells it
// which files to read and write, so a policy anyone but root could change would let them
// make root read or write any file. The file (as opened: fi) must be owned by root and
// writable by no one else; every directory above it, on the path as written and on the path
// its symlinks lead to, must be owned by root and writable by no one else, unless sticky
// (/tmp: no one else can rename what is in it).
func untrustedPolicy(path string, fi fs.FileInfo, euid int) error {
	if euid != 0 {
		return nil
	}
	if err := rootOnly(path, fi); err != nil {
		return err
	}
	abs, err := filepath.Abs(path)
	if err != nil {
		return err
	}
	dirs := []string{filepath.Dir(abs)}
	// Each link of a symlinked policy (a ConfigMap's policy.yaml -> ..data/policy.yaml) is
	// replaceable by whoever can write its directory.
	for p, n := abs, 0; n < 40; n++ {
		target, err := os.Readlink(p)
		if err != nil {
			break
		}
		if !filepath.IsAbs(target) {
			target = filepath.Join(filepath.Dir(p), target)
		}
		p = target
		dirs = append(dirs, filepath.Dir(p))
	}
	if real, err := filepath.EvalSymlinks(abs); err == nil {
		dirs = append(dirs, filepath.Dir(real))
	}
	for _, d := range dirs {
		for p := d; ; p = filepath.Dir(p) {
			if st, err := os.Stat(p); err == nil {
				if err := rootOnly(p, st); err != nil {
					return err
				}
			}
			if p == filepath.Dir(p) {
				break
			}
		}
	}
	return nil
}

// rootOnly: p (described by fi) is owned by root and writable by no one else, or is a
// sticky directory owned by root.
func rootOnly(p string, fi fs.FileInfo) error {
	st, ok := fi.Sys().(*syscall.Stat_t)
	if ok && st.Uid != 0 {
		return fmt.Errorf("read policy: %s: not used: owned by uid %d; run as root, sessionmedic uses only a policy that no one but root can change (chown root and chmod go-w it and the directories above it)", p, st.Uid)
	}
	if fi.Mode().Perm()&0o022 != 0 && !(fi.IsDir() && fi.Mode()&fs.ModeSticky != 0) {
		return fmt.Errorf("read policy: %s: not used: writable by group or others (mode %04o); run as root, sessionmedic uses only a policy that no one but root can change (chown root and chmod go-w it and the directories above it)", p, fi.Mode().Perm())
	}
	return nil
}
