package policy

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestRootRefusesAPolicyOthersCanChange: run as root, a policy file that anyone but root owns
// or can write, or that lies below (or is reached through a symlink in) such a directory,
// is refused, naming the path; a root-owned one is read, symlinked (a ConfigMap's ..data) or
// not.
func TestRootRefusesAPolicyOthersCanChange(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("the check applies to a process running as root")
	}
	const body = "version: 1\nrules:\n  - {name: j, format: jsonl, paths: [/nonexistent]}\n"
	write := func(t *testing.T, p string, mode os.FileMode) {
		t.Helper()
		if err := os.WriteFile(p, []byte(body), mode); err != nil {
			t.Fatal(err)
		}
		os.Chmod(p, mode)
	}
	for _, tc := range []struct {
		name  string
		setup func(t *testing.T, dir string) (policy, offender string)
		why   string // "" = accepted
	}{
		{"root 0644", func(t *testing.T, d string) (string, string) {
			p := filepath.Join(d, "p.yaml")
			write(t, p, 0o644)
			return p, ""
		}, ""},
		{"configmap symlinks", func(t *testing.T, d string) (string, string) {
			os.Mkdir(filepath.Join(d, "..2026_01_01"), 0o755)
			write(t, filepath.Join(d, "..2026_01_01", "p.yaml"), 0o644)
			os.Symlink("..2026_01_01", filepath.Join(d, "..data"))
			os.Symlink("..data/p.yaml", filepath.Join(d, "p.yaml"))
			return filepath.Join(d, "p.yaml"), ""
		}, ""},
		{"owned by another uid", func(t *testing.T, d string) (string, string) {
			p := filepath.Join(d, "p.yaml")
			write(t, p, 0o644)
			os.Chown(p, 65534, 65534)
			return p, p
		}, "owned by uid 65534"},
		{"group-writable", func(t *testing.T, d string) (string, string) {
			p := filepath.Join(d, "p.yaml")
			write(t, p, 0o664)
			return p, p
		}, "writable by group or others (mode 0664)"},
		{"directory of another uid", func(t *testing.T, d string) (string, string) {
			sub := filepath.Join(d, "u")
			os.Mkdir(sub, 0o755)
			p := filepath.Join(sub, "p.yaml")
			write(t, p, 0o644)
			os.Chown(sub, 65534, 65534)
			return p, sub
		}, "owned by uid 65534"},
		{"symlink into a directory of another uid", func(t *testing.T, d string) (string, string) {
			sub := filepath.Join(d, "u")
			os.Mkdir(sub, 0o755)
			write(t, filepath.Join(sub, "p.yaml"), 0o644)
			os.Chown(sub, 65534, 65534)
			safe := filepath.Join(d, "etc")
			os.Mkdir(safe, 0o755)
			p := filepath.Join(safe, "p.yaml")
			os.Symlink(filepath.Join(sub, "p.yaml"), p)
			return p, sub
		}, "owned by uid 65534"},
		{"world-writable directory", func(t *testing.T, d string) (string, string) {
			sub := filepath.Join(d, "w")
			os.Mkdir(sub, 0o777)
			os.Chmod(sub, 0o777)
			p := filepath.Join(sub, "p.yaml")
			write(t, p, 0o644)
			return p, sub
		}, "writable by group or others (mode 0777)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p, offender := tc.setup(t, t.TempDir())
			_, err := Load(p)
			if tc.why == "" {
				if err != nil {
					t.Fatalf("refused a policy only root can change: %v", err)
				}
				return
			}
			if err == nil {
				t.Fatalf("accepted %s", p)
			}
			want := "read policy: " + offender + ": not used: " + tc.why
			if !strings.HasPrefix(err.Error(), want) {
				t.Fatalf("error %q, want it to start with %q", err, want)
			}
		})
	}
}
