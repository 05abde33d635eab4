package apps

import (
	"io"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strings"

	"github.com/sessionmedic/sessionmedic/heal/format"
	"github.com/sessionmedic/sessionmedic/heal/jsonv"
	"github.com/sessionmedic/sessionmedic/internal/resolve"
)

// PraisonAI (praisonai.md): one JSON document per session, <safe id>.json, written whole
// without a lock; sessions form a hierarchy through parent_id and children_ids. Its loader
// renames a file it cannot read to <name>.corrupt-<ms>, which leaves the session missing.

var (
	praisonDialect   = jsonv.Dialect{NonFinite: true}
	praisonCorruptRe = regexp.MustCompile(`^([A-Za-z0-9_-]+\.json)\.corrupt-\d{13}(?:-\d+)?$`)
)

func addPraisonAI(r *format.Registry) {
	p := praison{ix: newPraisonIndex()} // one index for every check the registry's engine makes
	r.Add("praisonai", func(string) format.Profile { return p }, p)
}

// praison is a session file. ix remembers what its checks read of the sessions' siblings
// (nil: every check reads them all).
type praison struct {
	format.Document
	ix *praisonIndex
}

// OwnKinds: the damage kinds its checklist reports (see format.Kinds).
func (praison) OwnKinds() []string {
	return []string{format.KindNotObject, format.KindSchema, format.KindDanglingReference}
}

func (praison) Name() string           { return "praisonai" }
func (praison) Dialect() jsonv.Dialect { return praisonDialect }
func (praison) EmptyIsDamage() bool    { return true }

// DocShape: the checklist takes messages one by one, and reads children_ids whole.
func (praison) DocShape() jsonv.Shape {
	// A message is only asked to be an object.
	return jsonv.Shape{Items: []string{"messages"}, Keep: [][]string{{"children_ids"}}, ElemShallow: true}
}

func (p praison) NewDocCheck(f format.File) format.DocCheck { return &praisonCheck{f: f, ix: p.ix} }

// praisonCheck: praisonai.md "What valid means" 1–6, the messages of each messages list
// (the last of a duplicated name is the one the app reads) checked as they come.
type praisonCheck struct {
	f       format.File
	ix      *praisonIndex
	bad     map[*jsonv.Value]*jsonv.Value // each list's first message that is not an object
	count   map[*jsonv.Value]int
	records int
}

func (c *praisonCheck) Elem(e jsonv.Elem) {
	if e.In.Type != jsonv.Array {
		return
	}
	if c.count == nil {
		c.bad, c.count = map[*jsonv.Value]*jsonv.Value{}, map[*jsonv.Value]int{}
	}
	c.count[e.In]++
	if c.bad[e.In] == nil && !isObj(e.Val) {
		c.bad[e.In] = &jsonv.Value{Type: e.Val.Type, Start: e.Val.Start, Int: int64(e.Index)}
	}
}

// Records: the live messages.
func (c *praisonCheck) Records() int { return c.records }

func (c *praisonCheck) End(root *jsonv.Value, _ jsonv.WalkInfo) format.Verdict {
	msgs := root.Get("messages")
	if isArr(msgs) {
		c.records = c.count[msgs]
	}
	return checkPraison(c.ix, c.f, root, c.bad[msgs])
}

// Reconcile rebuilds children_ids from the children's parent_id.
func (p praison) Reconcile(path string, data []byte, kind string) []byte {
	return format.SpliceBytes(data, func(r io.ReaderAt, size int64) (*format.Splice, error) {
		return p.ReconcileSplice(path, r, size, kind)
	})
}

// ReconcileSplice is Reconcile of the document r holds, said as a splice of it.
func (p praison) ReconcileSplice(path string, r io.ReaderAt, size int64, _ string) (*format.Splice, error) {
	return praisonReconcile(p.ix, path, r, size)
}

// RestoreFields puts back the hierarchy fields a plain store write dropped.
func (p praison) RestoreFields(path string, data, lastGood []byte) []byte {
	return format.SpliceBytes(data, func(r io.ReaderAt, size int64) (*format.Splice, error) {
		return p.RestoreFieldsSplice(path, r, size, lastGood)
	})
}

// RestoreFieldsSplice is RestoreFields of the document r holds, said as a splice of it.
func (p praison) RestoreFieldsSplice(path string, r io.ReaderAt, size int64, lastGood []byte) (*format.Splice, error) {
	return praisonRestoreFields(p.ix, path, r, size, lastGood)
}

// Probe: any session file name.
func (praison) Probe() string { return "x.json" }

// MissingIn: the sessions the app's loader set aside as .corrupt copies, and no live file.
func (praison) MissingIn(_ string, names []string) []string {
	var out []string
	for _, n := range names {
		m := praisonCorruptRe.FindStringSubmatch(n)
		if m == nil || slices.Contains(names, m[1]) {
			continue
		}
		out = append(out, m[1])
	}
	return out
}

func (praison) MissingEvidence() string { return "the app's .corrupt copy is next to it" }

// MissingSources are the .corrupt copies of the session, newest first.
func (praison) MissingSources(path string) []string {
	m, _ := filepath.Glob(path + ".corrupt-*")
	sort.Sort(sort.Reverse(sort.StringSlice(m)))
	return m
}

// TempLockTarget: a temp file belongs to the session its session_id names.
func (praison) TempLockTarget(temp string, data []byte) string {
	if v, err := jsonv.Parse(data, praisonDialect); err == nil {
		if sid := v.Get("session_id"); isStr(sid) {
			return filepath.Join(filepath.Dir(temp), praisonSafeID(sid.Str)+".json")
		}
	}
	return ""
}

var praisonSessionRe = regexp.MustCompile(`^[A-Za-z0-9_-]+\.json$`)

// checkPraison: praisonai.md "What valid means" 1–6.
// badMsg, when not nil, is the first message that is not an object (its index in Int).
func checkPraison(ix *praisonIndex, f format.File, root *jsonv.Value, badMsg *jsonv.Value) format.Verdict {
	if root.Type != jsonv.Object {
		return format.Damage(format.KindNotObject, int64(root.Start), "top-level value is not an object")
	}
	v := format.OK()
	msgs := root.Get("messages")
	if msgs != nil && !isArr(msgs) {
		return format.Damage(format.KindSchema, int64(msgs.Start), "messages is not a list")
	}
	if msgs != nil && badMsg != nil {
		return format.Damage(format.KindSchema, int64(badMsg.Start), "messages[%d] is not an object", badMsg.Int)
	}
	if a := root.Get("archived_messages"); a != nil && !isArr(a) {
		return format.Damage(format.KindSchema, int64(a.Start), "archived_messages is not a list")
	}
	if ch := root.Get("children_ids"); ch != nil && !isArr(ch) {
		return format.Damage(format.KindSchema, int64(ch.Start), "children_ids is not a list")
	}
	sid := root.Get("session_id")
	stem := strings.TrimSuffix(filepath.Base(f.Path), ".json")
	if !isStr(sid) {
		v.Warnings = append(v.Warnings, "session_id is not a string")
	} else if praisonSafeID(sid.Str) != stem {
		v.Warnings = append(v.Warnings, "session_id does not match the file name")
	}
	if p := root.Get("parent_id"); isStr(p) {
		if _, err := resolve.Lstat(filepath.Join(filepath.Dir(f.Path), praisonSafeID(p.Str)+".json")); err != nil {
			v.Warnings = append(v.Warnings, "parent session "+p.Str+" does not exist")
		}
	}
	if isStr(sid) {
		missing := praisonMissingChildren(ix, f, sid.Str, root)
		if len(missing) > 0 {
			if root.Get("children_ids") == nil && root.Get("snapshots") == nil && root.Get("title") == nil && root.Get("parent_id") == nil {
				return format.Damage(format.KindDanglingReference, int64(root.End-1), "hierarchy wiped: %s names this session as its parent", strings.Join(missing, ", "))
			}
			ch := root.Get("children_ids")
			if ch == nil {
				// A hierarchical session (a title, snapshots or a parent) without the list:
				// its children are missing from it all the same (reconcile puts it in).
				return format.Damage(format.KindDanglingReference, int64(root.End-1), "children_ids is missing: %s names this session as its parent", strings.Join(missing, ", "))
			}
			return format.Damage(format.KindDanglingReference, int64(ch.Start), "children_ids lacks %s", strings.Join(missing, ", "))
		}
	}
	return v
}

func praisonSafeID(id string) string {
	var b strings.Builder
	for _, r := range id {
		if r < 128 && (r == '_' || r == '-' || r >= '0' && r <= '9' || r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z') {
			b.WriteRune(r)
		} else {
			b.WriteByte('_')
		}
	}
	return b.String()
}

// praisonMissingChildren: the sessions naming sid, f's session, as their parent that f's
// children_ids lacks.
func praisonMissingChildren(ix *praisonIndex, f format.File, sid string, root *jsonv.Value) []string {
	have := map[string]bool{}
	if ch := root.Get("children_ids"); isArr(ch) {
		for _, it := range ch.Items {
			if isStr(it) {
				have[it.Str] = true
			}
		}
	}
	var missing []string
	for _, k := range ix.childrenOf(f, sid) {
		if !have[k] {
			missing = append(missing, k)
		}
	}
	return missing
}

// praisonShape is what the rewrites read of a session: its members, children_ids whole.
var praisonShape = jsonv.Shape{Keep: [][]string{{"children_ids"}}}

// praisonReconcile rebuilds children_ids from the children's parent_id, splicing the
// array into the file's own bytes (indent 2, as PraisonAI writes it): nil when there is
// nothing to reconcile.
func praisonReconcile(ix *praisonIndex, path string, r io.ReaderAt, size int64) (*format.Splice, error) {
	root, _, err := jsonv.Walk(r, size, praisonDialect, praisonShape, nil)
	if err != nil {
		return nil, nil // not a document that parses: nothing to reconcile
	}
	e, err := praisonReconcileEdit(ix, path, r, root)
	if err != nil || e == nil {
		return nil, err
	}
	return e.then(size, e.end, nil), nil
}

// praisonReconcileEdit is the reconcile of the session walked into root, as the edit it makes
// of r's bytes (nil when there is nothing to reconcile).
func praisonReconcileEdit(ix *praisonIndex, path string, r io.ReaderAt, root *jsonv.Value) (*praisonEdit, error) {
	if !isObj(root) {
		return nil, nil
	}
	sid := root.Get("session_id")
	if !isStr(sid) {
		return nil, nil
	}
	missing := praisonMissingChildren(ix, format.File{Path: path}, sid.Str, root) // listed afresh
	if len(missing) == 0 {
		return nil, nil
	}
	var ids []string
	if ch := root.Get("children_ids"); isArr(ch) {
		for _, it := range ch.Items {
			raw := make([]byte, it.End-it.Start)
			if _, err := r.ReadAt(raw, int64(it.Start)); err != nil && err != io.EOF {
				return nil, err
			}
			ids = append(ids, string(raw))
		}
	}
	for _, m := range missing {
		ids = append(ids, pyString(m))
	}
	arr := "[\n    " + strings.Join(ids, ",\n    ") + "\n  ]"
	if ch := root.Get("children_ids"); ch != nil {
		return &praisonEdit{int64(ch.Start), int64(ch.End), []byte(arr)}, nil
	}
	if len(root.Keys) == 0 {
		return nil, nil
	}
	// Inserted after the last member, before the closing brace.
	last := int64(root.Keys[len(root.Keys)-1].Val.End)
	return &praisonEdit{last, last, []byte(",\n  \"children_ids\": " + arr)}, nil
}

// praisonEdit is the bytes [at, end) of a document replaced by data.
type praisonEdit struct {
	at, end int64
	data    []byte
}

// then is the document of size bytes with e made and add inserted at at (at or after e.end).
func (e praisonEdit) then(size, at int64, add []byte) *format.Splice {
	s := &format.Splice{}
	s.AddRange(0, e.at)
	s.AddData(e.data)
	s.AddRange(e.end, at-e.end)
	s.AddData(add)
	s.AddRange(at, size-at)
	return s
}

// pyString encodes s as Python's json.dumps(ensure_ascii=False) would.
func pyString(s string) string {
	var b strings.Builder
	b.WriteByte('"')
	for _, r := range s {
		switch r {
		case '"':
			b.WriteString(`\"`)
		case '\\':
			b.WriteString(`\\`)
		case '\n':
			b.WriteString(`\n`)
		case '\r':
			b.WriteString(`\r`)
		case '\t':
			b.WriteString(`\t`)
		case '\b':
			b.WriteString(`\b`)
		case '\f':
			b.WriteString(`\f`)
		default:
			if r < 0x20 {
				b.WriteString(`\u00`)
				b.WriteByte("0123456789abcdef"[r>>4])
				b.WriteByte("0123456789abcdef"[r&15])
			} else {
				b.WriteRune(r)
			}
		}
	}
	b.WriteByte('"')
	return b.String()
}

// praisonHierarchyFields are what a plain DefaultSessionStore write drops from a
// hierarchical session (children_ids is rebuilt by reconcile from the children themselves).
// It is never written.
var praisonHierarchyFields = []string{"parent_id", "forked_from_message_id", "snapshots", "is_shared", "title"}

// praisonHierarchyKeep builds them whole.
var praisonHierarchyKeep = [][]string{{"parent_id"}, {"forked_from_message_id"}, {"snapshots"}, {"is_shared"}, {"title"}}

// praisonRestoreFields puts back, from the last-good copy, the hierarchy keys the file lacks
// (the opt-in restore-fields extension), after reconciling children_ids. Every other byte of
// the file stays as it is.
func praisonRestoreFields(ix *praisonIndex, path string, r io.ReaderAt, size int64, lastGood []byte) (*format.Splice, error) {
	cur, _, err := jsonv.Walk(r, size, praisonDialect, praisonShape, nil)
	if err != nil || !isObj(cur) || len(cur.Keys) == 0 {
		return nil, nil
	}
	rec, err := praisonReconcileEdit(ix, path, r, cur)
	if err != nil {
		return nil, err
	}
	lg, _, err := jsonv.WalkBytes(lastGood, praisonDialect, jsonv.Shape{Keep: praisonHierarchyKeep}, nil)
	if err != nil || !isObj(lg) || strOf(lg.Get("session_id")) != strOf(cur.Get("session_id")) {
		return nil, nil
	}
	var add []byte
	for _, k := range praisonHierarchyFields {
		if cur.Get(k) == nil && lg.Get(k) != nil {
			add = append(add, ",\n  "+pyString(k)+": "...)
			add = append(add, lg.Get(k).Raw(lastGood)...)
		}
	}
	if len(add) == 0 {
		return nil, nil
	}
	// After the last member (the reconcile changes only children_ids, never after it).
	last := int64(cur.Keys[len(cur.Keys)-1].Val.End)
	if rec == nil {
		rec = &praisonEdit{last, last, nil}
	}
	return rec.then(size, last, add), nil
}
