package apps

import (
	"errors"
	"path/filepath"
	"slices"
	"sort"
	"time"

	"github.com/sessionmedic/sessionmedic/heal/format"
	"github.com/sessionmedic/sessionmedic/heal/fsio"
)

// A directory's listing shared by the checks of its sessions.
//
// The cross-file check of a session P must see its siblings as they were while P held the
// bytes judged: a listing made after P's read does (children). Made for every session
// checked, that is one listing and a stat of every sibling per check: n² stats for a
// directory of n sessions (2,000 sessions: 4 million stats, 19 s). A scan checks the
// sessions of a directory one after another, each unchanged for long, and the listing made
// for the first one saw every other one too.
//
// So each listing is kept as the directory's snapshot (every session's identity as stated,
// each one's parent link as read), and the check of P answers from it, without a listing,
// when the snapshot saw the very version of P that was judged and P held it throughout:
//   - the snapshot stated P with the identity of the bytes judged (format.File.Read:
//     device, inode, size, mtime and ctime to the nanosecond);
//   - that version's ctime is older, by more than the racy window (praisonIndex), than both
//     the snapshot's first stat and the judged read's start: a write after either is stamped
//     later, so one identity at both moments is one version from before the listing to after
//     the read, never two versions of one stamp;
//   - the snapshot is younger than praisonReuse: the siblings' states it holds are at most
//     that old, as a fresh listing's are at most as old as the check takes.
// The answer is then a listing's view of the siblings while P held the judged bytes, as a
// fresh listing's is. A session written just now (what the daemon checks after a write)
// fails the second condition and gets a fresh listing; a repair's result (no Read) always
// does, and so does a reconcile, which writes what it finds.
//
// A sibling whose link the listing did not read (the session the listing was made for,
// which is not read as a sibling; a read that failed) is read when a check first answers
// from the snapshot.

const (
	praisonReuse   = 2 * time.Second
	praisonSnapMax = 8 << 20
)

// praisonSnap is a directory's last listing (praisonIndex.snaps).
type praisonSnap struct {
	began, ended time.Time               // the listing's start (before its first stat) and end (ix.now)
	names        []string                // every session of the listing, sorted
	keys         []praisonStatKey        // names[i]'s identity as stated (zero: not a regular file, or changed while read)
	kids         map[string][]praisonKid // by parent id: the sessions naming it
	unknown      []int                   // names whose link was not read
	cost         int
}

// praisonKid is a session naming a parent: its file name and session id.
type praisonKid struct{ name, session string }

// snapshot keeps the listing of dir that began at began: sibs (sorted by name) and path's
// own entry (self, stated selfKey, at selfAt in sibs' order, or -1 when not listed).
func (ix *praisonIndex) snapshot(dir string, began time.Time, sibs []praisonSib, self string, selfAt int, selfKey praisonStatKey) {
	n := len(sibs)
	if selfAt >= 0 {
		n++
	}
	sn := &praisonSnap{began: began, names: make([]string, 0, n), keys: make([]praisonStatKey, 0, n), kids: map[string][]praisonKid{}}
	sn.cost = 128 + len(dir)
	add := func(name string, key praisonStatKey) {
		sn.names = append(sn.names, name)
		sn.keys = append(sn.keys, key)
		sn.cost += 64 + len(name)
	}
	addSelf := func() { // its link is not read: the check that listed has its bytes
		sn.unknown = append(sn.unknown, len(sn.names))
		add(self, selfKey)
	}
	for i, s := range sibs {
		if i == selfAt {
			addSelf()
		}
		key := s.key
		if !s.stat || s.known && s.s.key != s.key {
			key = praisonStatKey{} // changed between its stat and its read
		}
		if !s.known {
			sn.unknown = append(sn.unknown, len(sn.names))
		}
		add(s.name, key)
		if s.known && s.s.link {
			sn.addKid(s.name, s.s)
		}
	}
	if selfAt == len(sibs) {
		addSelf()
	}
	ix.mu.Lock()
	defer ix.mu.Unlock()
	sn.ended = ix.now()
	if old := ix.snaps[dir]; old != nil {
		delete(ix.snaps, dir)
		ix.snapBytes -= old.cost
	}
	if sn.cost > ix.snapMax {
		return
	}
	if ix.snapBytes+sn.cost > ix.snapMax {
		for d, o := range ix.snaps {
			if !o.fresh(sn.ended) {
				delete(ix.snaps, d)
				ix.snapBytes -= o.cost
			}
		}
		if ix.snapBytes+sn.cost > ix.snapMax {
			clear(ix.snaps)
			ix.snapBytes = 0
		}
	}
	ix.snaps[dir] = sn
	ix.snapBytes += sn.cost
}

func (sn *praisonSnap) addKid(name string, s praisonSibling) {
	sn.kids[s.parent] = append(sn.kids[s.parent], praisonKid{name, s.session})
	sn.cost += 64 + len(s.parent) + len(s.session)
}

// fresh: the snapshot may still answer at now.
func (sn *praisonSnap) fresh(now time.Time) bool {
	return !now.Before(sn.ended) && now.Sub(sn.ended) <= praisonReuse
}

// reuse answers children(f.Path, sid) from the directory's snapshot when it may (see
// above).
func (ix *praisonIndex) reuse(f format.File, sid string) ([]string, bool) {
	dir, self := filepath.Dir(f.Path), filepath.Base(f.Path)
	if filepath.Join(dir, self) != f.Path {
		return nil, false
	}
	key := praisonKeyOf(f.Read)
	ix.mu.Lock()
	sn := ix.snaps[dir]
	ok := sn != nil && sn.fresh(ix.now())
	var at int
	if ok {
		var found bool
		at, found = slices.BinarySearch(sn.names, self)
		first := sn.began
		if f.ReadBegan.Before(first) {
			first = f.ReadBegan
		}
		ok = found && sn.keys[at] == key && f.Read.Ctime.Before(first.Add(-ix.racy))
	}
	var todo []int
	if ok {
		for _, i := range sn.unknown {
			if i != at {
				todo = append(todo, i)
			}
		}
	}
	ix.mu.Unlock()
	if !ok {
		return nil, false
	}
	// The links the listing did not read, read now (after the read judged, as a fresh
	// listing's would be). One that cannot be read names no parent, as in a listing.
	read := make([]praisonSibling, len(todo))
	got := make([]bool, len(todo))
	for k, i := range todo {
		data, _, err := fsio.ReadStable(filepath.Join(dir, sn.names[i]), praisonSibMax)
		switch {
		case errors.Is(err, fsio.ErrTooLarge):
			got[k] = true
		case err == nil:
			read[k], got[k] = praisonLink(data), true
		}
	}
	ix.mu.Lock()
	defer ix.mu.Unlock()
	ix.reused++
	var kids []string
	for _, c := range sn.kids[sid] {
		if c.name != self {
			kids = append(kids, c.session)
		}
	}
	current := ix.snaps[dir] == sn
	left := sn.unknown[:0]
	for _, i := range sn.unknown {
		k, mine := slices.BinarySearch(todo, i)
		if !mine {
			left = append(left, i)
			continue
		}
		// Still unknown (no other check learnt it meanwhile): this read answers.
		if s := read[k]; s.link && s.parent == sid {
			kids = append(kids, s.session)
		}
		if !got[k] || !current {
			left = append(left, i)
			continue
		}
		if read[k].link { // learnt once, for the checks after this one
			before := sn.cost
			sn.addKid(sn.names[i], read[k])
			ix.snapBytes += sn.cost - before
		}
	}
	sn.unknown = left
	sort.Strings(kids)
	return kids, true
}
