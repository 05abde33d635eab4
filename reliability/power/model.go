package power

import (
	"crypto/sha256"
	"encoding/binary"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"sort"
	"strings"
)

// The persistence model (after ALICE's abstract persistence model, as weak as ext4's
// data=ordered allows and then some): a power cut after the first k operations leaves
//
//   - the bytes of an inode as they were at its last fsync (before k): a write or truncate
//     followed by an fsync of its inode is durable;
//   - the entries of a directory as they were at its last fsync: a create, mkdir, link,
//     unlink or rmdir followed by an fsync of its directory is durable, and a rename once
//     both its directories were fsynced;
//   - everything under a "sync" barrier's prefix (a setup step made durable);
//   - every other operation before k (pending) independently kept or dropped; a pending write
//     may also land torn at a 4 KiB boundary of the file (a prefix of its blocks, the size cut
//     there or grown to its end with zeros), with any subset of its blocks landed (writeback
//     goes page by page, in no set order), or as a zero-filled extent (the size grew, the data
//     never came);
//   - a change of permission bits or owner (chmod, chown) durable with its inode's fsync,
//     like the data.
//
// Kept pending operations are applied in their program order, or (in a sampled share of the
// states) with the pending data operations — writes, truncates, chmods, chowns — permuted among
// themselves: data reaches the disk in no set order. Namespace operations keep their program
// order among themselves, as the journals of ext4 and XFS commit them; each may still be
// dropped on its own, so a later one can survive an earlier one.

// BlockSize is the granularity at which a write may tear.
const BlockSize = 4096

// Alt is how one pending operation reached the disk.
type Alt struct {
	Drop bool
	Cut  int64  // write: the bytes of it that landed, from its start (-1: all of them)
	Zero bool   // write: the size grew to the write's end; the bytes that did not land are zeros
	Mask uint64 // write: when not 0, the blocks of it that landed (bit i: its i-th block); Cut is ignored
}

func (a Alt) String() string {
	switch {
	case a.Drop:
		return "dropped"
	case a.Mask != 0 && a.Zero:
		return fmt.Sprintf("blocks %b landed, zeros elsewhere", a.Mask)
	case a.Mask != 0:
		return fmt.Sprintf("blocks %b landed", a.Mask)
	case a.Cut < 0 && !a.Zero:
		return "kept"
	case a.Cut <= 0:
		return "zero-filled"
	case a.Zero:
		return fmt.Sprintf("torn at %d, zeros after", a.Cut)
	}
	return fmt.Sprintf("torn at %d", a.Cut)
}

var keep = Alt{Cut: -1}

// Pending returns the indexes of the operations in ops[:k] that no barrier before k made
// durable, in order.
func Pending(ops []Op, k int) []int {
	inos, dirs := map[int]bool{}, map[string]bool{}
	var prefixes []string
	var out []int
	for i := k - 1; i >= 0; i-- {
		o := ops[i]
		switch o.Kind {
		case "fsync":
			inos[o.Ino] = true
			continue
		case "fsync-dir":
			dirs[o.Path] = true
			continue
		case "sync":
			prefixes = append(prefixes, o.Path)
			continue
		}
		if !durable(o, inos, dirs, prefixes) {
			out = append(out, i)
		}
	}
	for i, j := 0, len(out)-1; i < j; i, j = i+1, j-1 {
		out[i], out[j] = out[j], out[i]
	}
	return out
}

func under(p, prefix string) bool { return p == prefix || strings.HasPrefix(p, prefix+"/") }

func durable(o Op, inos map[int]bool, dirs map[string]bool, prefixes []string) bool {
	for _, p := range prefixes {
		if under(o.Path, p) && (o.From == "" || under(o.From, p)) {
			return true
		}
	}
	switch o.Kind {
	case "write", "truncate", "chmod", "chown":
		return inos[o.Ino]
	case "rename":
		return dirs[filepath.Dir(o.Path)] && dirs[filepath.Dir(o.From)]
	}
	return dirs[filepath.Dir(o.Path)]
}

// Alts lists every way op can land when it is pending.
func Alts(o Op) []Alt {
	if o.Kind != "write" {
		return []Alt{keep, {Drop: true}}
	}
	out := []Alt{keep, {Drop: true}, {Cut: 0, Zero: true}}
	cs := cuts(o)
	for _, c := range cs {
		out = append(out, Alt{Cut: c}, Alt{Cut: c, Zero: true})
	}
	if p := len(cs) + 1; p <= maxScatterEnum {
		for m := uint64(1); m < 1<<p-1; m++ {
			if m&(m+1) != 0 { // not a prefix of the blocks: those are the cuts above
				out = append(out, Alt{Cut: -1, Mask: m}, Alt{Cut: -1, Mask: m, Zero: true})
			}
		}
	}
	return out
}

// maxScatterEnum: writes of up to this many blocks have every subset of their blocks
// enumerated; longer ones have subsets sampled (of their first 64 blocks).
const maxScatterEnum = 4

// cuts are the lengths of the write's prefixes that end at a block boundary of the file.
func cuts(o Op) []int64 {
	var out []int64
	for b := (o.Off/BlockSize + 1) * BlockSize; b < o.Off+int64(len(o.Data)); b += BlockSize {
		out = append(out, b-o.Off)
	}
	return out
}

// sampleAlt draws a way op lands: kept, dropped, zero-filled or torn alike (a torn write at
// one of its boundaries, with or without zeros after).
func sampleAlt(o Op, r *rand.Rand) Alt {
	if o.Kind != "write" {
		return []Alt{keep, {Drop: true}}[r.IntN(2)]
	}
	cs := cuts(o)
	n := 3
	switch {
	case len(cs) >= 2:
		n = 5
	case len(cs) > 0:
		n = 4
	}
	switch r.IntN(n) {
	case 0:
		return keep
	case 1:
		return Alt{Drop: true}
	case 2:
		return Alt{Cut: 0, Zero: true}
	case 3:
		return Alt{Cut: cs[r.IntN(len(cs))], Zero: r.IntN(2) == 0}
	}
	p := min(len(cs)+1, 64)
	all := uint64(1)<<p - 1
	if p == 64 {
		all = ^uint64(0)
	}
	for {
		m := r.Uint64() & all
		if m != 0 && m != all && m&(m+1) != 0 {
			return Alt{Cut: -1, Mask: m, Zero: r.IntN(2) == 0}
		}
	}
}

// State is one crash state: the point k and how each pending operation landed. Order, when
// set, permutes the pending data operations: the j-th of them in program order is applied
// where the Order[j]-th of them was.
type State struct {
	K     int
	Pend  []int
	Alts  []Alt
	Order []int
}

// isData: the operations whose writeback order is not set (see the model above).
func isData(o Op) bool {
	return o.Kind == "write" || o.Kind == "truncate" || o.Kind == "chmod" || o.Kind == "chown"
}

// Describe names the state's choices for a report.
func (s State) Describe(ops []Op) string {
	var parts []string
	for i, p := range s.Pend {
		o := ops[p]
		parts = append(parts, fmt.Sprintf("#%d %s %s %s", p, o.Kind, o.Path, s.Alts[i]))
	}
	last := "start"
	if s.K > 0 {
		last = fmt.Sprintf("#%d %s %s", s.K-1, ops[s.K-1].Kind, ops[s.K-1].Path)
	}
	order := ""
	if s.Order != nil {
		order = fmt.Sprintf("; data operations landed in the order %v", s.Order)
	}
	return fmt.Sprintf("power cut after %d operations (last %s); pending: [%s]%s", s.K, last, strings.Join(parts, "; "), order)
}

// Count is the number of states at point k (capped at limit+1).
func Count(ops []Op, pend []int, limit int) int {
	n := 1
	for _, p := range pend {
		n *= len(Alts(ops[p]))
		if n > limit {
			return limit + 1
		}
	}
	return n
}

// States calls f with the crash states at each point in [from, len(ops)]: all of them where
// they number at most limit, else limit of them drawn with r. f returns false to stop.
func States(ops []Op, from, limit int, r *rand.Rand, f func(State) bool) {
	for k := from; k <= len(ops); k++ {
		pend := Pending(ops, k)
		n := Count(ops, pend, limit)
		alts := make([][]Alt, len(pend))
		for i, p := range pend {
			alts[i] = Alts(ops[p])
		}
		for j := 0; j < min(n, limit); j++ {
			s := State{K: k, Pend: pend, Alts: make([]Alt, len(pend))}
			x := j
			for i := range pend {
				if n <= limit {
					s.Alts[i] = alts[i][x%len(alts[i])]
					x /= len(alts[i])
				} else {
					s.Alts[i] = sampleAlt(ops[pend[i]], r)
				}
			}
			if n > limit && r.IntN(4) == 0 {
				s.Order = permuteData(ops, pend, r)
			}
			if !f(s) {
				return
			}
		}
	}
}

// permuteData draws an order of the pending data operations (nil when fewer than two).
func permuteData(ops []Op, pend []int, r *rand.Rand) []int {
	n := 0
	for _, p := range pend {
		if isData(ops[p]) {
			n++
		}
	}
	if n < 2 {
		return nil
	}
	return r.Perm(n)
}

// Build is the disk a state leaves: init with the operations before s.K applied, durable
// ones as they ran, pending ones as s says.
func Build(init Tree, ops []Op, s State) Tree {
	t := init.clone()
	var data []int // indexes into s.Pend of the pending data operations, in program order
	if s.Order != nil {
		for j, p := range s.Pend {
			if isData(ops[p]) {
				data = append(data, j)
			}
		}
	}
	pi, di := 0, 0
	for i := 0; i < s.K; i++ {
		o, a := ops[i], keep
		if pi < len(s.Pend) && s.Pend[pi] == i {
			j := pi
			if s.Order != nil && isData(o) {
				j = data[s.Order[di]]
				di++
			}
			o, a = ops[s.Pend[j]], s.Alts[j]
			pi++
		}
		if !a.Drop {
			t.apply(o, a)
		}
	}
	return t
}

func (t *Tree) apply(o Op, a Alt) {
	switch o.Kind {
	case "mkdir":
		t.Names[o.Path] = Node{Dir: true, Mode: 0o755}
	case "create":
		t.Names[o.Path] = Node{Ino: o.Ino}
		if _, ok := t.Data[o.Ino]; !ok {
			t.Data[o.Ino] = nil
		}
		if _, ok := t.Mode[o.Ino]; !ok {
			t.Mode[o.Ino], t.Own[o.Ino] = o.Mode, o.Own
		}
	case "chmod":
		t.Mode[o.Ino] = o.Mode
	case "chown":
		t.Own[o.Ino] = o.Own
	case "link":
		t.Names[o.Path] = Node{Ino: o.Ino}
		if _, ok := t.Mode[o.Ino]; !ok && o.Mode != 0 {
			t.Mode[o.Ino], t.Own[o.Ino] = o.Mode, o.Own
		}
	case "rename":
		if n, ok := t.Names[o.From]; ok && !n.Dir && n.Ino == o.Ino {
			delete(t.Names, o.From)
		}
		t.Names[o.Path] = Node{Ino: o.Ino}
	case "unlink", "rmdir":
		if n, ok := t.Names[o.Path]; ok && (n.Dir || n.Ino == o.Ino) {
			delete(t.Names, o.Path)
		}
	case "truncate":
		t.Data[o.Ino] = resize(t.Data[o.Ino], o.Size)
	case "write":
		if a.Mask != 0 {
			t.Data[o.Ino] = scatter(t.Data[o.Ino], o, a)
			return
		}
		land := int64(len(o.Data))
		if a.Cut >= 0 {
			land = a.Cut
		}
		d := t.Data[o.Ino]
		end := o.Off + land
		if a.Zero {
			end = o.Off + int64(len(o.Data))
		}
		d = resize(d, max(int64(len(d)), end))
		copy(d[o.Off:], o.Data[:land])
		t.Data[o.Ino] = d
	}
}

// scatter is d after the blocks of the write that a.Mask names landed: the size grows to
// the end of the last block landed, or with a.Zero to the write's end.
func scatter(d []byte, o Op, a Alt) []byte {
	bounds := append(append([]int64{0}, cuts(o)...), int64(len(o.Data)))
	end := int64(len(d))
	if a.Zero {
		end = max(end, o.Off+int64(len(o.Data)))
	}
	for i := 0; i+1 < len(bounds) && i < 64; i++ {
		if a.Mask&(1<<i) != 0 {
			end = max(end, o.Off+bounds[i+1])
		}
	}
	d = resize(d, end)
	for i := 0; i+1 < len(bounds) && i < 64; i++ {
		if a.Mask&(1<<i) != 0 {
			copy(d[o.Off+bounds[i]:], o.Data[bounds[i]:bounds[i+1]])
		}
	}
	return d
}

// resize returns a copy of b of n bytes (zeros where it grew).
func resize(b []byte, n int64) []byte {
	out := make([]byte, n)
	copy(out, b)
	return out
}

// visible lists the names reachable from the root (every parent a directory), parents first.
func (t Tree) visible() []string {
	var names []string
	for n := range t.Names {
		names = append(names, n)
	}
	sort.Slice(names, func(i, j int) bool {
		if ci, cj := strings.Count(names[i], "/"), strings.Count(names[j], "/"); ci != cj {
			return ci < cj
		}
		return names[i] < names[j]
	})
	var out []string
	for _, n := range names {
		if d := filepath.Dir(n); d == "." || t.Names[d].Dir {
			out = append(out, n)
		} else {
			delete(t.Names, n) // unreachable: so are its children
		}
	}
	return out
}

// Digest identifies what a state shows (names, links, bytes, modes): states alike are
// checked once.
func (t Tree) Digest() [32]byte {
	h := sha256.New()
	first := map[int]string{}
	for _, n := range t.visible() {
		nd := t.Names[n]
		fmt.Fprintf(h, "%s\x00%v\x00", n, nd.Dir)
		if nd.Dir {
			continue
		}
		if f, ok := first[nd.Ino]; ok {
			fmt.Fprintf(h, "=%s\x00", f)
			continue
		}
		first[nd.Ino] = n
		d := t.Data[nd.Ino]
		binary.Write(h, binary.LittleEndian, int64(len(d)))
		h.Write(d)
		fmt.Fprintf(h, "%o\x00%v\x00", t.Mode[nd.Ino], t.Own[nd.Ino])
	}
	var s [32]byte
	h.Sum(s[:0])
	return s
}

// Materialise lays the tree out under dir (which must exist), passing every file's bytes
// through fix (which must keep their length).
func (t Tree) Materialise(dir string, fix func([]byte) []byte) error {
	first := map[int]string{}
	for _, n := range t.visible() {
		nd, p := t.Names[n], filepath.Join(dir, n)
		if nd.Dir {
			if err := os.Mkdir(p, 0o755); err != nil {
				return err
			}
			continue
		}
		if f, ok := first[nd.Ino]; ok {
			if err := os.Link(filepath.Join(dir, f), p); err != nil {
				return err
			}
			continue
		}
		first[nd.Ino] = n
		mode := t.Mode[nd.Ino]
		if mode == 0 {
			mode = 0o600
		}
		if err := os.WriteFile(p, fix(t.Data[nd.Ino]), mode); err != nil {
			return err
		}
		if err := os.Chmod(p, mode); err != nil {
			return err
		}
		if o, ok := t.Own[nd.Ino]; ok && os.Geteuid() == 0 {
			if err := os.Lchown(p, int(o.UID), int(o.GID)); err != nil {
				return err
			}
		}
	}
	return nil
}
