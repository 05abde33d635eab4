package fsio

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"testing"
)

// ReadDirIdentities gives each entry keep accepts the identity StatIdentity gives its path,
// and the directory's own: a kept identity compares equal to a read's (ReadStable).
func TestReadDirIdentitiesAsStatIdentity(t *testing.T) {
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "b.json"), []byte(`{"b":1}`), 0o600)
	os.WriteFile(filepath.Join(dir, "a.json"), []byte(`{}`), 0o644)
	os.WriteFile(filepath.Join(dir, "skip.txt"), nil, 0o600)
	os.Symlink("a.json", filepath.Join(dir, "link.json"))
	os.Mkdir(filepath.Join(dir, "d.json"), 0o700)
	ents, did, err := ReadDirIdentities(dir, func(e fs.DirEntry) bool { return filepath.Ext(e.Name()) == ".json" })
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range ents {
		names = append(names, e.Name())
		want, werr := StatIdentity(filepath.Join(dir, e.Name()))
		if e.Err != nil || werr != nil {
			if !errors.Is(e.Err, ErrNotRegular) || !errors.Is(werr, ErrNotRegular) {
				t.Errorf("%s: %v, StatIdentity %v", e.Name(), e.Err, werr)
			}
			continue
		}
		if e.ID != want {
			t.Errorf("%s: %+v, StatIdentity %+v", e.Name(), e.ID, want)
		}
		if _, rid, err := ReadStable(filepath.Join(dir, e.Name()), 0); err != nil || !rid.Same(e.ID) {
			t.Errorf("%s: read %+v (%v), listed %+v", e.Name(), rid, err, e.ID)
		}
	}
	if !slices.Equal(names, []string{"a.json", "b.json", "d.json", "link.json"}) {
		t.Errorf("entries %q", names)
	}
	fi, _ := os.Stat(dir)
	if dst := IdentityOf(fi); did.Dev != dst.Dev || did.Ino != dst.Ino || did.UID != dst.UID || did.Mode != dst.Mode {
		t.Errorf("directory %+v, stat %+v", did, dst)
	}
	if _, _, err := ReadDirIdentities(filepath.Join(dir, "none"), func(fs.DirEntry) bool { return true }); err == nil {
		t.Error("a missing directory listed")
	}
}
