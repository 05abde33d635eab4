package crash

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/sessionmedic/sessionmedic/reliability/fixtures"
)

// fileState is one regular file: its bytes and permission bits.
type fileState struct {
	data []byte
	perm fs.FileMode
}

func (a fileState) equal(b fileState) bool { return a.perm == b.perm && bytes.Equal(a.data, b.data) }

func (a fileState) String() string {
	s := sha256.Sum256(a.data)
	return fmt.Sprintf("%d bytes %s sha256 %s", len(a.data), a.perm, hex.EncodeToString(s[:6]))
}

// tree is a case directory: session files by path relative to the case root. sessionmedic's
// own temps and the apps' lock files are kept apart.
type tree struct {
	files map[string]fileState
	temps []string // own temps, relative
	locks []string // app lock files, relative
}

// isOwnTemp is policy.OwnTempPattern: .<name>.sessionmedic-<hex>.tmp.
func isOwnTemp(name string) bool {
	ok, _ := filepath.Match(".*.sessionmedic-*.tmp", name)
	return ok
}

// isAppLock names the apps' lock files: PraisonAI <file>.lock, nanobot .session-files.lock,
// OpenClaw sessions.json.lock and <transcript>.lock, OpenViking .path.ovlock and
// .exact.ovlock.*. A heal takes them; a crash may leave them, and each app's protocol
// judges such a leftover stale.
func isAppLock(name string) bool {
	return strings.HasSuffix(name, ".lock") || name == ".path.ovlock" || strings.HasPrefix(name, ".exact.ovlock.")
}

func readTree(root string) (tree, error) {
	t := tree{files: map[string]fileState{}}
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			return nil
		}
		rel, _ := filepath.Rel(root, p)
		switch {
		case isOwnTemp(d.Name()):
			t.temps = append(t.temps, rel)
			return nil
		case isAppLock(d.Name()):
			t.locks = append(t.locks, rel)
			return nil
		case !d.Type().IsRegular():
			t.files[rel] = fileState{data: []byte("<not a regular file: " + d.Type().String() + ">")}
			return nil
		}
		fi, err := d.Info()
		if err != nil {
			return err
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		t.files[rel] = fileState{data: b, perm: fi.Mode().Perm()}
		return nil
	})
	return t, err
}

func writeTree(root string, files map[string]fileState) error {
	for rel, f := range files {
		p := filepath.Join(root, rel)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			return err
		}
		if err := os.WriteFile(p, f.data, f.perm); err != nil {
			return err
		}
		if err := os.Chmod(p, f.perm); err != nil {
			return err
		}
	}
	return nil
}

// manifest is the part of a quarantine manifest the invariants need.
type manifest struct {
	Path   string `json:"path"`
	SHA256 string `json:"sha256"`
	File   string `json:"file"`
	dir    string
}

// quarantine lists state_dir/quarantine/*/*/manifest.json; orphans counts entry directories
// without a manifest (a crash between the bytes and the manifest).
func quarantine(stateDir string) (ms []manifest, orphans int) {
	dirs, _ := filepath.Glob(filepath.Join(stateDir, "quarantine", "*", "*"))
	for _, d := range dirs {
		b, err := os.ReadFile(filepath.Join(d, "manifest.json"))
		if err != nil {
			orphans++
			continue
		}
		var m manifest
		if json.Unmarshal(b, &m) != nil {
			orphans++
			continue
		}
		m.dir = d
		ms = append(ms, m)
	}
	return ms, orphans
}

// quarantined reports whether the quarantine holds exactly orig as the bytes of path.
func quarantined(ms []manifest, path string, orig []byte) bool {
	sum := sha256.Sum256(orig)
	want := hex.EncodeToString(sum[:])
	for _, m := range ms {
		if m.Path != path || m.SHA256 != want || m.File != filepath.Base(path) {
			continue
		}
		if b, err := os.ReadFile(filepath.Join(m.dir, m.File)); err == nil && bytes.Equal(b, orig) {
			return true
		}
	}
	return false
}

// stateTemps counts sessionmedic temps left anywhere in state_dir.
func stateTemps(stateDir string) int {
	n := 0
	filepath.WalkDir(stateDir, func(p string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() && isOwnTemp(d.Name()) {
			n++
		}
		return nil
	})
	return n
}

func describe(f fileState, ok bool) string {
	if !ok {
		return "absent"
	}
	return f.String()
}

// checkCrashed: after a crash, before the restart. Every session file holds exactly its
// original or exactly its healed state; a file that differs from its original has the
// original in quarantine; nothing but own temps and app locks is new.
func checkCrashed(caseDir, stateDir string, orig, healed tree) []string {
	var bad []string
	now, err := readTree(caseDir)
	if err != nil {
		return []string{fmt.Sprintf("read case dir: %v", err)}
	}
	ms, _ := quarantine(stateDir)
	for _, rel := range fixtures.Keys(orig.files, healed.files) {
		cur, ok := now.files[rel]
		o, inO := orig.files[rel]
		h, inH := healed.files[rel]
		isOrig := ok == inO && (!ok || cur.equal(o))
		isHealed := ok == inH && (!ok || cur.equal(h))
		if !isOrig && !isHealed {
			bad = append(bad, fmt.Sprintf("%s holds neither its original (%s) nor its healed state (%s): %s",
				rel, describe(o, inO), describe(h, inH), describe(cur, ok)))
		}
		if inO && !isOrig && !quarantined(ms, filepath.Join(caseDir, rel), o.data) {
			bad = append(bad, fmt.Sprintf("%s differs from its original but the quarantine does not hold the original bytes", rel))
		}
	}
	for rel := range now.files {
		if _, inO := orig.files[rel]; !inO {
			if _, inH := healed.files[rel]; !inH {
				bad = append(bad, fmt.Sprintf("unexpected file %s (%s)", rel, now.files[rel]))
			}
		}
	}
	return bad
}

// checkRestarted: after the restart. No temp under the case dir, no journal entry, every
// session file in its healed state (and a changed file's original in quarantine).
func checkRestarted(caseDir, stateDir string, orig, healed tree) []string {
	var bad []string
	now, err := readTree(caseDir)
	if err != nil {
		return []string{fmt.Sprintf("read case dir: %v", err)}
	}
	bad = append(bad, filesHealed(now, healed)...)
	for _, tmp := range now.temps {
		bad = append(bad, "stray temp file "+tmp)
	}
	ents, err := os.ReadDir(filepath.Join(stateDir, "journal"))
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		bad = append(bad, fmt.Sprintf("journal: %v", err))
	}
	for _, e := range ents {
		bad = append(bad, "journal entry left: "+e.Name())
	}
	ms, _ := quarantine(stateDir)
	for rel, o := range orig.files {
		if cur, ok := now.files[rel]; (!ok || !cur.equal(o)) && !quarantined(ms, filepath.Join(caseDir, rel), o.data) {
			bad = append(bad, fmt.Sprintf("%s differs from its original but the quarantine does not hold the original bytes", rel))
		}
	}
	return bad
}

// filesHealed compares every session file with its healed state.
func filesHealed(now, healed tree) []string {
	var bad []string
	for _, rel := range fixtures.Keys(now.files, healed.files) {
		cur, ok := now.files[rel]
		h, inH := healed.files[rel]
		if ok != inH || (ok && !cur.equal(h)) {
			bad = append(bad, fmt.Sprintf("%s is not in its healed state (%s): %s", rel, describe(h, inH), describe(cur, ok)))
		}
	}
	return bad
}
