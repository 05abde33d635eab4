package heal

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

// HandsOff is one restored file left alone.
type HandsOff struct {
	Path       string    `json:"path"`
	Quarantine string    `json:"quarantine"` // the entry whose bytes were restored
	Identity   Identity  `json:"identity"`   // the file the restore left
	Restored   time.Time `json:"restored"`
}

func (e *Engine) handsOffFile(path string) string {
	k := pathKey(path)
	return filepath.Join(e.StateDir, "hands-off", hex.EncodeToString(k[:])+".json")
}

// markHandsOff records that the file now at path was restored by an operator.
func (e *Engine) markHandsOff(path, quarantine string) error {
	id, err := fsio.StatIdentity(path)
	if err != nil {
		return err
	}
	h := HandsOff{Path: path, Quarantine: quarantine, Identity: id, Restored: e.Now().UTC()}
	data, err := json.Marshal(h)
	if err != nil {
		return err
	}
	if err := e.fs.MkdirAllSync(filepath.Join(e.StateDir, "hands-off")); err != nil {
		return err
	}
	return e.fs.ReplaceAtomic(e.handsOffFile(path), data, 0o600)
}

// handsOff returns the mark of a restored file that the app has not written since; a mark
// the file has moved on from is removed.
func (e *Engine) handsOff(path string, now Identity) *HandsOff {
	f := e.handsOffFile(path)
	data, err := os.ReadFile(f)
	if err != nil {
		return nil
	}
	var h HandsOff
	if json.Unmarshal(data, &h) != nil || h.Path != path || !h.Identity.Same(now) {
		os.Remove(f)
		return nil
	}
	return &h
}

// clearHandsOff removes the mark of path, if any.
func (e *Engine) clearHandsOff(path string) { os.Remove(e.handsOffFile(path)) }
