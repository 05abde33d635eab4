package jsonv

import (
	"bufio"
	"bytes"
	"io"
)

// FieldsSkeleton is a [Skeleton] that keeps only what f names (as [ParseFields] builds it)
// of the valid value read from r: a member f does not name keeps its key, and its value is
// left as an empty one of its type (an object {}, an array [], a string ""); so is the
// content of an array whose Fields has no Items, and of a string f makes Opaque. Numbers and
// literals are kept; a value f names with nil Fields is kept whole, its strings over keep
// bytes cut as Skeleton cuts them. A named member's key is kept whole (a key that cannot
// spell a name of f is a string like any other). ParseFields of the skeleton with f builds
// what it builds of the value, but for the strings cut, and the skeleton's cuts map its
// offsets back (FieldsSkeletonCuts): a checklist that reads no more than f of a long record
// reads it from a skeleton that holds none of the bulk it never reads (a tool's output in
// thousands of short lines). With a nil f it is Skeleton. d is the value's dialect (how a
// key is decoded to be looked up). It holds the copy and a read buffer, never more:
// ErrTooLarge when the copy would pass limit bytes.
func FieldsSkeleton(r io.Reader, d Dialect, f *Fields, keep, limit int) ([]byte, error) {
	sk := sketch{}
	if err := sk.prune(readerOf(r), d, f, keep, limit, false); err != nil {
		return nil, err
	}
	return sk.out, nil
}

// FieldsSkeletonCuts is [FieldsSkeleton], with where it left bytes out: what maps an offset
// in the skeleton back to the value's own ([Cuts.Orig]).
func FieldsSkeletonCuts(r io.Reader, d Dialect, f *Fields, keep, limit int) ([]byte, Cuts, error) {
	var cs Cuts
	sk := sketch{cuts: &cs.cuts}
	if err := sk.prune(readerOf(r), d, f, keep, limit, false); err != nil {
		return nil, Cuts{}, err
	}
	cs.summed()
	return sk.out, cs, nil
}

// FieldsSkeletonSize is the length of the skeleton FieldsSkeleton would copy from r, found
// without copying it: ErrTooLarge once it would pass limit bytes.
func FieldsSkeletonSize(r io.Reader, d Dialect, f *Fields, keep, limit int) (int, error) {
	var sk sketch
	err := sk.prune(readerOf(r), d, f, keep, limit, true)
	return sk.n, err
}

func readerOf(r io.Reader) *bufio.Reader {
	if br, ok := r.(*bufio.Reader); ok {
		return br
	}
	return bufio.NewReaderSize(r, 64<<10)
}

// pruning is what a FieldsSkeleton's copy goes by.
type pruning struct {
	br          *bufio.Reader
	d           Dialect
	keep, limit int
	dry         bool
	key         []byte // the content of the key being read
	quoted      []byte // ... between quotes, as builder.member reads it
}

// prune copies the skeleton of br's value under f into out (only counts it, when dry).
func (sk *sketch) prune(br *bufio.Reader, d Dialect, f *Fields, keep, limit int, dry bool) error {
	if f == nil {
		return sk.run(br, keep, limit, dry)
	}
	p := &pruning{br: br, d: d, keep: keep, limit: limit, dry: dry}
	if err := sk.value(p, f); err != nil {
		return err
	}
	// White space after the value.
	_, err := sk.space(p)
	if err == io.EOF {
		return nil
	}
	return err
}

// space copies the white space ahead and returns the byte after it, unread.
func (sk *sketch) space(p *pruning) (byte, error) {
	for {
		b, err := p.br.Peek(1)
		if err != nil {
			return 0, err
		}
		switch c := b[0]; c {
		case ' ', '\t', '\n', '\r':
			p.br.Discard(1)
			if err := sk.add(p, c); err != nil {
				return 0, err
			}
		default:
			return c, nil
		}
	}
}

// add copies c.
func (sk *sketch) add(p *pruning, c byte) error {
	sk.put(c, p.dry)
	if sk.n > p.limit {
		return ErrTooLarge
	}
	return nil
}

// next copies the white space ahead and the byte after it, and returns that byte.
func (sk *sketch) next(p *pruning) (byte, error) {
	if _, err := sk.space(p); err != nil {
		return 0, unexpected(err)
	}
	c, _ := p.br.ReadByte()
	return c, sk.add(p, c)
}

// unexpected: the value ended before its end (r did not hold a valid value).
func unexpected(err error) error {
	if err == io.EOF {
		return io.ErrUnexpectedEOF
	}
	return err
}

// value copies the value ahead under f: whole (as Skeleton copies it) when f is nil.
func (sk *sketch) value(p *pruning, f *Fields) error {
	c, err := sk.next(p)
	if err != nil {
		return err
	}
	switch c {
	case '"':
		if f != nil && f.Opaque {
			return sk.drop(p, '"')
		}
		return unexpected(sk.str(p.br, p.keep, p.limit, p.dry, nil))
	case '{':
		for {
			c, err := sk.next(p)
			switch {
			case err != nil:
				return err
			case c == '}':
				return nil
			case c == ',':
				continue
			}
			// A key: kept whole where it may spell one of f's names, looked up, then its
			// value under what f says of it.
			sub, named := (*Fields)(nil), f == nil
			if f == nil {
				err = sk.str(p.br, p.keep, p.limit, p.dry, nil)
			} else {
				f.index()
				most := 6 * f.longest // an escape (\u0041) spells a name's byte in 6
				p.key = p.key[:0]
				err = sk.str(p.br, max(p.keep, most+1), p.limit, p.dry, &p.key)
				if err == nil && len(p.key) <= most {
					sub, named = p.lookup(f)
				}
			}
			if err != nil {
				return unexpected(err)
			}
			if _, err := sk.next(p); err != nil { // ':'
				return err
			}
			if named {
				err = sk.value(p, sub)
			} else {
				err = sk.empty(p)
			}
			if err != nil {
				return err
			}
		}
	case '[':
		if f != nil && f.Items == nil {
			return sk.drop(p, '[')
		}
		var items *Fields
		if f != nil {
			items = f.Items
		}
		for {
			c, err := sk.space(p)
			if err != nil {
				return unexpected(err)
			}
			switch c {
			case ']', ',':
				p.br.Discard(1)
				if err := sk.add(p, c); err != nil || c == ']' {
					return err
				}
				continue
			}
			if err := sk.value(p, items); err != nil {
				return err
			}
		}
	}
	return sk.scalar(p)
}

// lookup is f's Fields of the key read (p.key, its content), as ParseFields looks it up
// (builder.member).
func (p *pruning) lookup(f *Fields) (*Fields, bool) {
	p.quoted = append(append(append(p.quoted[:0], '"'), p.key...), '"')
	b := builder{b: p.quoted, surr: p.d.Surrogates, d: p.d, own: true}
	sub, named, _, _ := b.member(0, f)
	return sub, named
}

// scalar copies the rest of a number or a literal whose first byte was copied.
func (sk *sketch) scalar(p *pruning) error {
	for {
		b, err := p.br.Peek(1)
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return err
		}
		switch c := b[0]; c {
		case ',', ']', '}', ' ', '\t', '\n', '\r':
			return nil
		default:
			p.br.Discard(1)
			if err := sk.add(p, c); err != nil {
				return err
			}
		}
	}
}

// empty copies the value ahead as an empty one of its type (a number or a literal as it is).
func (sk *sketch) empty(p *pruning) error {
	c, err := sk.next(p)
	if err != nil {
		return err
	}
	switch c {
	case '"', '[', '{':
		return sk.drop(p, c)
	}
	return sk.scalar(p)
}

// drop leaves out the content of the string, array or object whose first byte (open) was
// copied, and copies its last: a cut where it closes.
func (sk *sketch) drop(p *pruning, open byte) error {
	dropped := 0
	depth := 0 // of the brackets open inside the value (an array or object)
	inStr := open == '"'
	esc := false
	for {
		buf, err := p.br.Peek(max(p.br.Buffered(), 1))
		if len(buf) == 0 {
			return unexpected(err)
		}
		for i := 0; i < len(buf); {
			c := buf[i]
			switch {
			case esc:
				esc = false
				i++
			case inStr:
				// To the string's next quote or backslash at once (a string's bytes are
				// most of what is left out).
				rest := buf[i:]
				q := bytes.IndexByte(rest, '"')
				if q < 0 {
					q = len(rest)
				}
				if b := bytes.IndexByte(rest[:q], '\\'); b >= 0 {
					i, esc = i+b+1, true
					continue
				}
				i += q
				if i == len(buf) {
					continue
				}
				inStr = false
				if open == '"' {
					return sk.closeDrop(p, dropped, i, '"')
				}
				i++
			case c == '"':
				inStr = true
				i++
			case c == '[' || c == '{':
				depth++
				i++
			case c == ']' || c == '}':
				if depth == 0 {
					return sk.closeDrop(p, dropped, i, c)
				}
				depth--
				i++
			default:
				i++
			}
		}
		p.br.Discard(len(buf))
		dropped += len(buf)
	}
}

// closeDrop ends a drop at byte i of what the reader holds, the value's last byte c: the
// bytes before it (i, and those discarded before) are left out, a cut noted, c copied.
func (sk *sketch) closeDrop(p *pruning, discarded, i int, c byte) error {
	p.br.Discard(i + 1)
	if sk.cuts != nil {
		*sk.cuts = append(*sk.cuts, cut{pos: sk.n, n: discarded + i})
	}
	return sk.add(p, c)
}
