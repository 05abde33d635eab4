package apps

import (
	"strings"

	"github.com/sessionmedic/sessionmedic/heal/format"
	"github.com/sessionmedic/sessionmedic/heal/jsonv"
)

// CoPaw, and QwenPaw under its new name (copaw.md): one JSON document per session, written
// whole on one line by open(w) without a lock; the history is agent.memory.content.

func addCopaw(r *format.Registry) {
	pick := func(string) format.Profile { return copaw{} }
	r.Add("copaw", pick, copaw{})
	r.Add("qwenpaw", pick, copaw{})
}

type copaw struct{ format.Document }

func (copaw) Name() string           { return "copaw" }
func (copaw) Dialect() jsonv.Dialect { return jsonv.Dialect{NonFinite: true, Surrogates: true} }
func (copaw) EmptyIsDamage() bool    { return true }
func (copaw) CheckValue(f format.File, data []byte, root *jsonv.Value) format.Verdict {
	return checkCopaw(f, data, root)
}

// Records: the messages of agent.memory.content.
func (copaw) Records(root *jsonv.Value) int {
	if c := root.Get("agent").Get("memory").Get("content"); c != nil {
		return len(c.Items)
	}
	return 0
}

// checkCopaw: copaw.md "What valid means" 2–5.
func checkCopaw(_ format.File, data []byte, root *jsonv.Value) format.Verdict {
	if root.Type != jsonv.Object {
		return format.Damage(format.KindNotObject, int64(root.Start), "top-level value is not an object")
	}
	v := format.OK()
	agent := root.Get("agent")
	if agent == nil {
		return v
	}
	if !isObj(agent) {
		return format.Damage(format.KindSchema, int64(agent.Start), "agent is not an object")
	}
	mem := agent.Get("memory")
	if mem == nil {
		return v
	}
	if !isObj(mem) {
		return format.Damage(format.KindSchema, int64(mem.Start), "agent.memory is not an object")
	}
	content := mem.Get("content")
	if content == nil {
		return v
	}
	if !isArr(content) {
		return format.Damage(format.KindSchema, int64(content.Start), "agent.memory.content is not a list")
	}
	for i, item := range content.Items {
		msg := item
		if isArr(item) {
			if len(item.Items) != 2 {
				return format.Damage(format.KindSchema, int64(item.Start), "agent.memory.content[%d] is not a [msg, marks] pair", i)
			}
			msg = item.Items[0]
			marks := item.Items[1]
			if !isArr(marks) {
				return format.Damage(format.KindSchema, int64(marks.Start), "agent.memory.content[%d] marks are not a list", i)
			}
			for _, m := range marks.Items {
				if !isStr(m) {
					return format.Damage(format.KindSchema, int64(m.Start), "agent.memory.content[%d] mark is not a string", i)
				}
			}
		}
		if !isObj(msg) {
			return format.Damage(format.KindSchema, int64(msg.Start), "agent.memory.content[%d] message is not an object", i)
		}
		for _, k := range []string{"name", "content", "role"} {
			if msg.Get(k) == nil {
				return format.Damage(format.KindSchema, int64(msg.Start), "agent.memory.content[%d] message has no %q", i, k)
			}
		}
	}
	if strings.Contains(strings.TrimRight(string(data), "\n"), "\n") || strings.HasSuffix(string(data), "\n") {
		v.Warnings = append(v.Warnings, "not in CoPaw's one-line form")
	}
	return v
}
