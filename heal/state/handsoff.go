package state

import (
	"encoding/hex"
	"encoding/json"
	"os"
	"path/filepath"
	"time"

	"github.com/sessionmedic/sessionmedic/heal/fsio"
)

// An operator's `quarantine restore` puts bytes back on purpose, damaged or not: they stand
// until the app writes the file again (its identity changes) or the operator heals that
// path explicitly. The mark is state_dir/hands-off/<key>.json, naming the path, the
// quarantine entry restored and the identity of the file the restore left.

// HandsOffMark is one restored file left alone.
type HandsOffMark struct {
	Path       string        `json:"path"`
	PathB64    string        `json:"path_b64,omitempty"` // Path's exact bytes when not UTF-8 (see names.go)
	Quarantine string        `json:"quarantine"`         // the entry whose bytes were restored
	Identity   fsio.Identity `json:"identity"`           // the file the restore left
	Restored   time.Time     `json:"restored"`
}

// HandsOff is state_dir/hands-off: the marks of the files an operator restored.
type HandsOff struct {
	Root string
	fs   fsio.FS // writes the marks
}

// NewHandsOff returns the marks under root, which fs writes.
func NewHandsOff(root string, fs fsio.FS) HandsOff { return HandsOff{Root: root, fs: fs} }

// File is the mark of path.
func (h HandsOff) File(path string) string {
	k := pathKey(path)
	return filepath.Join(h.Root, hex.EncodeToString(k[:])+".json")
}

// Mark records that the file now at path was restored by an operator from the quarantine
// entry quarantine.
func (h HandsOff) Mark(path, quarantine string, now time.Time) error {
	id, err := fsio.StatIdentity(path)
	if err != nil {
		return err
	}
	m := HandsOffMark{Path: path, PathB64: exactB64(path), Quarantine: quarantine, Identity: id, Restored: now.UTC()}
	data, err := json.Marshal(m)
	if err != nil {
		return err
	}
	if err := h.fs.MkdirAllSync(h.Root); err != nil {
		return err
	}
	return h.fs.ReplaceAtomic(h.File(path), data, 0o600)
}

// Get returns the mark of a restored file that the app has not written since (the file at
// path is now the version id names); a mark the file has moved on from is removed.
func (h HandsOff) Get(path string, id fsio.Identity) *HandsOffMark {
	f := h.File(path)
	data, err := os.ReadFile(f)
	if err != nil {
		return nil
	}
	var m HandsOffMark
	err = json.Unmarshal(data, &m)
	fromB64(&m.Path, m.PathB64)
	if err != nil || m.Path != path || !m.Identity.Same(id) {
		os.Remove(f)
		return nil
	}
	return &m
}

// Clear removes the mark of path, if any.
func (h HandsOff) Clear(path string) { os.Remove(h.File(path)) }
