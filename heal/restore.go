package heal

import (
	"context"
	"errors"
	"fmt"
	"os"

	"github.com/sessionmedic/sessionmedic/heal/fsio"
)

// Restore puts a quarantine entry's original bytes back at its path, atomically and under the
// app's lock; whatever the path holds now is quarantined first. It returns the quarantine
// entry of the replaced bytes ("" when the path was empty).
//
// The restored file is then marked hands-off (a mark in heal/state): a daemon reports it but
// does not heal it again until the app writes it or a heal names it.
func (e *Engine) Restore(ctx context.Context, m *Manifest, t Target) (string, error) {
	orig, err := m.Bytes()
	if err != nil {
		return "", err
	}
	lk, err := e.lockPath(ctx, m.Path)
	if err != nil {
		return "", err
	}
	defer lk.Release()
	q, err := e.restore(ctx, m, t, orig)
	if err != nil {
		return q, err
	}
	if err := e.handsOff.Mark(m.Path, m.ID, e.Now()); err != nil {
		return q, fmt.Errorf("restored, but could not mark it hands-off (a running daemon may heal it again): %w", err)
	}
	return q, nil
}

func (e *Engine) restore(ctx context.Context, m *Manifest, t Target, orig []byte) (string, error) {
	cur, id, err := fsio.ReadStable(m.Path, 0)
	missing := errors.Is(err, os.ErrNotExist)
	if err != nil && !missing {
		return "", err
	}
	in := &inspection{ctx: fileCtx{path: m.Path, typ: e.profile(t.Rule.Format, m.Path)}, data: cur, id: id, missing: missing,
		verdict: Verdict{Status: Damaged, Kind: "restore", Offset: -1, Detail: "replaced by quarantine restore " + m.ID}}
	if !missing && sha(cur) == m.SHA256 {
		return "", nil // already holds those bytes
	}
	p := &plan{strategy: "quarantine-restore", edits: []edit{{path: m.Path, old: cur, oldID: id, missing: missing, data: orig}}}
	if missing {
		// A missing file has no mode to keep: use the permission bits recorded in the
		// manifest (never more: apply keeps permission bits only). Its owner and group are
		// its directory's, whatever the manifest says.
		p.edits[0].oldID = Identity{Mode: m.Identity.Mode & 0o777}
	}
	var wrote map[string]Identity
	return e.apply(ctx, t, in, p, &wrote)
}
