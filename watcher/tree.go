package watcher

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"syscall"

	"github.com/fsnotify/fsnotify"
	"github.com/sessionmedic/sessionmedic/internal/pathx"
)

// dir is one watched directory. A directory is watched for either or both of two reasons: it
// is part of a root's tree (watched recursively), or missing roots wait for a path component
// to appear in it.
type dir struct {
	id      fileID              // the directory's identity when its tree watch was added
	tree    bool                // part of a root's tree
	kids    map[string]struct{} // tree subdirectories (full paths) that are watched
	waiters int                 // missing roots waiting on this directory
}

// created handles a Create: a new file is a change; a new directory is watched, then walked;
// a path on the way to a missing root moves the wait along.
func (l *loop) created(p string) {
	if l.isTree(filepath.Dir(p)) {
		fi, err := os.Lstat(p)
		switch {
		case err == nil && fi.IsDir():
			if l.allow(p, true) {
				if d := l.dirs[p]; d != nil && d.tree && d.id != idOf(fi) {
					// A directory renamed over a watched one: the old watches are stale.
					l.dropTree(p)
				}
				l.watchTree(p, true) // a no-op when it is already watched (a duplicate Create)
			}
		case l.allow(p, false):
			l.touch(p)
		}
	}
	var wake []string
	for root, at := range l.waits {
		if at == filepath.Dir(p) && pathx.Within(p, root) {
			wake = append(wake, root)
		}
	}
	for _, root := range wake {
		l.resolve(root, true)
	}
}

// removed handles a Remove or a Rename (the old name): a watched directory drops its watches
// and its descendants'; a root goes back to waiting; a file is a change.
func (l *loop) removed(p string) {
	d := l.dirs[p]
	if d == nil {
		if l.isTree(filepath.Dir(p)) && l.allow(p, false) {
			l.touch(p)
		}
		return
	}
	l.dropTree(p)
	var wake []string
	for root, at := range l.waits {
		if at == p {
			wake = append(wake, root)
		}
	}
	for _, root := range wake {
		l.resolve(root, true) // moves the wait up to an ancestor that still exists
	}
}

// written handles a Write on a file in a watched directory.
func (l *loop) written(p string) {
	if !l.isTree(p) && l.isTree(filepath.Dir(p)) && l.allow(p, false) {
		l.touch(p)
	}
}

func (l *loop) isTree(path string) bool {
	d := l.dirs[path]
	return d != nil && d.tree
}

// resolve watches root if it exists, or else waits for it on its nearest existing ancestor.
// feed says whether the files found in a newly watched root are reported as changed (not on the
// initial walk: the daemon's first scan covers those).
func (l *loop) resolve(root string, feed bool) {
	l.unwait(root)
	for {
		if isDir(root) {
			if !l.isTree(root) {
				l.watchTree(root, feed)
			}
			return
		}
		at := filepath.Dir(root)
		for !isDir(at) && at != filepath.Dir(at) {
			at = filepath.Dir(at)
		}
		if !l.addWatch(at) {
			if isDir(at) {
				return // reported: the root cannot be waited for
			}
			continue // removed meanwhile: look further up
		}
		l.waits[root] = at
		l.dirs[at].waiters++
		// The next component may have appeared before the watch existed.
		if !isDir(childToward(at, root)) {
			return
		}
		l.unwait(root)
	}
}

func (l *loop) unwait(root string) {
	at, ok := l.waits[root]
	if !ok {
		return
	}
	delete(l.waits, root)
	if d := l.dirs[at]; d != nil {
		d.waiters--
		if d.waiters == 0 && !d.tree {
			l.unwatch(at)
		}
	}
}

// watchTree watches path and every directory below it that the filter allows. With feed, every
// file found is reported as changed.
func (l *loop) watchTree(path string, feed bool) {
	if l.isTree(path) {
		return
	}
	if !l.addWatch(path) {
		return
	}
	d := l.dirs[path]
	fi, err := os.Stat(path)
	if err != nil || !fi.IsDir() {
		// Replaced by a file (or gone) since it was seen as a directory.
		if d.waiters == 0 {
			l.unwatch(path)
		}
		return
	}
	d.tree = true
	d.id = idOf(fi)
	if parent := l.dirs[filepath.Dir(path)]; parent != nil && parent.tree && path != filepath.Dir(path) {
		if parent.kids == nil {
			parent.kids = make(map[string]struct{})
		}
		parent.kids[path] = struct{}{}
	}
	entries, err := os.ReadDir(path)
	if err != nil {
		if !gone(err) {
			l.out.addError(err)
			l.rescanLost(path, err)
		}
		return
	}
	for _, e := range entries {
		p := filepath.Join(path, e.Name())
		if e.IsDir() {
			if l.allow(p, true) {
				l.watchTree(p, feed)
			}
			continue
		}
		if feed && l.allow(p, false) {
			l.touch(p)
		}
	}
}

// dropTree stops the tree watches of path and of every directory below it. Roots among them
// go back to waiting.
func (l *loop) dropTree(path string) {
	var roots []string
	l.drop(path, &roots)
	for _, r := range roots {
		l.resolve(r, true)
	}
}

func (l *loop) drop(path string, roots *[]string) {
	d := l.dirs[path]
	if d == nil || !d.tree {
		return
	}
	for k := range d.kids {
		l.drop(k, roots)
	}
	d.kids = nil
	d.tree = false
	if parent := l.dirs[filepath.Dir(path)]; parent != nil {
		delete(parent.kids, path)
	}
	if l.roots[path] {
		*roots = append(*roots, path)
	}
	if d.waiters == 0 {
		l.unwatch(path)
	}
}

// addWatch makes sure path is watched. It reports false (after reporting why, unless the
// directory is simply gone) when the watch could not be added.
func (l *loop) addWatch(path string) bool {
	if l.dirs[path] != nil {
		return true
	}
	var err error
	overBudget := l.w.budget > 0 && len(l.dirs) >= l.w.budget
	if overBudget {
		err = &BudgetError{Dir: path, Budget: l.w.budget}
	} else if err = l.src.Add(path); err != nil && !gone(err) {
		err = explainAdd(path, err)
	}
	if err != nil {
		if !gone(err) {
			// The kernel's limit is said at every retry (someone else's watches may be the
			// cause); the budget, once per directory while it stays unwatched.
			if !overBudget || !l.told[path] {
				l.told[path] = true
				l.out.addError(err)
			}
			l.rescanLost(path, err)
			l.failed[path] = true
			l.w.unwatched.Store(int64(len(l.failed)))
			if !l.retrying {
				l.retrying = true
				l.retryTimer.Reset(l.w.retry)
			}
		}
		return false
	}
	l.dirs[path] = &dir{}
	l.w.dirs.Store(int64(len(l.dirs)))
	delete(l.told, path)
	return true
}

// unwatch removes the watch on path. The kernel has often removed it already (the directory
// is gone), so failures are expected and ignored.
func (l *loop) unwatch(path string) {
	if err := l.src.Remove(path); err != nil &&
		!errors.Is(err, fsnotify.ErrNonExistentWatch) && !errors.Is(err, syscall.EINVAL) && !gone(err) {
		l.out.addError(err)
	}
	delete(l.dirs, path)
	l.w.dirs.Store(int64(len(l.dirs)))
}

// rescanLost asks for a rescan of the roots of a directory that could not be watched or
// listed: its events may be lost. Not for a directory that cannot be read: there is nothing
// a rescan could read there (the error says so; a retry feeds its files once it is readable).
func (l *loop) rescanLost(path string, err error) {
	if !errors.Is(err, fs.ErrPermission) {
		l.rescanRoots(path)
	}
}

// gone reports whether err means the path no longer exists (as a directory).
func gone(err error) bool {
	return errors.Is(err, fs.ErrNotExist) || errors.Is(err, syscall.ENOTDIR)
}

func isDir(path string) bool {
	fi, err := os.Stat(path)
	return err == nil && fi.IsDir()
}

// childToward returns the child of ancestor on the way to path.
func childToward(ancestor, path string) string {
	for filepath.Dir(path) != ancestor && path != filepath.Dir(path) {
		path = filepath.Dir(path)
	}
	return path
}

// retryFailed tries again the watches that could not be added: the directories still in a
// watched tree, and every root that is neither watched nor waited for. What it finds in a
// directory it now watches is reported as changed (events there were missed meanwhile).
func (l *loop) retryFailed() {
	paths := make([]string, 0, len(l.failed))
	for p := range l.failed {
		paths = append(paths, p)
	}
	clear(l.failed)
	l.w.unwatched.Store(0)
	slices.Sort(paths) // parents before their subdirectories
	for _, p := range paths {
		if l.isTree(p) || l.roots[p] || !l.isTree(filepath.Dir(p)) || !isDir(p) || !l.allow(p, true) {
			continue
		}
		l.watchTree(p, true)
	}
	for r := range l.roots {
		if _, waiting := l.waits[r]; !waiting && !l.isTree(r) {
			l.resolve(r, true)
		}
	}
}
