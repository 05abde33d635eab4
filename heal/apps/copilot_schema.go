package apps

import (
	_ "embed"
	"encoding/json"
	"fmt"
	"math"
	"sync"

	"github.com/sessionmedic/sessionmedic/heal/jsonv"
)

// copilotSchemaJSON is what Copilot CLI 1.0.102's loader enforces of the event schema its
// package ships (schemas/session-events.schema.json), as reliability/conformance/
// copilot_schema.py keeps it: for each event type, its data's required members, value types,
// enum values and integers, at any depth. Regenerate it from a newer package with that script.
//
//go:embed copilot_schema.json
var copilotSchemaJSON []byte

// cpNode is one schema node (see copilot_schema.py).
type cpNode struct {
	T   string             `json:"t"`
	R   []string           `json:"r"`
	P   map[string]*cpNode `json:"p"`
	AP  *cpNode            `json:"ap"`
	I   *cpNode            `json:"i"`
	O   []*cpNode          `json:"o"`
	E   []any              `json:"e"`
	X   int                `json:"x"` // 1: no member but those of P (serde's deny_unknown_fields)
	Ref string             `json:"ref"`
}

type cpSchema struct {
	Version string             `json:"version"`
	Defs    map[string]*cpNode `json:"defs"`
	Events  map[string]*cpNode `json:"events"`
}

var copilotSchema = sync.OnceValue(func() *cpSchema {
	var s cpSchema
	if err := json.Unmarshal(copilotSchemaJSON, &s); err != nil {
		panic("copilot_schema.json: " + err.Error()) // embedded: a build defect
	}
	return &s
})

// cpMaxDepth bounds the schema's descent into a value (a recursive definition over a deep
// value): past it, a value is taken as it is.
const cpMaxDepth = 64

// copilotDataProblem is what keeps data, the data of an event of type typ (parsed whole),
// from being what Copilot loads ("" for nothing; a type the schema does not name is not
// judged). Copilot refuses the session for any of it: "Session file is corrupted (line N:
// missing field `x`)", "invalid type", "unknown variant".
func copilotDataProblem(typ string, data *jsonv.Value) string {
	s := copilotSchema()
	n, ok := s.Events[typ]
	if !ok {
		return ""
	}
	if p := s.check(n, data, "data", 0); p != "" {
		return typ + " event's " + p + ": Copilot CLI refuses the session"
	}
	return ""
}

func (s *cpSchema) check(n *cpNode, v *jsonv.Value, at string, depth int) string {
	for n != nil && n.Ref != "" {
		n = s.Defs[n.Ref]
	}
	if n == nil || depth > cpMaxDepth {
		return ""
	}
	if len(n.O) > 0 {
		first := ""
		for _, alt := range n.O {
			p := s.check(alt, v, at, depth+1)
			if p == "" {
				return ""
			}
			if first == "" {
				first = p
			}
		}
		return first
	}
	if n.T != "" && !cpKind(v, n.T) {
		return fmt.Sprintf("%s is not of the type Copilot reads (%s)", at, n.T)
	}
	if len(n.E) > 0 && !cpAllowed(v, n.E) {
		return at + " is not a value Copilot knows (unknown variant)"
	}
	switch v.Type {
	case jsonv.Object:
		for _, r := range n.R {
			if v.Get(r) == nil {
				return fmt.Sprintf("%s has no %s (missing field `%s`)", at, r, r)
			}
		}
		for _, m := range v.Keys {
			c, named := n.P[m.Key]
			if !named {
				if n.X == 1 {
					return fmt.Sprintf("%s has a member Copilot does not know (unknown field `%s`)", at, m.Key)
				}
				c = n.AP
			}
			if c == nil || (m.Val.Type == jsonv.Null && named && !cpRequired(n, m.Key)) {
				continue // an optional member may be null (serde's Option)
			}
			if p := s.check(c, m.Val, at+"."+m.Key, depth+1); p != "" {
				return p
			}
		}
	case jsonv.Array:
		if n.I != nil {
			for i, it := range v.Items {
				if p := s.check(n.I, it, fmt.Sprintf("%s[%d]", at, i), depth+1); p != "" {
					return p
				}
			}
		}
	}
	return ""
}

func cpRequired(n *cpNode, name string) bool {
	for _, r := range n.R {
		if r == name {
			return true
		}
	}
	return false
}

// cpKind: v is one of kinds (s string, i integer, n number, b boolean, o object, a array, z
// null). An integer is a number literal without fraction or exponent (serde: "invalid type:
// floating point").
func cpKind(v *jsonv.Value, kinds string) bool {
	for _, k := range kinds {
		switch {
		case k == 's' && v.Type == jsonv.String,
			k == 'n' && v.Type == jsonv.Number,
			k == 'b' && v.Type == jsonv.Bool,
			k == 'o' && v.Type == jsonv.Object,
			k == 'a' && v.Type == jsonv.Array,
			k == 'z' && v.Type == jsonv.Null:
			return true
		case k == 'i' && v.Type == jsonv.Number:
			if v.IsInt || (v.Num == math.Trunc(v.Num) && math.Abs(v.Num) >= 1<<63) {
				return true // (an integer literal beyond int64: a u64)
			}
		}
	}
	return false
}

// cpAllowed: v is one of the enum's values (strings, numbers, booleans; null).
func cpAllowed(v *jsonv.Value, allowed []any) bool {
	for _, a := range allowed {
		switch a := a.(type) {
		case string:
			if v.Type == jsonv.String && v.Str == a {
				return true
			}
		case float64:
			if v.Type == jsonv.Number && v.Num == a {
				return true
			}
		case bool:
			if v.Type == jsonv.Bool && v.Bool == a {
				return true
			}
		case nil:
			if v.Type == jsonv.Null {
				return true
			}
		}
	}
	return false
}
