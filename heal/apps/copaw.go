package apps

import (
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

// OwnKinds: the damage kinds its checklist reports (see format.Kinds).
func (copaw) OwnKinds() []string {
	return []string{format.KindNotObject, format.KindSchema}
}

func (copaw) Name() string           { return "copaw" }
func (copaw) Dialect() jsonv.Dialect { return jsonv.Dialect{NonFinite: true, Surrogates: true} }
func (copaw) EmptyIsDamage() bool    { return true }

// DocShape: the checklist takes agent.memory.content message by message.
func (copaw) DocShape() jsonv.Shape {
	return jsonv.Shape{Items: []string{"agent", "memory", "content"}, ElemFields: copawElem}
}

// copawElem is what copawMessageProblem reads of an element, a [msg, marks] pair or a bare
// message: the pair's items, a message's name, content and role (whether they are there),
// each mark's type. No message text is decoded.
var copawElem = func() *jsonv.Fields {
	present := &jsonv.Fields{Opaque: true}
	msg := map[string]*jsonv.Fields{"name": present, "content": present, "role": present}
	return &jsonv.Fields{Members: msg, Items: &jsonv.Fields{Members: msg, Items: &jsonv.Fields{Opaque: true}}}
}()

func (copaw) NewDocCheck(format.File) format.DocCheck { return &copawCheck{} }

// copawCheck: copaw.md "What valid means" 2–5, the messages of each agent.memory.content
// (every occurrence of a duplicated name: the last is the one the app reads) checked as
// they come. A list's elements come one after another and the list never comes back once
// they end: an element's list is the last one met, or a new one.
type copawCheck struct {
	lists   []copawList
	records int
}

// copawList is what the check learnt of one list: its messages and the first problem.
type copawList struct {
	in      *jsonv.Value // the list, the root's
	count   int
	problem *format.Verdict
}

func (c *copawCheck) Elem(e jsonv.Elem) {
	if e.In.Type != jsonv.Array {
		return
	}
	if len(c.lists) == 0 || c.lists[len(c.lists)-1].in != e.In {
		c.lists = append(c.lists, copawList{in: e.In})
	}
	l := &c.lists[len(c.lists)-1]
	l.count++
	if l.problem == nil {
		l.problem = copawMessageProblem(e.Index, e.Val)
	}
}

func copawMessageProblem(i int, item *jsonv.Value) *format.Verdict {
	damage := func(at *jsonv.Value, f string, args ...any) *format.Verdict {
		v := format.Damage(format.KindSchema, int64(at.Start), f, args...)
		return &v
	}
	msg := item
	if isArr(item) {
		if len(item.Items) != 2 {
			return damage(item, "agent.memory.content[%d] is not a [msg, marks] pair", i)
		}
		msg = item.Items[0]
		marks := item.Items[1]
		if !isArr(marks) {
			return damage(marks, "agent.memory.content[%d] marks are not a list", i)
		}
		for _, m := range marks.Items {
			if !isStr(m) {
				return damage(m, "agent.memory.content[%d] mark is not a string", i)
			}
		}
	}
	if !isObj(msg) {
		return damage(msg, "agent.memory.content[%d] message is not an object", i)
	}
	for _, k := range []string{"name", "content", "role"} {
		if msg.Get(k) == nil {
			return damage(msg, "agent.memory.content[%d] message has no %q", i, k)
		}
	}
	return nil
}

// Records: the messages of agent.memory.content.
func (c *copawCheck) Records() int { return c.records }

func (c *copawCheck) End(root *jsonv.Value, info jsonv.WalkInfo) format.Verdict {
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
	for _, l := range c.lists {
		if l.in != content {
			continue
		}
		c.records = l.count
		if l.problem != nil {
			return *l.problem
		}
	}
	if info.Newline {
		v.Warnings = append(v.Warnings, "not in CoPaw's one-line form")
	}
	return v
}
