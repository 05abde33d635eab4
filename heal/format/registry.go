package format

import (
	"context"
	"path/filepath"
	"slices"
	"strings"
	"time"
)

// Registry maps the format names a policy rule may give, with a path, to the Profile that
// judges the file, and the apps' own lock protocols to the code that takes them. It is a
// value: the engine that uses it builds it and keeps it.
type Registry struct {
	formats  map[string]func(path string) Profile
	byFormat map[string][]Profile // the profiles each format picks among
	profiles []Profile
	locks    map[string]LockFunc
}

// Lock is a lock held; Release lets it go.
type Lock interface{ Release() error }

// LockFunc takes an app's own lock for path, a file judged by p, as [LockParams] say.
type LockFunc func(ctx context.Context, path string, p Profile, lp LockParams) (Lock, error)

// LockParams: wait up to Wait for the lock, and treat a holder that has not shown life for
// Stale (0: the protocol's own default) as gone, judged by the clock Now (nil: time.Now).
// Faults is the engine's file-operation seam (see fsio.FS.Faults). Probe asks only whether
// the lock could be taken, writing nothing (a dry run; see heal/lock's Options.Probe).
type LockParams struct {
	Wait, Stale time.Duration
	Now         func() time.Time
	Faults      func(op, path string) error
	Probe       bool
}

// NewRegistry returns a registry of the generic formats: json and jsonl.
func NewRegistry() *Registry {
	r := &Registry{formats: map[string]func(string) Profile{}, byFormat: map[string][]Profile{}, locks: map[string]LockFunc{}}
	r.Add("json", func(string) Profile { return JSON }, JSON)
	r.Add("jsonl", func(string) Profile { return JSONLog }, JSONLog)
	return r
}

// Add registers a format name: pick chooses among its profiles by path (and never returns
// one that is not among them).
func (r *Registry) Add(format string, pick func(path string) Profile, profiles ...Profile) {
	r.formats[format] = pick
	r.byFormat[format] = slices.Clone(profiles)
	for _, p := range profiles {
		if !slices.Contains(r.profiles, p) {
			r.profiles = append(r.profiles, p)
		}
	}
}

// AddLock registers an app's lock protocol under its policy name.
func (r *Registry) AddLock(protocol string, f LockFunc) { r.locks[protocol] = f }

// Has reports whether a format name is registered.
func (r *Registry) Has(format string) bool { return r.formats[format] != nil }

// Profile is the profile that judges path under a rule's format; an unknown format is
// detected from the name (.jsonl or else JSON).
func (r *Registry) Profile(format, path string) Profile {
	if pick := r.formats[format]; pick != nil {
		return pick(path)
	}
	if strings.HasSuffix(filepath.Base(path), ".jsonl") {
		return r.formats["jsonl"](path)
	}
	return r.formats["json"](path)
}

// FormatProfiles lists the profiles a format name picks among, as registered.
func (r *Registry) FormatProfiles(format string) []Profile { return slices.Clone(r.byFormat[format]) }

// Profiles lists every registered profile, in registration order.
func (r *Registry) Profiles() []Profile { return slices.Clone(r.profiles) }

// LockProtocol is the registered lock protocol of that name, or nil.
func (r *Registry) LockProtocol(name string) LockFunc { return r.locks[name] }

// Unlocked is the Lock a protocol returns where its app takes no lock (an era before the
// app had one): the file is then written with the checks of an app without a lock.
type Unlocked struct{}

// Release does nothing.
func (Unlocked) Release() error { return nil }
