package fsio

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"syscall"
	"testing"
)

// TestConfinedRootRefusesSymlinksBelowIt: below a confined rule root no symlink is followed,
// by any open of the package: a directory swapped for a link to another tree is refused by
// ReadStable, OpenRegular, OpenStable, StatIdentity, ReadDirIdentities and OpenParent; a root written as a
// symlink keeps working, and a root retargeted after it was confined is not followed.
func TestConfinedRootRefusesSymlinksBelowIt(t *testing.T) { checkConfined(t) }

func checkConfined(t *testing.T) {
	base := t.TempDir()
	victim := filepath.Join(base, "victim")
	os.MkdirAll(filepath.Join(victim, "projects", "p"), 0o755)
	os.WriteFile(filepath.Join(victim, "projects", "p", "s.jsonl"), []byte("{\"secret\":1}\n"), 0o644)
	real := filepath.Join(base, "real")
	os.MkdirAll(filepath.Join(real, "projects", "p"), 0o755)
	os.WriteFile(filepath.Join(real, "projects", "p", "s.jsonl"), []byte("{\"mine\":1}\n"), 0o644)
	root := filepath.Join(base, "root") // the operator's symlinked root
	os.Symlink(real, root)
	Confine(root)
	f := filepath.Join(root, "projects", "p", "s.jsonl")

	// Through the symlinked root: read as usual.
	if b, _, err := ReadStable(f, 0); err != nil || string(b) != "{\"mine\":1}\n" {
		t.Fatalf("through the symlinked root: %q %v", b, err)
	}
	if d, err := (FS{}).OpenParent(root, f); err != nil {
		t.Fatalf("OpenParent through the symlinked root: %v", err)
	} else {
		d.Close()
	}

	// The tree's user swaps projects/p for a link into the victim's tree.
	os.Rename(filepath.Join(real, "projects", "p"), filepath.Join(real, "projects", "p.old"))
	os.Symlink(filepath.Join(victim, "projects", "p"), filepath.Join(real, "projects", "p"))
	if b, _, err := ReadStable(f, 0); !errors.Is(err, ErrMoved) {
		t.Errorf("ReadStable through a swapped directory: %q %v; want ErrMoved", b, err)
	}
	if of, _, err := OpenRegular(f); !errors.Is(err, ErrMoved) {
		if of != nil {
			of.Close()
		}
		t.Errorf("OpenRegular through a swapped directory: %v; want ErrMoved", err)
	}
	if of, err := OpenStable(f, Identity{}); !errors.Is(err, ErrMoved) {
		if of != nil {
			of.Close()
		}
		t.Errorf("OpenStable through a swapped directory: %v; want ErrMoved", err)
	}
	if _, err := StatIdentity(f); !errors.Is(err, ErrMoved) {
		t.Errorf("StatIdentity through a swapped directory: %v; want ErrMoved", err)
	}
	if ents, _, err := ReadDirIdentities(filepath.Dir(f), func(fs.DirEntry) bool { return true }); err == nil {
		t.Errorf("ReadDirIdentities through a swapped directory: %d entries, no error", len(ents))
	}
	if d, err := (FS{}).OpenParent(root, f); !errors.Is(err, ErrMoved) {
		if d != nil {
			d.Close()
		}
		t.Errorf("OpenParent through a swapped directory: %v; want ErrMoved", err)
	}
	os.Remove(filepath.Join(real, "projects", "p"))
	os.Rename(filepath.Join(real, "projects", "p.old"), filepath.Join(real, "projects", "p"))

	// The root itself retargeted after the policy was loaded: the root resolved then is used.
	os.Remove(root)
	os.Symlink(victim, root)
	if b, _, err := ReadStable(f, 0); err != nil || string(b) != "{\"mine\":1}\n" {
		t.Errorf("after the root was retargeted: %q %v; want the root resolved at load", b, err)
	}
	if _, err := StatIdentity(f); err != nil {
		t.Errorf("StatIdentity after the root was retargeted: %v", err)
	}
	// A new load resolves it again.
	Confine(root)
	if b, _, err := ReadStable(f, 0); err != nil || string(b) != "{\"secret\":1}\n" {
		t.Errorf("after a reload: %q %v", b, err)
	}
}

// TestConfinedRootResolvedWhenItAppears: a root missing when the policy is loaded is
// resolved at its first use.
func TestConfinedRootResolvedWhenItAppears(t *testing.T) {
	base := t.TempDir()
	root := filepath.Join(base, "later")
	Confine(root)
	real := filepath.Join(base, "real")
	os.MkdirAll(real, 0o755)
	os.WriteFile(filepath.Join(real, "a.json"), []byte("{}"), 0o644)
	os.Symlink(real, root)
	if b, _, err := ReadStable(filepath.Join(root, "a.json"), 0); err != nil || string(b) != "{}" {
		t.Fatalf("%q %v", b, err)
	}
}

// TestForeignHardLinkNotRead: below a confined root, a file with several links whose owner
// is not its directory's (another user's file hard-linked into the tree) is never read.
func TestForeignHardLinkNotRead(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root to give files other owners")
	}
	base := t.TempDir()
	tree := filepath.Join(base, "tree")
	os.Mkdir(tree, 0o755)
	os.Chown(tree, 65534, 65534)
	Confine(tree)
	secret := filepath.Join(base, "secret.json")
	// World-readable: the tree's owner could read it by its own path; a link in their tree is
	// still not read.
	os.WriteFile(secret, []byte("{\"secret\":1}"), 0o644)
	link := filepath.Join(tree, "s.json")
	if err := os.Link(secret, link); err != nil {
		t.Skip(err)
	}
	if _, _, err := ReadStable(link, 0); !errors.Is(err, ErrForeignLink) {
		t.Errorf("ReadStable: %v; want ErrForeignLink", err)
	}
	if f, _, err := OpenRegular(link); !errors.Is(err, ErrForeignLink) {
		if f != nil {
			f.Close()
		}
		t.Errorf("OpenRegular: %v; want ErrForeignLink", err)
	}
	// The tree owner's own hard link is read.
	own := filepath.Join(tree, "own.json")
	os.WriteFile(own, []byte("{}"), 0o644)
	os.Chown(own, 65534, 65534)
	os.Link(own, filepath.Join(tree, "own2.json"))
	if _, _, err := ReadStable(own, 0); err != nil {
		t.Errorf("the owner's own hard link: %v", err)
	}
	var st syscall.Stat_t
	syscall.Stat(own, &st)
	if st.Nlink != 2 {
		t.Fatalf("nlink %d", st.Nlink)
	}
}

// TestRootReadsAsTheTreesOwner: run as root below a root another user owns, a file that user
// cannot read (root's, mode 0600) is not read either.
func TestRootReadsAsTheTreesOwner(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root to give files other owners")
	}
	tree := filepath.Join(t.TempDir(), "tree")
	os.Mkdir(tree, 0o755)
	os.Chown(tree, 65534, 65534)
	Confine(tree)
	private := filepath.Join(tree, "root.json")
	os.WriteFile(private, []byte("{\"root\":1}"), 0o600)
	if _, _, err := ReadStable(private, 0); !errors.Is(err, os.ErrPermission) {
		t.Errorf("ReadStable of a root-only file in the user's tree: %v; want permission denied", err)
	}
	mine := filepath.Join(tree, "mine.json")
	os.WriteFile(mine, []byte("{}"), 0o600)
	os.Chown(mine, 65534, 65534)
	if b, _, err := ReadStable(mine, 0); err != nil || string(b) != "{}" {
		t.Errorf("the owner's own file: %q %v", b, err)
	}
}
