package heal

import (
	"context"
	"errors"
	"path/filepath"
	"regexp"
	"time"

	"github.com/sessionmedic/sessionmedic/heal/lock"
	"github.com/sessionmedic/sessionmedic/policy"
)

var nanobotNamespaceRe = regexp.MustCompile(`^[0-9a-f]{32}$`)

type noLock struct{}

func (noLock) Release() error { return nil }

// takeLock takes the app's own lock for path, as its protocol requires.
func (e *Engine) takeLock(ctx context.Context, rule *policy.Rule, path string, typ fileType) (lock.Held, error) {
	o := lock.Options{Wait: rule.Lock.Wait, Stale: rule.Lock.Stale}
	if o.Wait == 0 {
		o.Wait = 2 * time.Second
	}
	var h lock.Held
	var err error
	switch rule.Lock.Protocol {
	case "", policy.LockNone:
		return noLock{}, nil
	case policy.LockFlock:
		h, err = lock.Flock(ctx, policy.ExpandTemplate(rule.Lock.Path, path), false, o)
	case policy.LockFile:
		h, err = lock.LockFile(ctx, policy.ExpandTemplate(rule.Lock.Path, path), o)
	case policy.LockNanobot:
		dir := filepath.Dir(path)
		if !nanobotNamespaceRe.MatchString(filepath.Base(dir)) {
			// Through a symlinked rule root the namespace has the name the link points to.
			dir = resolved(dir)
		}
		if !nanobotNamespaceRe.MatchString(filepath.Base(dir)) {
			return noLock{}, nil // eras A–C have no lock
		}
		h, err = lock.Flock(ctx, filepath.Join(dir, ".session-files.lock"), true, o)
	case policy.LockOpenViking:
		sid := filepath.Dir(path)
		root := vikingRoot(sid)
		if root == "" {
			// Through a symlinked rule root, the tree above the session is where it points.
			sid = resolved(sid)
			root = vikingRoot(sid)
		}
		h, err = lock.OpenViking(ctx, sid, root, o)
	case policy.LockOpenClaw:
		if o.Stale == 0 {
			o.Stale = 30 * time.Second
		}
		if typ == ftOpenClawStore {
			h, err = lock.OpenClaw(ctx, filepath.Join(filepath.Dir(path), "sessions.json.lock"), false, o)
		} else {
			o.Stale = 30 * time.Minute
			h, err = lock.OpenClaw(ctx, path+".lock", true, o)
		}
	default:
		return nil, errors.New("unknown lock protocol " + string(rule.Lock.Protocol))
	}
	if errors.Is(err, lock.ErrBusy) {
		return nil, busyErr("app lock is held")
	}
	if err != nil {
		return nil, err
	}
	return h, nil
}

// vikingRoot is the `<workspace>/viking` directory above a session, or "" when not found.
func vikingRoot(sid string) string {
	for d := sid; d != filepath.Dir(d); d = filepath.Dir(d) {
		if filepath.Base(d) == "viking" {
			return d
		}
	}
	return ""
}
