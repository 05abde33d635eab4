package heal

import (
	"context"
	"errors"
	"time"

	"github.com/sessionmedic/sessionmedic/heal/format"
	"github.com/sessionmedic/sessionmedic/heal/lock"
	"github.com/sessionmedic/sessionmedic/policy"
)

// noLock stands for no lock taken: the file gets the quiet check of unlocked apps.
type noLock = format.Unlocked

// takeLock takes the app's own lock for path, as its protocol requires. With probe it only
// judges whether the lock could be taken, writing nothing (a dry run), and holds nothing.
func (e *Engine) takeLock(ctx context.Context, rule *policy.Rule, path string, typ format.Profile, probe bool) (lock.Held, error) {
	o := lock.Options{Wait: rule.Lock.Wait, Stale: rule.Lock.Stale, Now: e.Now, Faults: e.fs.Faults, Probe: probe}
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
	default:
		// An app's own protocol (see heal/apps).
		take := e.reg.LockProtocol(string(rule.Lock.Protocol))
		if take == nil {
			return nil, errors.New("unknown lock protocol " + string(rule.Lock.Protocol))
		}
		h, err = take(ctx, path, typ, format.LockParams{Wait: o.Wait, Stale: o.Stale, Now: e.Now, Faults: e.fs.Faults, Probe: probe})
	}
	if errors.Is(err, lock.ErrBusy) {
		return nil, lockBusy(rule.Lock.Protocol, err)
	}
	if err != nil {
		return nil, err
	}
	return h, nil
}

// lockBusy is the busy error of a lock or liveness protocol that found the file in use: it
// names the protocol, and the lock file, registry entry or directory that said so with who
// holds it (the pid, its start time, its pid namespace, the token's owner).
func lockBusy(protocol policy.LockProtocol, err error) error {
	var be *lock.BusyError
	if !errors.As(err, &be) {
		return busyErr("in use by the app (lock protocol %s): %v", protocol, err)
	}
	if be.Holder == "" {
		return busyErr("in use by the app (lock protocol %s): %s", protocol, be.Path)
	}
	return busyErr("in use by the app (lock protocol %s): %s: %s", protocol, be.Path, be.Holder)
}
