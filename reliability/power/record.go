// Package power proves the heal protocol against power loss, not just process death. A
// [Recorder] sits behind the engine's file-operation seam (fsio.FS.Faults): before each
// operation it snapshots the tree and turns what changed since the previous one into logical
// operations — mkdir, create, write (with its offset and bytes), truncate, fsync, link,
// rename, unlink, rmdir, directory fsync, chmod — so that unhooked operations (unlinks) are
// seen too.
// [States] then builds the disks a power cut can leave at each point of that sequence under
// an abstract persistence model (see [Pending]), and the campaign in this package's tests
// runs the next start on each of them and checks DESIGN §7's invariants.
//
//	go test ./reliability/power -count=1 -v          # CI: a sampled campaign
//	go test ./reliability/power -count=1 -v -long    # ≥ 1,000,000 crash states
package power

import (
	"bytes"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"syscall"
)

// Op is one logical file operation. Paths are relative to the recorder's root.
type Op struct {
	Kind string      // mkdir create write truncate chmod chown fsync link rename unlink rmdir fsync-dir sync
	Path string      // the name made or removed; fsync-dir: the directory; sync: a prefix
	From string      // rename and link: the source name
	Ino  int         // the abstract inode (file operations)
	Off  int64       // write: the offset
	Data []byte      // write: the bytes
	Size int64       // truncate: the new size
	Mode fs.FileMode // create and chmod: the permission bits
	Own  Owner       // create, link and chown: the owner
}

// Owner is a file's user and group.
type Owner struct{ UID, GID uint32 }

// Tree is a file system: names (files and directories), the bytes of each inode, its
// permission bits and its owner.
type Tree struct {
	Names map[string]Node
	Data  map[int][]byte
	Mode  map[int]fs.FileMode
	Own   map[int]Owner
}

// Node is a name in a tree: a directory, or a link to an inode.
type Node struct {
	Dir  bool
	Ino  int
	Mode fs.FileMode
}

func (t Tree) clone() Tree {
	c := Tree{Names: make(map[string]Node, len(t.Names)), Data: make(map[int][]byte, len(t.Data)), Mode: make(map[int]fs.FileMode, len(t.Mode)), Own: make(map[int]Owner, len(t.Own))}
	for k, v := range t.Names {
		c.Names[k] = v
	}
	for k, v := range t.Data {
		c.Data[k] = v
	}
	for k, v := range t.Mode {
		c.Mode[k] = v
	}
	for k, v := range t.Own {
		c.Own[k] = v
	}
	return c
}

type entry struct {
	dir  bool
	real uint64 // the inode number on disk
	abs  int    // the abstract inode
	data []byte
	mode fs.FileMode
	own  Owner
}

// Recorder records the operations performed under Root. Hook is the seam's function; Start
// and Finish bracket the recording. Names Skip reports (app lock files) are left out.
type Recorder struct {
	Root string
	Skip func(rel string) bool

	mu       sync.Mutex
	init     Tree
	prev     map[string]entry
	op, path string // the operation the last hook announced
	ops      []Op
	next     int
}

// Start snapshots the tree as it is: the durable initial state.
func (r *Recorder) Start() {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.next = 1
	r.prev = r.snap(nil)
	r.init = r.toTree(r.prev)
	r.ops, r.op, r.path = nil, "", ""
}

// Hook is fsio.FS.Faults: it records what happened since the last call and never fails.
func (r *Recorder) Hook(op, path string) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.advance()
	r.op, r.path = op, r.rel(path)
	return nil
}

// Barrier records a sync of everything under prefix (a setup step made durable).
func (r *Recorder) Barrier(prefix string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.advance()
	r.op, r.path = "", ""
	r.ops = append(r.ops, Op{Kind: "sync", Path: prefix})
}

// Len is the number of operations recorded so far (after a Barrier, exact).
func (r *Recorder) Len() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.ops)
}

// Finish records what happened since the last hook and returns the initial tree, the
// operations and the final tree.
func (r *Recorder) Finish() (Tree, []Op, Tree) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.advance()
	r.op, r.path = "", ""
	return r.init, r.ops, r.toTree(r.prev)
}

func (r *Recorder) rel(p string) string {
	rel, err := filepath.Rel(r.Root, p)
	if err != nil || rel == ".." || strings.HasPrefix(rel, "../") {
		return "" // outside the root: not modelled
	}
	return rel
}

func (r *Recorder) toTree(s map[string]entry) Tree {
	t := Tree{Names: map[string]Node{}, Data: map[int][]byte{}, Mode: map[int]fs.FileMode{}, Own: map[int]Owner{}}
	for name, e := range s {
		t.Names[name] = Node{Dir: e.dir, Ino: e.abs, Mode: e.mode}
		if !e.dir {
			t.Data[e.abs] = e.data
			t.Mode[e.abs] = e.mode
			t.Own[e.abs] = e.own
		}
	}
	return t
}

// snap reads the tree, giving each file its abstract inode: that of the same name (same
// inode number) before, else that of another name with its inode number before (a rename or
// a link), else a new one. prev is the previous snapshot (nil at the start).
func (r *Recorder) snap(prev map[string]entry) map[string]entry {
	byReal := map[uint64]int{}
	for _, e := range prev {
		if !e.dir {
			byReal[e.real] = e.abs
		}
	}
	cur := map[string]entry{}
	filepath.WalkDir(r.Root, func(p string, d fs.DirEntry, err error) error {
		if err != nil || p == r.Root {
			return nil
		}
		rel, _ := filepath.Rel(r.Root, p)
		if r.Skip != nil && r.Skip(rel) {
			if d.IsDir() {
				return filepath.SkipDir
			}
			return nil
		}
		fi, err := os.Lstat(p)
		if err != nil {
			return nil
		}
		st := fi.Sys().(*syscall.Stat_t)
		e := entry{dir: fi.IsDir(), real: st.Ino, mode: fi.Mode().Perm(), own: Owner{st.Uid, st.Gid}}
		if !e.dir {
			if !fi.Mode().IsRegular() {
				return nil
			}
			if e.data, err = os.ReadFile(p); err != nil {
				return nil
			}
			if pe, ok := prev[rel]; ok && !pe.dir && pe.real == e.real {
				e.abs = pe.abs
			} else if a, ok := byReal[e.real]; ok {
				e.abs = a
			} else {
				e.abs = r.next
				r.next++
			}
		}
		cur[rel] = e
		return nil
	})
	return cur
}

// advance turns what changed since the last snapshot into operations. The announced
// operation ran first: an fsync is recorded before the changes, which came after it.
func (r *Recorder) advance() {
	cur := r.snap(r.prev)
	switch r.op {
	case "fsync":
		if e, ok := r.prev[r.path]; ok && !e.dir && r.path != "" {
			r.ops = append(r.ops, Op{Kind: "fsync", Path: r.path, Ino: e.abs})
		}
	case "fsync-dir":
		if r.path != "" {
			r.ops = append(r.ops, Op{Kind: "fsync-dir", Path: r.path})
		}
	}
	r.ops = append(r.ops, diff(r.prev, cur, r.op == "link")...)
	r.prev = cur
}

func sortedNames(m map[string]entry) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Slice(out, func(i, j int) bool {
		if ci, cj := strings.Count(out[i], "/"), strings.Count(out[j], "/"); ci != cj {
			return ci < cj
		}
		return out[i] < out[j]
	})
	return out
}

// diff is the operations that take prev to cur: new directories, new names (created,
// renamed or linked), data changes, then removed names and directories. linked: the
// announced operation was a link, so a name that moved is a link and an unlink, and a new
// inode was written and fsynced unnamed before its link.
func diff(prev, cur map[string]entry, linked bool) []Op {
	var ops []Op
	names := sortedNames(cur)
	prevAt := map[int]string{} // abstract inode → a name it had
	for _, n := range sortedNames(prev) {
		if e := prev[n]; !e.dir {
			if _, ok := prevAt[e.abs]; !ok {
				prevAt[e.abs] = n
			}
		}
	}
	for _, n := range names {
		if e := cur[n]; e.dir {
			if p, ok := prev[n]; !ok || !p.dir {
				ops = append(ops, Op{Kind: "mkdir", Path: n})
			}
		}
	}
	moved := map[string]bool{}  // names renamed away
	published := map[int]bool{} // inodes linked in whole
	for _, n := range names {
		e := cur[n]
		if e.dir {
			continue
		}
		if p, ok := prev[n]; ok && !p.dir && p.abs == e.abs {
			continue
		}
		src, existed := prevAt[e.abs]
		if !existed && linked {
			// An unnamed file (O_TMPFILE), written and fsynced, then linked in.
			ops = append(ops, dataOps(n, e.abs, nil, e.data)...)
			ops = append(ops, Op{Kind: "fsync", Path: n, Ino: e.abs}, Op{Kind: "link", Path: n, Ino: e.abs, Mode: e.mode, Own: e.own})
			published[e.abs] = true
			continue
		}
		if !existed {
			ops = append(ops, Op{Kind: "create", Path: n, Ino: e.abs, Mode: e.mode, Own: e.own})
			continue
		}
		if c, still := cur[src]; linked || (still && !c.dir && c.abs == e.abs) {
			ops = append(ops, Op{Kind: "link", Path: n, From: src, Ino: e.abs})
			continue
		}
		moved[src] = true
		ops = append(ops, Op{Kind: "rename", Path: n, From: src, Ino: e.abs})
	}
	seen := map[int]bool{}
	for _, n := range names {
		e := cur[n]
		if e.dir || seen[e.abs] || published[e.abs] {
			continue
		}
		seen[e.abs] = true
		var old []byte
		if src, ok := prevAt[e.abs]; ok {
			old = prev[src].data
			if o := prev[src].own; o != e.own {
				ops = append(ops, Op{Kind: "chown", Path: n, Ino: e.abs, Own: e.own})
			}
			if m := prev[src].mode; m != e.mode {
				ops = append(ops, Op{Kind: "chmod", Path: n, Ino: e.abs, Mode: e.mode})
			}
		}
		ops = append(ops, dataOps(n, e.abs, old, e.data)...)
	}
	for _, n := range sortedNames(prev) {
		p := prev[n]
		if c, ok := cur[n]; ok && c.dir == p.dir && (p.dir || c.abs == p.abs) {
			continue
		}
		if moved[n] {
			continue
		}
		if _, replaced := cur[n]; replaced && !p.dir {
			continue // a rename over it removed it
		}
		kind := "unlink"
		if p.dir {
			kind = "rmdir"
		}
		ops = append(ops, Op{Kind: kind, Path: n, Ino: p.abs})
	}
	return ops
}

// dataOps is what takes an inode's bytes from old to cur: an append, a truncate, or a
// write of the whole (then a truncate, if it shrank).
func dataOps(name string, ino int, old, cur []byte) []Op {
	switch {
	case bytes.Equal(old, cur):
		return nil
	case len(cur) < len(old) && bytes.Equal(old[:len(cur)], cur):
		return []Op{{Kind: "truncate", Path: name, Ino: ino, Size: int64(len(cur))}}
	case len(old) < len(cur) && bytes.Equal(cur[:len(old)], old):
		return []Op{{Kind: "write", Path: name, Ino: ino, Off: int64(len(old)), Data: cur[len(old):]}}
	}
	ops := []Op{{Kind: "write", Path: name, Ino: ino, Data: cur}}
	if len(cur) < len(old) {
		ops = append(ops, Op{Kind: "truncate", Path: name, Ino: ino, Size: int64(len(cur))})
	}
	return ops
}
