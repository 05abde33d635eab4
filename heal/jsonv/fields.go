package jsonv

import (
	"bytes"
	"sync"
)

// Fields names what a checklist reads of a value, for ParseFields. A nil *Fields builds a
// scalar (its string decoded) and an object or array as its type and bounds, without
// children.
type Fields struct {
	// Members: an object's members that are built, each with its own Fields; any other
	// member is skipped, left out of Keys.
	Members map[string]*Fields
	// Items: an array's elements are built with it; nil leaves Items empty.
	Items *Fields
	// Opaque: a string is not decoded (Str stays ""): the checklist reads only its type.
	Opaque bool

	once    sync.Once
	byLen   [maxListed + 1][]fieldName // Members by the length of their names, made once
	longest int                        // the length of the longest name in Members, found once
}

// maxListed is the longest name looked up by its length (byLen) rather than in Members.
const maxListed = 32

// fieldName is a member of a Fields: its name and how it is built.
type fieldName struct {
	name string
	f    *Fields
}

// lookup is the Fields of member name raw (unescaped), and the name as Members holds it: a
// name is looked up among those of its length, compared byte for byte, not hashed.
func (f *Fields) lookup(raw []byte) (sub *Fields, name string, named bool) {
	if len(raw) > maxListed {
		sub, named = f.Members[string(raw)]
		if named {
			name = string(raw)
		}
		return sub, name, named
	}
	f.index()
	for _, n := range f.byLen[len(raw)] {
		if n.name == string(raw) {
			return n.f, n.name, true
		}
	}
	return nil, "", false
}

// index makes byLen and longest, once.
func (f *Fields) index() {
	f.once.Do(func() {
		for k, v := range f.Members {
			f.longest = max(f.longest, len(k))
			if len(k) <= maxListed {
				f.byLen[len(k)] = append(f.byLen[len(k)], fieldName{k, v})
			}
		}
	})
}

// ParseFields is Parse building only what f names: for a checklist that reads a few members
// of big records, it allocates for those alone and decodes no other string (a message's
// text, a tool's output). Strings are copied out one by one, so the tree does not keep b.
// Duplicate members are kept, as Parse keeps them (Get reads the last).
func ParseFields(b []byte, d Dialect, f *Fields) (*Value, error) {
	if err := Valid(b, d); err != nil {
		return nil, err
	}
	return ParseFieldsValid(b, d, f), nil
}

// ParseFieldsValid is ParseFields of b that has passed Valid(b, d), which it does not run
// again. It must be given nothing else: the build checks nothing.
func ParseFieldsValid(b []byte, d Dialect, f *Fields) *Value {
	p := builder{b: b, surr: d.Surrogates, d: d, max: MaxDepth, own: true, chunk: 8}
	v, _ := p.shaped(skipWS(b, 0), f)
	return v
}

// shaped builds the value at b[i] as f says, and returns it with the offset just past it.
// Its recursion is as deep as f.
func (p *builder) shaped(i int, f *Fields) (*Value, int) {
	b := p.b
	switch c := b[i]; {
	case c == '{' && f != nil && f.Members != nil:
		v := p.alloc()
		v.Start, v.Type = i, Object
		base := len(p.members)
		i = skipWS(b, i+1)
		for b[i] != '}' {
			ks := i
			sub, named, key, end := p.member(i, f)
			i = skipWS(b, skipWS(b, end)+1) // past ':'
			if named {
				m := Member{Key: key, KeyStart: ks}
				m.Val, i = p.shaped(i, sub)
				p.members = append(p.members, m)
			} else {
				i = p.skip(i)
			}
			if i = skipWS(b, i); b[i] == ',' {
				i = skipWS(b, i+1)
			}
		}
		v.Keys = p.keepMembers(p.members[base:])
		clear(p.members[base:])
		p.members = p.members[:base]
		v.End = i + 1
		return v, v.End
	case c == '[' && f != nil && f.Items != nil:
		v := p.alloc()
		v.Start, v.Type = i, Array
		base := len(p.items)
		i = skipWS(b, i+1)
		for b[i] != ']' {
			var item *Value
			item, i = p.shaped(i, f.Items)
			p.items = append(p.items, item)
			if i = skipWS(b, i); b[i] == ',' {
				i = skipWS(b, i+1)
			}
		}
		v.Items = p.keepItems(p.items[base:])
		clear(p.items[base:])
		p.items = p.items[:base]
		v.End = i + 1
		return v, v.End
	case c == '{' || c == '[':
		v := p.alloc()
		v.Start, v.Type = i, Array
		if c == '{' {
			v.Type = Object
		}
		v.End = p.skip(i)
		return v, v.End
	case c == '"' && f != nil && f.Opaque:
		v := p.alloc()
		v.Start, v.Type = i, String
		v.End = closingQuote(b, i+1) + 1
		return v, v.End
	}
	return p.value(i) // a scalar
}

// member reads the key at b[i] and says whether f's members name it (and with what Fields),
// with the offset just past the key. A named key is returned decoded.
func (p *builder) member(i int, f *Fields) (sub *Fields, named bool, key string, end int) {
	b := p.b
	q := closingQuote(b, i+1)
	raw := b[i+1 : q]
	if !p.surr || asciiOnly(raw) {
		if bytes.IndexByte(raw, '\\') < 0 {
			sub, key, named = f.lookup(raw) // no allocation: the name Members holds
			return sub, named, key, q + 1
		}
	}
	key, end = p.str(i)
	sub, named = f.Members[key]
	return sub, named, key, end
}

// skip returns the offset just past the value at b[i], building nothing.
func (p *builder) skip(i int) int {
	switch p.b[i] {
	case '"':
		return closingQuote(p.b, i+1) + 1
	case '{', '[':
		return skipContainer(p.b, i)
	case 't', 'n':
		return i + 4
	case 'f':
		return i + 5
	case 'N': // NaN
		return i + 3
	case 'I': // Infinity
		return i + 8
	}
	if p.b[i] == '-' && p.b[i+1] == 'I' {
		return i + 9
	}
	end, _ := scanNumber(p.b, i, Dialect{})
	return end
}

// asciiOnly: s holds no byte of a multi-byte UTF-8 sequence (so no raw surrogate).
func asciiOnly(s []byte) bool {
	for _, c := range s {
		if c >= 0x80 {
			return false
		}
	}
	return true
}

// skipContainer returns the offset just past the array or object at b[i], which Valid has
// accepted: it only matches brackets, passing over strings a quote at a time (a string's
// bytes, most of a record, are not looked at one by one, nor checked again).
func skipContainer(b []byte, i int) int {
	depth := 0
	for ; ; i++ {
		switch b[i] {
		case '"':
			i = closingQuote(b, i+1)
		case '{', '[':
			depth++
		case '}', ']':
			if depth--; depth == 0 {
				return i + 1
			}
		}
	}
}
