package apps

import (
	"bytes"
	"errors"
	"io/fs"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/sessionmedic/sessionmedic/heal/format"
	"github.com/sessionmedic/sessionmedic/heal/fsio"
	"github.com/sessionmedic/sessionmedic/heal/jsonv"
)

// PraisonAI's cross-file check (praisonai.md "What valid means" 6) needs, for each session
// checked, the parent_id and session_id of every other session of its directory. Read
// afresh for each file, a directory of n sessions costs n² reads and parses; praisonIndex
// remembers the two ids of each sibling it read, keyed by the sibling's identity, so a check
// costs one listing and one stat per sibling through the listing's descriptor
// (fsio.ReadDirIdentities), and a read only of a sibling new or changed. The stat per
// sibling per check stays: the directory's own identity does not move when a file is
// rewritten in place, and a change notification misses writes a stat sees (another host's,
// on a network file system; through a hard link elsewhere; after a queue overflow).
//
// Never stale: an entry is used only while the sibling's stat shows the very version that
// was read (device, inode, size, mtime and ctime, to the nanosecond). A rename over it (how
// PraisonAI writes) changes the inode; a rewrite in place changes the ctime, which no user
// can set back, as long as the write is told apart from the read's own version by its
// timestamp. That holds for a version whose ctime is older, by more than the timestamps'
// granularity and the kernel clock's tick, than the moment its read began: any later write
// is stamped with a later time. A version changed less than praisonRacy before its read
// began (the same window as git's "racily clean" entries) is read again at every check
// instead. What it cannot see: the system clock stepped back past a cached version's ctime,
// or (on a network file system) a server clock behind this host's by more than
// praisonRacy; and, run as root acting as the tree's owner, an ACL-only change of the
// directory (its mode and owner are part of the key).
//
// Memory: what it keeps is charged in bytes (praisonCost: a sibling's name and two ids, a
// directory's path, each with the map slot and headers around it) and never passes
// praisonIndexMax (8 MiB; about 36,000 siblings with PraisonAI's uuid names and ids). An id
// longer than praisonIDMax is not kept (that sibling is read at every check, as before);
// no file bytes are ever kept. When full, everything is dropped (each directory's next
// check reads its siblings once more). A sibling gone from the listing is dropped by the
// next check of its directory, and a directory left with none with it.
type praisonIndex struct {
	now  func() time.Time // the clock the racy window is measured on
	racy time.Duration    // praisonRacy (a test on a file system of fine timestamps shortens it)

	mu    sync.Mutex // guards dirs, n, bytes, snaps and snapBytes; never held across a read or stat
	dirs  map[string]*praisonDirIndex
	n     int // siblings kept in all of dirs
	bytes int // what dirs costs (praisonCost), at most praisonIndexMax

	snaps     map[string]*praisonSnap // each directory's last listing, by path (praisonai_snap.go)
	snapBytes int                     // what snaps costs, at most snapMax
	snapMax   int                     // praisonSnapMax (a test lowers it)
	reused    int                     // checks answered from a snapshot
}

const (
	praisonIndexMax = 8 << 20
	praisonIDMax    = 128
	praisonRacy     = 3 * time.Second // tick (≤ 10 ms) + the coarsest timestamps (FAT's 2 s)
	praisonSibMax   = 16 << 20        // a sibling larger is not read (fsio.ErrTooLarge)
)

// praisonCost is what keeping a sibling (name and ids) or a directory (its path as name)
// costs: the strings, and 128 bytes for the map slot, the key and the string headers.
func praisonCost(name string, s praisonSibling) int {
	return 128 + len(name) + len(s.parent) + len(s.session)
}

func newPraisonIndex() *praisonIndex {
	return &praisonIndex{now: time.Now, racy: praisonRacy, dirs: map[string]*praisonDirIndex{}, snaps: map[string]*praisonSnap{}, snapMax: praisonSnapMax}
}

// praisonDirIndex is what is known of a directory's sessions, valid while the directory
// itself is the one stat'ed (dir).
type praisonDirIndex struct {
	dir  praisonDirKey
	sibs map[string]praisonSibling // by file name
}

// praisonDirKey: the directory, and what decides whether its files can be read and are
// read (its mode, and its owner, which fsio's refusal of a foreign hard link compares).
type praisonDirKey struct {
	dev, ino uint64
	mode     uint32
	uid, gid uint32
}

// praisonStatKey is fsio.Identity.Same's fields of a version of a sibling.
type praisonStatKey struct {
	dev, ino     uint64
	size         int64
	mtime, ctime int64 // ns
}

func praisonKeyOf(id fsio.Identity) praisonStatKey {
	return praisonStatKey{id.Dev, id.Ino, id.Size, id.Mtime.UnixNano(), id.Ctime.UnixNano()}
}

// praisonSibling is what the check reads of a sibling's version: whether it is an object
// whose parent_id and session_id are strings, and those.
type praisonSibling struct {
	key             praisonStatKey
	link            bool
	parent, session string
}

// praisonLinkFields: the members a sibling is read for.
var praisonLinkFields = &jsonv.Fields{Members: map[string]*jsonv.Fields{"parent_id": nil, "session_id": nil}}

// praisonLink is what data, a sibling's bytes, says of its parent: as jsonv.Parse and Get
// read it, and PraisonAI's json.load (a key decoded: "parent\u005fid" is parent_id too).
func praisonLink(data []byte) praisonSibling {
	if !praisonMayLink(data) {
		return praisonSibling{}
	}
	v, err := jsonv.ParseFields(data, praisonDialect, praisonLinkFields)
	if err != nil || !isObj(v) {
		return praisonSibling{}
	}
	p, id := v.Get("parent_id"), v.Get("session_id")
	if !isStr(p) || !isStr(id) {
		return praisonSibling{}
	}
	return praisonSibling{link: true, parent: p.Str, session: id.Str}
}

// praisonMayLink: data may have a parent_id member, spelled out or with an escape (only
// \uXXXX can spell a letter or "_"); a document with neither names no parent. The search
// goes from "_" to "_" (rare in a session's text; a quote, the first byte of a quoted key,
// is the commonest byte of its JSON), then for an escape.
func praisonMayLink(data []byte) bool {
	for d := data; ; {
		i := bytes.IndexByte(d, '_')
		if i < 0 {
			break
		}
		if bytes.HasSuffix(d[:i], []byte("parent")) && bytes.HasPrefix(d[i+1:], []byte("id")) {
			return true
		}
		d = d[i+1:]
	}
	return bytes.Contains(data, []byte(`\u`))
}

// praisonSessionName is praisonSessionRe.MatchString(name), without the regexp (a check
// tests every name of its directory).
func praisonSessionName(name string) bool {
	stem, ok := strings.CutSuffix(name, ".json")
	if !ok || stem == "" {
		return false
	}
	for i := 0; i < len(stem); i++ {
		c := stem[i]
		if !(c == '_' || c == '-' || c >= '0' && c <= '9' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z') {
			return false
		}
	}
	return true
}

// childrenOf is children(f.Path, sid) for the check of f, answered from the directory's
// last listing when that listing saw the very version of f that was judged (reuse), else
// from a fresh listing.
func (ix *praisonIndex) childrenOf(f format.File, sid string) []string {
	if ix != nil && f.Read.Ino != 0 {
		if kids, ok := ix.reuse(f, sid); ok {
			return kids
		}
	}
	return ix.children(f.Path, sid)
}

// children lists the sibling sessions of path whose parent_id names sid, sorted, from a
// listing of its directory made now (a nil index reads every sibling). The listing is kept
// as the directory's snapshot (praisonSnap).
func (ix *praisonIndex) children(path, sid string) []string {
	dir := filepath.Dir(path)
	self := filepath.Base(path) // the one name whose filepath.Join(dir, name) may be path
	if filepath.Join(dir, self) != path {
		self = ""
	}
	var listed time.Time // when the listing began
	if ix != nil {
		listed = ix.now()
	}
	ents, did, err := fsio.ReadDirIdentities(dir, func(e fs.DirEntry) bool {
		return e.Type().IsRegular() && praisonSessionName(e.Name())
	})
	if err != nil {
		return nil
	}
	dk := praisonDirKey{did.Dev, did.Ino, did.Mode, did.UID, did.GID}
	sibs := make([]praisonSib, 0, len(ents))
	selfAt := -1 // where path's own entry goes in the listing's order
	var selfKey praisonStatKey
	for _, e := range ents {
		if e.Name() == self {
			selfAt = len(sibs)
			if e.Err == nil {
				selfKey = praisonKeyOf(e.ID)
			}
			continue
		}
		sibs = append(sibs, praisonSib{name: e.Name(), key: praisonKeyOf(e.ID), stat: e.Err == nil})
	}
	if ix != nil {
		ix.mu.Lock()
		if d := ix.dirs[dir]; d != nil && d.dir == dk {
			for i := range sibs {
				if c, ok := d.sibs[sibs[i].name]; ok && sibs[i].stat && c.key == sibs[i].key {
					sibs[i].s, sibs[i].known = c, true
				}
			}
			if len(d.sibs) > len(sibs)+1 { // entries of siblings gone (path's own may be there)
				live := make(map[string]bool, len(sibs)+1)
				live[filepath.Base(path)] = true
				for _, s := range sibs {
					live[s.name] = true
				}
				for n, c := range d.sibs {
					if !live[n] {
						delete(d.sibs, n)
						ix.n--
						ix.bytes -= praisonCost(n, c)
					}
				}
				if len(d.sibs) == 0 {
					delete(ix.dirs, dir)
					ix.bytes -= praisonCost(dir, praisonSibling{})
				}
			}
		}
		ix.mu.Unlock()
	}
	var fresh []praisonSib
	for i := range sibs {
		s := &sibs[i]
		if s.known {
			continue // the index's
		}
		var began time.Time
		if ix != nil {
			began = ix.now()
		}
		data, id, err := fsio.ReadStable(filepath.Join(dir, s.name), praisonSibMax)
		switch {
		case errors.Is(err, fsio.ErrTooLarge):
			s.s = praisonSibling{} // never read: names no parent
		case err != nil:
			continue // not read this time (gone, not regular, changed while read): not kept
		default:
			s.s = praisonLink(data)
		}
		s.s.key, s.known = praisonKeyOf(id), true
		if ix != nil && id.Ctime.Before(began.Add(-ix.racy)) &&
			len(s.s.parent) <= praisonIDMax && len(s.s.session) <= praisonIDMax {
			fresh = append(fresh, *s)
		}
	}
	if len(fresh) > 0 {
		ix.mu.Lock()
		ix.keep(dir, dk, fresh)
		ix.mu.Unlock()
	}
	var kids []string
	for _, s := range sibs {
		if s.s.link && s.s.parent == sid {
			kids = append(kids, s.s.session)
		}
	}
	sort.Strings(kids)
	if ix != nil && self != "" {
		ix.snapshot(dir, listed, sibs, self, selfAt, selfKey)
	}
	return kids
}

// praisonSib is a sibling as a check sees it.
type praisonSib struct {
	name  string
	key   praisonStatKey // its identity now
	stat  bool           // key was stated
	s     praisonSibling
	known bool // s is known: the index's, or read (s.key is then the version read)
}

// keep puts what was read of the siblings fresh in dir (stated dk) in the index, within
// praisonIndexMax (under ix.mu).
func (ix *praisonIndex) keep(dir string, dk praisonDirKey, fresh []praisonSib) {
	d := ix.dirs[dir]
	if d != nil && d.dir != dk { // another directory, or its mode or owner changed
		for n, c := range d.sibs {
			ix.n--
			ix.bytes -= praisonCost(n, c)
		}
		clear(d.sibs)
		d.dir = dk
	}
	for _, s := range fresh {
		add := praisonCost(s.name, s.s)
		if d == nil {
			add += praisonCost(dir, praisonSibling{})
		}
		old, had := praisonSibling{}, false
		if d != nil {
			old, had = d.sibs[s.name]
		}
		if had {
			add -= praisonCost(s.name, old)
		}
		if ix.bytes+add > praisonIndexMax {
			clear(ix.dirs)
			ix.n, ix.bytes = 0, 0
			d, had = nil, false
			add = praisonCost(s.name, s.s) + praisonCost(dir, praisonSibling{})
		}
		if d == nil {
			d = &praisonDirIndex{dir: dk, sibs: map[string]praisonSibling{}}
			ix.dirs[dir] = d
		}
		if !had {
			ix.n++
		}
		d.sibs[s.name] = s.s
		ix.bytes += add
	}
}
