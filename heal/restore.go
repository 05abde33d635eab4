package heal

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/sessionmedic/sessionmedic/heal/fsio"
)

// Restored says what a [Engine.Restore] did.
type Restored struct {
	// Quarantine is the entry of the bytes the restore replaced ("" when the path was
	// missing, or already held the entry's bytes).
	Quarantine string
	// Unchanged: the path already held the entry's bytes, and nothing was written (as after
	// a heal that was rolled back: see [state.StatusRolledBack]).
	Unchanged bool
}

// Restore puts a quarantine entry's original bytes back at its path, atomically and under the
// app's lock; whatever the path holds now is quarantined first.
//
// The restored file is then marked hands-off (a mark in heal/state): a daemon reports it but
// does not heal it again until the app writes it or a heal names it. So is a file found
// already holding the entry's bytes: the operator's restore stands as well.
//
// The entry of a tail cut holds only the bytes the cut removed: the original is the file's
// prefix the cut left, then those bytes, and is restored only while the file still starts
// with that prefix.
func (e *Engine) Restore(ctx context.Context, m *Manifest, t Target) (Restored, error) {
	if _, ok := e.sqliteTarget(t); ok {
		// A live store is never replaced by a file (its app's -wal would be replayed over
		// it): the entry is a consistent copy taken through SQLite, for the operator to put
		// in place with the app stopped.
		return Restored{}, fmt.Errorf("%s is a SQLite store: it is never replaced by a file while its app may run (the app's -wal would be replayed over it). The entry %s is a consistent copy taken through SQLite's backup API: with the app stopped, move the store and its -wal, -shm and -journal aside together and copy the entry's file in its place (or `sqlite3 %s \".restore '%s'\"`)",
			m.Path, m.ID, m.Path, filepath.Join(m.Dir, m.File))
	}
	var orig []byte
	if m.Prefix == 0 {
		var err error
		if orig, err = m.Bytes(); err != nil {
			return Restored{}, err
		}
	}
	lk, err := e.lockPath(ctx, m.Path)
	if err != nil {
		return Restored{}, err
	}
	defer lk.Release()
	r, err := e.restore(ctx, m, t, orig)
	if err != nil {
		return r, err
	}
	if err := e.handsOff.Mark(m.Path, m.ID, e.Now()); err != nil {
		return r, fmt.Errorf("restored, but could not mark it hands-off (a running daemon may heal it again): %w", err)
	}
	return r, nil
}

func (e *Engine) restore(ctx context.Context, m *Manifest, t Target, orig []byte) (Restored, error) {
	cur, id, err := fsio.ReadStable(m.Path, 0)
	missing := errors.Is(err, os.ErrNotExist)
	if err != nil && !missing {
		return Restored{}, err
	}
	in := &inspection{ctx: fileCtx{path: m.Path, typ: e.profile(t.Rule.Format, m.Path)}, data: cur, id: id, missing: missing,
		verdict: Verdict{Status: Damaged, Kind: "restore", Offset: -1, Detail: "replaced by quarantine restore " + m.ID}}
	if !missing && sha(cur) == m.SHA256 {
		return Restored{Unchanged: true}, nil // already holds those bytes
	}
	if m.Prefix > 0 {
		if orig, err = m.Join(cur); err != nil {
			return Restored{}, err
		}
	}
	p := &plan{strategy: "quarantine-restore", edits: []edit{{path: m.Path, old: cur, oldID: id, missing: missing, data: orig}}}
	if missing {
		// A missing file has no mode to keep: use the permission bits recorded in the
		// manifest (never more: apply keeps permission bits only). Its owner and group are
		// its directory's, whatever the manifest says.
		p.edits[0].oldID = Identity{Mode: m.Identity.Mode & 0o777}
	}
	var wrote map[string]Identity
	q, err := e.apply(ctx, t, in, p, &wrote)
	return Restored{Quarantine: q}, err
}
