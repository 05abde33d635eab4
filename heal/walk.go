package heal

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"sort"
	"strings"

	"github.com/sessionmedic/sessionmedic/heal/format"
	"github.com/sessionmedic/sessionmedic/heal/fsio"
	"github.com/sessionmedic/sessionmedic/internal/pathx"
	"github.com/sessionmedic/sessionmedic/internal/workpool"
	"github.com/sessionmedic/sessionmedic/policy"
)

// Resolver finds the rule for a path no policy rule covers (nil: ignore the path).
type Resolver func(path string) *policy.Rule

// Targets expands paths (files or directory trees) into targets. With no paths, every rule's
// roots are walked. A root (or a path given) that is a symlink to a directory is followed, at
// that top only; no symlink below it is ever followed. Errors name the path that could not
// be read.
func (e *Engine) Targets(paths []string, fallback Resolver) ([]Target, []error) {
	var out []Target
	var errs []error
	seen := map[string]bool{}
	add := func(t Target) {
		if !seen[t.Path] {
			seen[t.Path] = true
			out = append(out, t)
		}
	}
	ruleFor := func(p string) *policy.Rule {
		if r, _, ok := e.Policy.RuleFor(p); ok {
			return r
		}
		if fallback != nil {
			return fallback(p)
		}
		return nil
	}
	// visit is the walk of one tree (below root) into its own lists: trees are walked in
	// parallel and merged in order below.
	type found struct {
		ts   []Target
		errs []error
	}
	visit := func(root, start string) found {
		var f found
		err := filepath.WalkDir(start, func(p string, d fs.DirEntry, err error) error {
			if err != nil {
				if p != root && !os.IsNotExist(err) {
					f.errs = append(f.errs, err)
				}
				return nil
			}
			if d.IsDir() {
				f.ts = append(f.ts, e.missingIn(p, ruleFor)...)
				return nil
			}
			if t, ok := e.targetFor(p, ruleFor); ok {
				f.ts = append(f.ts, t)
			}
			return nil
		})
		if err != nil {
			f.errs = append(f.errs, err)
		}
		return f
	}
	// top lists the root itself. A root that is a symlink to a directory is followed, once:
	// its entries are listed through it and reported under the root's own path, and every
	// subtree below is walked without following any symlink.
	top := func(root string, subdirs *[]string) found {
		if fi, err := os.Stat(root); err != nil || !fi.IsDir() {
			return visit(root, root) // missing (announced elsewhere), or a file
		}
		var f found
		f.ts = append(f.ts, e.missingIn(root, ruleFor)...)
		// A root that is not there is announced elsewhere (a rule path missing), but one
		// that is there and cannot be read guards nothing, and only this read knows it.
		ents, err := os.ReadDir(root)
		if err != nil && !os.IsNotExist(err) {
			f.errs = append(f.errs, err)
		}
		for _, en := range ents {
			p := filepath.Join(root, en.Name())
			if en.IsDir() {
				*subdirs = append(*subdirs, p)
			} else if t, ok := e.targetFor(p, ruleFor); ok {
				f.ts = append(f.ts, t)
			}
		}
		return f
	}
	walk := func(root string) {
		if e.onWalk != nil {
			e.onWalk(root)
		}
		// The root's own files first, its subdirectories set aside; then the subtrees, in
		// parallel (a first scan of a large tree is mostly system calls).
		var subdirs []string
		parts := []found{top(root, &subdirs)}
		subs := make([]found, len(subdirs))
		workpool.Run(len(subdirs), runtime.GOMAXPROCS(0), func(k int) {
			subs[k] = visit(root, subdirs[k])
		})
		for _, f := range append(parts, subs...) {
			for _, t := range f.ts {
				add(t)
			}
			errs = append(errs, f.errs...)
		}
	}
	if len(paths) == 0 {
		for _, root := range walkRoots(e.Policy.Rules) {
			walk(root)
		}
	}
	for _, p := range paths {
		abs, err := filepath.Abs(p)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		fi, err := os.Lstat(abs)
		if err == nil && fi.Mode()&fs.ModeSymlink != 0 {
			// A tree named through a symlink is walked through it (only there, at its top).
			if st, serr := os.Stat(abs); serr == nil && st.IsDir() {
				fi = st
			}
		}
		switch {
		case err != nil:
			errs = append(errs, err)
		case fi.IsDir():
			walk(abs)
		default:
			if t, ok := e.targetFor(abs, ruleFor); ok {
				add(t)
			} else if reason := e.notSession(abs); reason != "" {
				add(Target{Path: abs, Rule: &policy.Rule{Name: "-"}, Skip: reason})
			} else {
				errs = append(errs, &fs.PathError{Op: "check", Path: abs, Err: ErrNoRule})
			}
		}
	}
	var ords []format.DirOrderer
	for _, p := range e.reg.Profiles() {
		if o, ok := p.(format.DirOrderer); ok {
			ords = append(ords, o)
		}
	}
	sort.SliceStable(out, func(i, j int) bool { return targetLess(ords, out[i], out[j]) })
	return out, errs
}

// walkRoots are the rules' roots, each tree once: a root several rules name is walked once,
// and a root inside another's tree, reached from it through real directories only (no
// symlink below the outer root, which a walk never follows), is walked as part of it. Every
// file found goes to the rule the policy gives it, whichever root found it.
func walkRoots(rules []policy.Rule) []string {
	var all []string
	for _, r := range rules {
		all = append(all, r.Paths...)
	}
	sort.Slice(all, func(i, j int) bool { return len(all[i]) < len(all[j]) || len(all[i]) == len(all[j]) && all[i] < all[j] })
	var out []string
	for _, root := range slices.Compact(all) {
		covered := false
		for _, o := range out {
			if pathx.Within(o, root) && realBelow(o, root) {
				covered = true
				break
			}
		}
		if !covered {
			out = append(out, root)
		}
	}
	return out
}

// realBelow: every directory from below outer down to inner (inner within outer) is a real
// directory, no symlink: a walk of outer reaches inner.
func realBelow(outer, inner string) bool {
	rel, ok := pathx.Rel(outer, inner)
	if !ok {
		return false
	}
	p := outer
	for _, part := range strings.Split(rel, "/") {
		if part == "" || part == "." {
			continue
		}
		p = filepath.Join(p, part)
		fi, err := os.Lstat(p)
		if err != nil || !fi.IsDir() {
			return false
		}
	}
	return true
}

// targetLess orders files so that a heal sees a file a profile wants last in its directory
// (metadata, see [format.DirOrderer]) after its siblings, and otherwise goes by path.
func targetLess(ords []format.DirOrderer, a, b Target) bool {
	da, db := filepath.Dir(a.Path), filepath.Dir(b.Path)
	if da == db {
		ma, mb := lastInDir(ords, filepath.Base(a.Path)), lastInDir(ords, filepath.Base(b.Path))
		if ma != mb {
			return mb
		}
	}
	return a.Path < b.Path
}

func lastInDir(ords []format.DirOrderer, name string) bool {
	for _, o := range ords {
		if o.LastInDir(name) {
			return true
		}
	}
	return false
}

// targetFor: a session file some rule covers, or an app temp file a rule may clean up.
// sessionmedic's own temps are never targets.
func (e *Engine) targetFor(p string, ruleFor func(string) *policy.Rule) (Target, bool) {
	if policy.IsOwnTemp(filepath.Base(p)) {
		return Target{}, false
	}
	if r := ruleFor(p); r != nil {
		return Target{Path: p, Rule: r}, true
	}
	if r, _, ok := e.Policy.TempRuleFor(p); ok && r.HasStrategy(policy.CleanTemp) {
		return Target{Path: p, Rule: r, Temp: true}, true
	}
	return Target{}, false
}

// MissingIn returns the targets of dir whose absence is itself damage (see missingIn), for a
// caller that saw a file disappear.
func (e *Engine) MissingIn(dir string) []Target {
	return e.missingIn(dir, func(p string) *policy.Rule {
		if r, _, ok := e.Policy.RuleFor(p); ok {
			return r
		}
		return nil
	})
}

// Deleted is the target of a file that just disappeared when its absence is damage: its
// profile is [format.Resurrectable], sessionmedic holds its last-good copy, and the app would
// still keep that copy.
func (e *Engine) Deleted(p string) (Target, bool) {
	r, _, ok := e.Policy.RuleFor(p)
	if !ok || !r.KeepLastGood || !r.RestoreDeleted {
		return Target{}, false // a deletion stands unless the policy asks otherwise
	}
	if _, err := os.Lstat(p); !errors.Is(err, fs.ErrNotExist) {
		return Target{}, false
	}
	res, ok := e.profile(r.Format, p).(format.Resurrectable)
	if !ok {
		return Target{}, false
	}
	// The copy is read streaming from its file (a chat of any size), as it is when it is
	// copied back.
	f, id, err := fsio.OpenRegular(e.LastGood.Path(p))
	if err != nil {
		return Target{}, false
	}
	defer f.Close()
	if !res.Restore(f, id.Size, e.Now()) || !fsio.StillSame(f, id) {
		return Target{}, false
	}
	return Target{Path: p, Rule: r, Missing: true}, true
}

// missingIn finds files whose absence is damage, as the profiles that can tell say (see
// [format.MissingDetector]).
func (e *Engine) missingIn(dir string, ruleFor func(string) *policy.Rule) []Target {
	// Only a directory a rule maps to such a profile can hold such a file: do not list any
	// other directory a second time.
	covers := func(d format.MissingDetector, p string) *policy.Rule {
		r := ruleFor(p)
		if r != nil && e.profile(r.Format, p).Name() == d.(format.Profile).Name() {
			return r
		}
		return nil
	}
	var ds []format.MissingDetector
	for _, p := range e.reg.Profiles() {
		if d, ok := p.(format.MissingDetector); ok && covers(d, filepath.Join(dir, d.Probe())) != nil {
			ds = append(ds, d)
		}
	}
	if len(ds) == 0 {
		return nil
	}
	ents, err := os.ReadDir(dir)
	if err != nil {
		return nil
	}
	names := make([]string, len(ents))
	for i, en := range ents {
		names[i] = en.Name()
	}
	var out []Target
	for _, d := range ds {
		for _, n := range d.MissingIn(dir, names) {
			p := filepath.Join(dir, n)
			if r := covers(d, p); r != nil {
				out = append(out, Target{Path: p, Rule: r, Missing: true})
			}
		}
	}
	return out
}

// isLockName reports whether a base name is a lock file's: ".lock", or an app's own names.
func (e *Engine) isLockName(base string) bool {
	if strings.HasSuffix(base, ".lock") {
		return true
	}
	for _, p := range e.reg.Profiles() {
		if l, ok := p.(format.LockNamer); ok && l.IsLockName(base) {
			return true
		}
	}
	return false
}

// notSession names why a file given on the command line is not judged: a lock file or a
// temp file (the apps' or sessionmedic's own).
func (e *Engine) notSession(p string) string {
	base := filepath.Base(p)
	switch {
	case e.isLockName(base):
		return "a lock file, not session state"
	case policy.IsOwnTemp(base):
		return "sessionmedic's own temp file"
	case filepath.Ext(base) == ".tmp":
		return "a temp file, not session state"
	}
	return ""
}
