package jsonv

import (
	"bytes"
	"math"
	"strconv"
	"strings"
	"unicode/utf16"
	"unicode/utf8"
)

// Type is the JSON type of a Value.
type Type uint8

const (
	Null Type = iota
	Bool
	Number
	String
	Array
	Object
)

var typeNames = [...]string{Null: "null", Bool: "bool", Number: "number", String: "string", Array: "array", Object: "object"}

// String returns the lowercase name of the type.
func (t Type) String() string {
	if int(t) < len(typeNames) {
		return typeNames[t]
	}
	return "Type(" + strconv.Itoa(int(t)) + ")"
}

// Value is one node of a parsed document. Start and End locate its bytes in the input.
type Value struct {
	Type  Type
	Start int // offset of the value's first byte in the input
	End   int // offset just past the value
	Bool  bool
	// Str is the decoded string (Type String). Escaped lone surrogates, and with
	// Dialect.Surrogates raw UTF-8-encoded surrogates, decode to U+FFFD, so Str is always valid
	// UTF-8.
	Str   string
	Num   float64 // Type Number (NaN/±Inf for the Python literals, ±Inf for out-of-range literals)
	IsInt bool    // the number literal has no fraction or exponent and fits int64
	Int   int64
	Items []*Value // Array
	Keys  []Member // Object, in document order (duplicates kept)
}

// Member is one key/value pair of an object.
type Member struct {
	Key      string // decoded key
	KeyStart int    // offset of the key's opening quote
	Val      *Value
}

// Get returns the value of the last member named key (last wins, as in Python and
// JavaScript), or nil if v is nil, not an object, or has no such member.
func (v *Value) Get(key string) *Value {
	if v == nil {
		return nil
	}
	for k := len(v.Keys) - 1; k >= 0; k-- {
		if v.Keys[k].Key == key {
			return v.Keys[k].Val
		}
	}
	return nil
}

// Raw returns the bytes of v in b, the input v was parsed from.
func (v *Value) Raw(b []byte) []byte {
	return b[v.Start:v.End]
}

// Parse parses one complete value, with the same strictness and errors as Valid, into a tree.
// It is meant for documents up to a few MB. Unescaped strings share the memory of one copy
// of b, so the tree keeps that copy alive.
func Parse(b []byte, d Dialect) (*Value, error) {
	if err := Valid(b, d); err != nil {
		return nil, err
	}
	return parseValid(b, d), nil
}

// parseValid is Parse of b that has passed Valid(b, d).
func parseValid(b []byte, d Dialect) *Value {
	// No deeper than MaxDepth: a dialect that accepts more (V8's) is not built into a tree
	// past it, so the build's recursion stays bounded.
	p := builder{b: b, src: string(b), surr: d.Surrogates, d: d, max: MaxDepth}
	i := skipWS(b, 0)
	p.chunk = min(max(len(b)/32, 8), 1024)
	if b[i] != '{' && b[i] != '[' {
		p.chunk = 1 // a scalar is one node
	}
	v, _ := p.value(i)
	return v
}

// ParseDepth is Parse building only the first depth levels of the tree: an object or array
// nested deeper is a Value of its type and bounds without children (depth 1: the top-level
// value and its members' scalars). It is for a checklist that reads a few members of many
// big records, at a fraction of the allocations of the whole tree.
// Its strings are copied out one by one (most of a big record's bytes are in the levels
// not built), so the tree does not keep b.
func ParseDepth(b []byte, d Dialect, depth int) (*Value, error) {
	if err := Valid(b, d); err != nil {
		return nil, err
	}
	return ParseDepthValid(b, d, depth), nil
}

// ParseDepthValid is ParseDepth of b that has passed Valid(b, d), which it does not run
// again. It must be given nothing else: the build checks nothing.
func ParseDepthValid(b []byte, d Dialect, depth int) *Value {
	p := builder{b: b, surr: d.Surrogates, d: d, max: MaxDepth, own: true}
	if depth > 0 && depth < MaxDepth {
		p.max = depth
	}
	p.chunk = 16
	v, _ := p.value(skipWS(b, 0))
	return v
}

// builder builds the tree of an input that Valid has accepted, so it checks nothing.
type builder struct {
	b          []byte
	src        string // the input as a string, which unescaped strings share
	own        bool   // no src: each string is copied out on its own
	surr       bool
	d          Dialect
	depth, max int // the nesting of the value being built; max > 0: containers deeper are not built
	chunk      int
	slab       []Value
	items      []*Value // stack of the elements of the open arrays
	members    []Member // stack of the members of the open objects
	arena      *Arena   // nil: nodes and lists are allocated
}

func (p *builder) keepMembers(m []Member) []Member {
	if p.arena != nil {
		return p.arena.members(m)
	}
	return append([]Member(nil), m...)
}

func (p *builder) keepItems(e []*Value) []*Value {
	if p.arena != nil {
		return p.arena.elements(e)
	}
	return append([]*Value(nil), e...)
}

func (p *builder) alloc() *Value {
	if p.arena != nil {
		return p.arena.value()
	}
	if len(p.slab) == 0 {
		p.slab = make([]Value, p.chunk)
	}
	v := &p.slab[0]
	p.slab = p.slab[1:]
	return v
}

// value builds the value at b[i] and returns it with the offset just past it.
func (p *builder) value(i int) (*Value, int) {
	b := p.b
	v := p.alloc()
	v.Start = i
	if c := b[i]; p.max > 0 && p.depth >= p.max && (c == '{' || c == '[') {
		v.Type = Array
		if c == '{' {
			v.Type = Object
		}
		v.End = skipContainer(b, i)
		return v, v.End
	}
	p.depth++
	switch b[i] {
	case '{':
		v.Type = Object
		base := len(p.members)
		i = skipWS(b, i+1)
		for b[i] != '}' {
			var m Member
			m.KeyStart = i
			m.Key, i = p.str(i)
			i = skipWS(b, skipWS(b, i)+1) // past ':'
			m.Val, i = p.value(i)
			p.members = append(p.members, m)
			if i = skipWS(b, i); b[i] == ',' {
				i = skipWS(b, i+1)
			}
		}
		v.Keys = p.keepMembers(p.members[base:])
		clear(p.members[base:])
		p.members = p.members[:base]
		i++
	case '[':
		v.Type = Array
		base := len(p.items)
		i = skipWS(b, i+1)
		for b[i] != ']' {
			var item *Value
			item, i = p.value(i)
			p.items = append(p.items, item)
			if i = skipWS(b, i); b[i] == ',' {
				i = skipWS(b, i+1)
			}
		}
		v.Items = p.keepItems(p.items[base:])
		clear(p.items[base:])
		p.items = p.items[:base]
		i++
	case '"':
		v.Type = String
		v.Str, i = p.str(i)
	case 't':
		v.Type, v.Bool = Bool, true
		i += 4
	case 'f':
		v.Type = Bool
		i += 5
	case 'n':
		i += 4
	case 'N':
		v.Type, v.Num = Number, math.NaN()
		i += 3
	case 'I':
		v.Type, v.Num = Number, math.Inf(1)
		i += 8
	default:
		v.Type = Number
		if b[i] == '-' && b[i+1] == 'I' {
			v.Num = math.Inf(-1)
			i += 9
			break
		}
		i, _ = scanNumber(b, i, Dialect{})
		lit := p.sub(v.Start, i)
		v.Num, _ = strconv.ParseFloat(lit, 64) // out of range gives ±Inf or 0
		if isIntLiteral(lit) {
			if n, err := strconv.ParseInt(lit, 10, 64); err == nil {
				v.IsInt, v.Int = true, n
			}
		}
	}
	p.depth--
	v.End = i
	return v, i
}

func isIntLiteral(s string) bool {
	for k := 0; k < len(s); k++ {
		if c := s[k]; c == '.' || c == 'e' || c == 'E' {
			return false
		}
	}
	return true
}

// str decodes the string whose opening quote is at b[i] and returns it with the offset just
// past the closing quote.
func (p *builder) str(i int) (string, int) {
	b := p.b
	j := i + 1
	if !p.surr {
		// The input is valid: the first quote is the closing one unless a backslash comes
		// first (both found a word at a time).
		q := bytes.IndexByte(b[j:], '"')
		bs := bytes.IndexByte(b[j:j+q], '\\')
		if bs < 0 {
			return p.sub(j, j+q), j + q + 1
		}
		j += bs
	} else {
		for {
			c := b[j]
			if c == '"' {
				return p.sub(i+1, j), j + 1
			}
			if c == '\\' || (c == 0xED && b[j+1] >= 0xA0) {
				break
			}
			j++
		}
	}
	// A decoded string is never longer than its source (an escape decodes to fewer bytes, a
	// raw surrogate to U+FFFD's three): one buffer of the source's length, filled a run at a
	// time between escapes.
	end := closingQuote(b, j)
	var sb strings.Builder
	sb.Grow(end - (i + 1))
	sb.Write(b[i+1 : j])
	for j < end {
		c := b[j]
		switch {
		case c == 0xED && p.surr && b[j+1] >= 0xA0:
			sb.WriteRune(utf8.RuneError)
			j += 3
			continue
		case c != '\\':
			k := j + 1
			if p.surr {
				for k < end && b[k] != '\\' && b[k] != 0xED {
					k++
				}
			} else if n := bytes.IndexByte(b[k:end], '\\'); n >= 0 {
				k += n
			} else {
				k = end
			}
			sb.Write(b[j:k])
			j = k
			continue
		case b[j+1] != 'u':
			sb.WriteByte(unescape[b[j+1]])
			j += 2
			continue
		}
		r := hex4(b[j+2:])
		j += 6
		if utf16.IsSurrogate(r) {
			r2 := rune(-1)
			if r < 0xDC00 && j+6 <= len(b) && b[j] == '\\' && b[j+1] == 'u' {
				r2 = hex4(b[j+2:])
			}
			if 0xDC00 <= r2 && r2 < 0xE000 {
				r = utf16.DecodeRune(r, r2)
				j += 6
			} else {
				r = utf8.RuneError
			}
		}
		sb.WriteRune(r)
	}
	return sb.String(), end + 1
}

// closingQuote is the offset of the quote that closes the valid string whose bytes go on at
// b[j]: the first quote after an even run of backslashes.
func closingQuote(b []byte, j int) int {
	for {
		q := j + bytes.IndexByte(b[j:], '"')
		if !escapesNext(b[j:q], false) {
			return q
		}
		j = q + 1
	}
}

// sub is the input's bytes [j:k] as a string.
func (p *builder) sub(j, k int) string {
	if p.own {
		return string(p.b[j:k])
	}
	return p.src[j:k]
}

var unescape = [256]byte{'"': '"', '\\': '\\', '/': '/', 'b': '\b', 'f': '\f', 'n': '\n', 'r': '\r', 't': '\t'}

// hex4 decodes four hex digits that Valid has checked.
func hex4(h []byte) rune {
	var r rune
	for _, c := range h[:4] {
		switch {
		case c <= '9':
			c -= '0'
		case c <= 'F':
			c -= 'A' - 10
		default:
			c -= 'a' - 10
		}
		r = r<<4 | rune(c)
	}
	return r
}
