package jsonv

import "unsafe"

// Arena holds the nodes of trees built one after another by a checklist that reads each tree
// and drops it before the next is built (a record at a time, or a document's history an
// element at a time: [Arena.Walk]): its nodes, member and element lists are reused from one
// build to the next instead of allocated for each. Strings are still copied out, so a
// checklist may keep those. The zero Arena is ready; it is not safe for concurrent use.
type Arena struct {
	vals   [][]Value // chunks of nodes
	vc, vn int       // the chunk in use and its next free node
	keys   []Member  // member lists of the tree being built
	items  []*Value  // element lists of the tree being built
	mstack []Member  // the builder's stacks, kept between builds
	istack []*Value
}

const arenaChunk = 64

// ParseFieldsValid is [ParseFieldsValid] building the tree in a: the tree of the previous
// build from a is no longer valid (its nodes are reused).
func (a *Arena) ParseFieldsValid(b []byte, d Dialect, f *Fields) *Value {
	a.reset()
	p := builder{b: b, surr: d.Surrogates, d: d, max: MaxDepth, own: true, arena: a,
		members: a.mstack[:0], items: a.istack[:0]}
	v, _ := p.shaped(skipWS(b, 0), f)
	a.mstack, a.istack = p.members[:0], p.items[:0]
	return v
}

// ParseFieldsKeys is ParseFieldsValid of b whose top-level members' keys begin at keys, as
// [ValidTop] gave them: only the members f names are looked at, the others passed over
// without a byte of them read. Nil keys (not known) is ParseFieldsValid.
func (a *Arena) ParseFieldsKeys(b []byte, d Dialect, f *Fields, keys []int32) *Value {
	i := skipWS(b, 0)
	if keys == nil || b[i] != '{' || f == nil || f.Members == nil {
		return a.ParseFieldsValid(b, d, f)
	}
	a.reset()
	p := builder{b: b, surr: d.Surrogates, d: d, max: MaxDepth, own: true, arena: a,
		members: a.mstack[:0], items: a.istack[:0]}
	v := p.alloc()
	v.Start, v.Type = i, Object
	for _, ks := range keys {
		sub, named, key, end := p.member(int(ks), f)
		if !named {
			continue
		}
		m := Member{Key: key, KeyStart: int(ks)}
		m.Val, _ = p.shaped(skipWS(b, skipWS(b, end)+1), sub) // past ':'
		p.members = append(p.members, m)
	}
	v.Keys = p.keepMembers(p.members)
	clear(p.members)
	end := len(b)
	for isWS[b[end-1]] {
		end--
	}
	v.End = end // the object's '}' is b's last byte but whitespace
	a.mstack, a.istack = p.members[:0], p.items[:0]
	return v
}

// build is buildValid of b (the same tree: to depth levels, 0 whole, or as f says) in a: the
// tree of the previous build from a is no longer valid. A whole tree's strings share one copy
// of b, as parseValid's do; the others are copied out one by one.
func (a *Arena) build(b []byte, d Dialect, depth int, f *Fields) *Value {
	v, _ := a.buildAt(b, skipWS(b, 0), d, depth, f, depth == 0 && f == nil)
	return v
}

// buildAt is build of the value at b[i] (b holds it, and may hold more: its offsets are b's),
// with the offset just past it; shared: its strings share one copy of b, which is then the
// value's bytes alone.
func (a *Arena) buildAt(b []byte, i int, d Dialect, depth int, f *Fields, shared bool) (*Value, int) {
	a.reset()
	p := builder{b: b, surr: d.Surrogates, d: d, max: MaxDepth, own: true, arena: a,
		members: a.mstack[:0], items: a.istack[:0]}
	var v *Value
	var end int
	switch {
	case f != nil:
		v, end = p.shaped(i, f)
	default:
		if shared {
			p.src, p.own = string(b), false
		}
		if depth > 0 && depth < MaxDepth {
			p.max = depth
		}
		v, end = p.value(i)
	}
	a.mstack, a.istack = p.members[:0], p.items[:0]
	return v, end
}

// shallow is a node of a, of type t and bounds [start, end) only: the whole tree of a build
// that reads no more of a container (the tree of the previous build is no longer valid).
func (a *Arena) shallow(t Type, start, end int) *Value {
	a.reset()
	v := a.value()
	v.Type, v.Start, v.End = t, start, end
	return v
}

// Held is the bytes of nodes and lists a holds for reuse: what keeping a for later builds
// costs.
func (a *Arena) Held() int {
	return len(a.vals)*arenaChunk*int(unsafe.Sizeof(Value{})) +
		(cap(a.keys)+cap(a.mstack))*int(unsafe.Sizeof(Member{})) +
		(cap(a.items)+cap(a.istack))*int(unsafe.Sizeof((*Value)(nil)))
}

func (a *Arena) reset() {
	// The nodes the last tree used (every chunk before vc, vn of chunk vc) are cleared: no
	// string or list of it is kept alive, and the build takes its nodes zeroed.
	for i := 0; i < a.vc && i < len(a.vals); i++ {
		clear(a.vals[i])
	}
	if a.vc < len(a.vals) {
		clear(a.vals[a.vc][:a.vn])
	}
	a.vc, a.vn = 0, 0
	clear(a.keys)
	clear(a.items)
	a.keys, a.items = a.keys[:0], a.items[:0]
}

func (a *Arena) value() *Value {
	if a.vc < len(a.vals) && a.vn == len(a.vals[a.vc]) {
		a.vc, a.vn = a.vc+1, 0
	}
	if a.vc == len(a.vals) {
		a.vals = append(a.vals, make([]Value, arenaChunk))
	}
	v := &a.vals[a.vc][a.vn]
	a.vn++
	return v
}

// members is a copy of m in the arena, with no room to append into (a list given out is
// never written by the next).
func (a *Arena) members(m []Member) []Member {
	if len(m) == 0 {
		return nil // as append([]Member(nil)) gives
	}
	if len(a.keys)+len(m) > cap(a.keys) {
		// A new buffer: the lists already given out keep the old one.
		a.keys = make([]Member, 0, max(2*cap(a.keys), len(m), arenaChunk))
	}
	n := len(a.keys)
	a.keys = append(a.keys, m...)
	return a.keys[n:len(a.keys):len(a.keys)]
}

// elements is members of an array's elements.
func (a *Arena) elements(e []*Value) []*Value {
	if len(e) == 0 {
		return nil
	}
	if len(a.items)+len(e) > cap(a.items) {
		a.items = make([]*Value, 0, max(2*cap(a.items), len(e), arenaChunk))
	}
	n := len(a.items)
	a.items = append(a.items, e...)
	return a.items[n:len(a.items):len(a.items)]
}
