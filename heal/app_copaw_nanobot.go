package heal

import (
	"encoding/base64"
	"path/filepath"
	"strings"

	"github.com/sessionmedic/sessionmedic/heal/jsonv"
)

// checkCopaw: copaw.md "What valid means" 2–5.
func checkCopaw(c *fileCtx, data []byte, root *jsonv.Value) Verdict {
	if root.Type != jsonv.Object {
		return damaged(KindNotObject, int64(root.Start), "top-level value is not an object")
	}
	v := healthy()
	agent := root.Get("agent")
	if agent == nil {
		return v
	}
	if !isObj(agent) {
		return damaged(KindSchema, int64(agent.Start), "agent is not an object")
	}
	mem := agent.Get("memory")
	if mem == nil {
		return v
	}
	if !isObj(mem) {
		return damaged(KindSchema, int64(mem.Start), "agent.memory is not an object")
	}
	content := mem.Get("content")
	if content == nil {
		return v
	}
	if !isArr(content) {
		return damaged(KindSchema, int64(content.Start), "agent.memory.content is not a list")
	}
	for i, item := range content.Items {
		msg := item
		if isArr(item) {
			if len(item.Items) != 2 {
				return damaged(KindSchema, int64(item.Start), "agent.memory.content[%d] is not a [msg, marks] pair", i)
			}
			msg = item.Items[0]
			marks := item.Items[1]
			if !isArr(marks) {
				return damaged(KindSchema, int64(marks.Start), "agent.memory.content[%d] marks are not a list", i)
			}
			for _, m := range marks.Items {
				if !isStr(m) {
					return damaged(KindSchema, int64(m.Start), "agent.memory.content[%d] mark is not a string", i)
				}
			}
		}
		if !isObj(msg) {
			return damaged(KindSchema, int64(msg.Start), "agent.memory.content[%d] message is not an object", i)
		}
		for _, k := range []string{"name", "content", "role"} {
			if msg.Get(k) == nil {
				return damaged(KindSchema, int64(msg.Start), "agent.memory.content[%d] message has no %q", i, k)
			}
		}
	}
	if strings.Contains(strings.TrimRight(string(data), "\n"), "\n") || strings.HasSuffix(string(data), "\n") {
		v.Warnings = append(v.Warnings, "not in CoPaw's one-line form")
	}
	return v
}

// checkNanobot: nanobot.md "What valid means" 3–7.
func checkNanobot(c *fileCtx, lines []jsonlLine) Verdict {
	v := healthy()
	var first *jsonlLine
	messages, providers := 0, 0
	for i := range lines {
		l := &lines[i]
		if l.Blank {
			continue
		}
		if first == nil {
			first = l
			continue
		}
		if t := l.Val.Get("_type"); isStr(t) {
			switch t.Str {
			case "provider_state":
				providers++
				if providers > 1 {
					return damaged(KindSchema, int64(l.Start), "line %d: a second provider_state record", i+1)
				}
				continue
			case "metadata":
				return damaged(KindSchema, int64(l.Start), "line %d: a metadata record after line 1", i+1)
			}
		}
		if !isStr(l.Val.Get("role")) {
			return damaged(KindSchema, int64(l.Start), "line %d: message has no string role", i+1)
		}
		messages++
	}
	if first == nil {
		return damaged(KindEmpty, 0, "no records")
	}
	m := first.Val
	if t := m.Get("_type"); !isStr(t) || t.Str != "metadata" {
		return damaged(KindSchema, int64(first.Start), "line 1 is not the metadata record")
	}
	key := m.Get("key")
	if !isStr(key) {
		return damaged(KindSchema, int64(first.Start), "metadata has no string key")
	}
	for _, k := range []string{"created_at", "updated_at"} {
		if !isStr(m.Get(k)) {
			return damaged(KindSchema, int64(first.Start), "metadata has no string %s", k)
		}
	}
	if !isObj(m.Get("metadata")) {
		return damaged(KindSchema, int64(first.Start), "metadata.metadata is not an object")
	}
	lc := m.Get("last_consolidated")
	if lc == nil || lc.Type != jsonv.Number || !lc.IsInt {
		return damaged(KindSchema, int64(first.Start), "metadata has no integer last_consolidated")
	}
	if lc.Int < 0 || lc.Int > int64(messages) {
		v.Warnings = append(v.Warnings, "last_consolidated out of range (nanobot resets it)")
	}
	stem := strings.TrimSuffix(filepath.Base(c.path), ".jsonl")
	if stem != base64.RawURLEncoding.EncodeToString([]byte(key.Str)) && stem != nanobotLossyName(key.Str) {
		v.Warnings = append(v.Warnings, "metadata key does not match the file name")
	}
	return v
}

func nanobotLossyName(key string) string {
	s := strings.ReplaceAll(key, ":", "_")
	for _, ch := range []string{"<", ">", ":", "\"", "/", "\\", "|", "?", "*"} {
		s = strings.ReplaceAll(s, ch, "_")
	}
	return strings.TrimSpace(s)
}
