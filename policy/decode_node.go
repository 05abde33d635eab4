package policy

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	"go.yaml.in/yaml/v3"
)

// resolve follows an alias to the node it names.
func resolve(n *yaml.Node) *yaml.Node {
	for n != nil && n.Kind == yaml.AliasNode && n.Alias != nil {
		n = n.Alias
	}
	return n
}

// lookup returns the value of key in mapping n, or nil.
func lookup(n *yaml.Node, key string) *yaml.Node {
	for i := 0; i+1 < len(n.Content); i += 2 {
		if n.Content[i].Value == key {
			return resolve(n.Content[i+1])
		}
	}
	return nil
}

func join(parent, key string) string {
	if parent == "" {
		return key
	}
	return parent + "." + key
}

// describe names what a node is, for "expected X, got Y".
func describe(n *yaml.Node) string {
	switch n.Kind {
	case yaml.MappingNode:
		return "a mapping"
	case yaml.SequenceNode:
		return "a list"
	case yaml.ScalarNode:
		switch n.Tag {
		case "!!null":
			return "null"
		case "!!str":
			return strconv.Quote(n.Value)
		}
		return n.Value
	}
	return "nothing"
}

// mapping calls fn for each key of the mapping n, in document order, with the key's field
// path. Keys set twice are errors; fn reports unknown keys. The error of one key does not
// stop the next; the caller's checks across keys ask failedSince which keys failed.
func (d *decoder) mapping(n *yaml.Node, field string, fn func(key string, k, v *yaml.Node, f string)) {
	n = resolve(n)
	if n.Kind != yaml.MappingNode {
		d.fail(n, field, "expected a mapping, got %s", describe(n))
	}
	seen := map[string]int{}
	for i := 0; i+1 < len(n.Content); i += 2 {
		d.try(func() {
			k, v := resolve(n.Content[i]), resolve(n.Content[i+1])
			if k.Kind != yaml.ScalarNode {
				d.fail(k, field, "expected a key, got %s", describe(k))
			}
			f := join(field, k.Value)
			if line, dup := seen[k.Value]; dup {
				d.fail(k, f, "is set twice (first on line %d)", line)
			}
			seen[k.Value] = k.Line
			fn(k.Value, k, v, f)
		})
	}
}

func (d *decoder) sequence(n *yaml.Node, field string) []*yaml.Node {
	n = resolve(n)
	if n.Kind != yaml.SequenceNode {
		d.fail(n, field, "expected a list, got %s", describe(n))
	}
	items := make([]*yaml.Node, len(n.Content))
	for i, item := range n.Content {
		items[i] = resolve(item)
	}
	return items
}

func (d *decoder) str(n *yaml.Node, field string) string {
	if n.Kind != yaml.ScalarNode || n.Tag != "!!str" {
		d.fail(n, field, "expected a string, got %s", describe(n))
	}
	return n.Value
}

// strings decodes a list of strings, calling check on each; duplicates are errors.
func (d *decoder) strings(n *yaml.Node, field string, check func(s string) (string, error)) []string {
	var out []string
	seen := map[string]int{}
	before := len(d.errs)
	for i, item := range d.sequence(n, field) {
		d.try(func() {
			f := fmt.Sprintf("%s[%d]", field, i)
			s := d.str(item, f)
			if check != nil {
				var err error
				if s, err = check(s); err != nil {
					d.fail(item, f, "%s", err)
				}
			}
			if j, dup := seen[s]; dup {
				d.fail(item, f, "%q is already listed at %s[%d]", s, field, j)
			}
			seen[s] = i
			out = append(out, s)
		})
	}
	d.settled(before)
	return out
}

func (d *decoder) boolean(n *yaml.Node, field string) bool {
	if n.Kind == yaml.ScalarNode && n.Tag == "!!bool" {
		var b bool
		if err := n.Decode(&b); err == nil {
			return b
		}
	}
	d.fail(n, field, "expected true or false, got %s", describe(n))
	return false
}

func (d *decoder) integer(n *yaml.Node, field string) int {
	if n.Kind == yaml.ScalarNode && n.Tag == "!!int" {
		var i int
		if err := n.Decode(&i); err == nil {
			return i
		}
	}
	d.fail(n, field, "expected an integer, got %s", describe(n))
	return 0
}

// scalar returns the text of a non-null scalar, for values with their own syntax.
func (d *decoder) scalar(n *yaml.Node, field, what string) string {
	if n.Kind != yaml.ScalarNode || n.Tag == "!!null" || n.Tag == "!!bool" {
		d.fail(n, field, "expected %s, got %s", what, describe(n))
	}
	return n.Value
}

func (d *decoder) duration(n *yaml.Node, field string) time.Duration {
	v, err := parseDuration(d.scalar(n, field, "a duration"))
	if err != nil {
		d.fail(n, field, "%s", err)
	}
	return v
}

// size decodes a size, and returns it as written too (without spaces: "1 GB" is "1GB").
func (d *decoder) size(n *yaml.Node, field string) (int64, string) {
	s := d.scalar(n, field, "a size")
	v, err := ParseSize(s)
	if err != nil {
		d.fail(n, field, "%s", err)
	}
	return v, strings.Join(strings.Fields(s), "")
}

func (d *decoder) fraction(n *yaml.Node, field string) float64 {
	v, err := parseFraction(d.scalar(n, field, "a percentage"))
	if err != nil {
		d.fail(n, field, "%s", err)
	}
	return v
}

func (d *decoder) oneOf(n *yaml.Node, field, what string, valid []string) string {
	s := d.str(n, field)
	if !contains(valid, s) {
		d.fail(n, field, "unknown %s %q (want %s)", what, s, strings.Join(valid, ", "))
	}
	return s
}

func (d *decoder) path(n *yaml.Node, field string) string {
	p, err := expandPath(d.str(n, field), d.env)
	if err != nil {
		d.fail(n, field, "%s", err)
	}
	return p
}

func (d *decoder) listen(n *yaml.Node, field string) string {
	s := d.str(n, field)
	if s == "" {
		return ""
	}
	i := strings.LastIndex(s, ":")
	port, err := strconv.Atoi(s[i+1:])
	if i < 0 || err != nil || port < 0 || port > 65535 || strings.ContainsAny(s[i+1:], "+-") {
		d.fail(n, field, "%q is not host:port", s)
	}
	return s
}
