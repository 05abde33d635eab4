package heal

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/sessionmedic/sessionmedic/heal/format"
	"github.com/sessionmedic/sessionmedic/heal/fsio"
	"github.com/sessionmedic/sessionmedic/policy"
)

// KindStaleTemp marks an app temp file left behind by a crash before its rename.
const KindStaleTemp = "stale-temp"

func (e *Engine) inspectTemp(t Target) (Verdict, []byte, Identity) {
	data, id, err := fsio.ReadStable(t.Path, t.Rule.Limits.MaxFileSize)
	switch {
	case errors.Is(err, os.ErrNotExist):
		return format.Skip("file no longer exists"), nil, id
	case errors.Is(err, fsio.ErrNotRegular):
		return format.Skip("not a regular file"), nil, id
	case errors.Is(err, fsio.ErrChanged):
		return format.Wait("temp file is being written"), nil, id
	case err != nil:
		return format.Skip("unreadable: %v", err), nil, id
	}
	age := e.Now().Sub(id.Mtime)
	if age < t.Rule.TempAge {
		return Verdict{Status: Healthy, Offset: -1, Detail: "recent app temp file: a write may be in flight"}, data, id
	}
	return format.Damage(KindStaleTemp, -1, "app temp file untouched for %s: a crash left it before its rename", age.Round(time.Second)), data, id
}

// tempLockTarget names the session whose lock guards a temp file, as its profile says.
func (e *Engine) tempLockTarget(t Target, data []byte) string {
	if o, ok := e.profile(t.Rule.Format, t.Path).(format.TempOwner); ok {
		return o.TempLockTarget(t.Path, data)
	}
	return "" // the profile does not say: no lock
}

// cleanTemp moves a stale app temp file into quarantine under the app's lock; the session
// file it belonged to is not touched.
func (e *Engine) cleanTemp(ctx context.Context, t Target, r *Report, dryRun bool) {
	v, data, id := e.inspectTemp(t)
	fill(r, v)
	r.Action = ActionNone
	if v.Status != Damaged {
		return
	}
	r.Strategy = string(policy.CleanTemp)
	if t.Rule.Mode == policy.ModeObserve {
		r.Action, r.Reason = ActionRefused, "observe mode: would move the temp file to quarantine"
		return
	}
	var held interface{ Release() error } = noLock{}
	if lt := e.tempLockTarget(t, data); lt != "" {
		// A dry run takes the same decision, writing nothing (the lock only probed).
		h, err := e.takeLock(ctx, t.Rule, lt, e.profile(t.Rule.Format, lt), dryRun)
		if err != nil {
			r.Verdict, r.Reason = Busy, err.Error()
			return
		}
		held = h
	}
	defer held.Release()
	if dryRun {
		r.Action = ActionWouldHeal
		return
	}
	if cur, err := fsio.StatIdentity(t.Path); err != nil || !cur.Same(id) {
		r.Verdict, r.Reason = Busy, "temp file changed"
		return
	}
	m := &Manifest{Path: t.Path, Rule: t.Rule.Name, Identity: id, Kind: KindStaleTemp, Offset: -1, Detail: v.Detail, Strategy: string(policy.CleanTemp)}
	dir, err := e.Quarantine.Put(m, data, e.Now())
	if err != nil {
		r.Action, r.Reason = ActionRefused, err.Error()
		return
	}
	if cur, err := fsio.StatIdentity(t.Path); err != nil || !cur.Same(id) {
		os.RemoveAll(dir)
		r.Verdict, r.Reason = Busy, "temp file changed"
		return
	}
	// Unlinked through its directory, reached from the rule's root without following a
	// symlink, and only while that directory still holds the version quarantined.
	d, err := e.fs.OpenParent(ruleRoot(t.Rule, t.Path), t.Path)
	if err != nil {
		os.RemoveAll(dir)
		r.Verdict, r.Reason = Busy, err.Error()
		return
	}
	defer d.Close()
	if why := d.Insecure(); why != "" {
		os.RemoveAll(dir)
		r.Action, r.Reason = ActionRefused, insecureErr(why).Error()
		return
	}
	if cur, err := d.Stat(filepath.Base(t.Path)); err != nil || !cur.Same(id) {
		os.RemoveAll(dir)
		r.Verdict, r.Reason = Busy, "temp file changed"
		return
	}
	if err := d.Unlink(filepath.Base(t.Path)); err != nil {
		os.RemoveAll(dir)
		r.Action, r.Reason = ActionRefused, fmt.Sprintf("remove temp: %v", err)
		return
	}
	_ = d.Sync()
	r.Action, r.Quarantine, r.QuarantinedBytes = ActionHealed, dir, int64(len(data))
}
