package apps

import (
	"bytes"
	"errors"
	"fmt"
	"hash/maphash"
	"io"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"unicode"
	"unicode/utf8"

	"github.com/sessionmedic/sessionmedic/heal/format"
	"github.com/sessionmedic/sessionmedic/heal/jsonv"
)

// geminiLostRewind: a $rewindTo whose target the replay does not hold.
const geminiLostRewind = "$rewindTo names no earlier message (the app's loader empties the session)"

// geminiReplay is the message list the app's loader builds: messages kept by id in first-seen
// order, a $set.messages checkpoint replacing them all, a $rewindTo dropping its target and
// everything after it. Only whether each message is resumable is kept, not the message, and
// each id as its 64-bit hash: a chat of any length is replayed in a few bytes a message.
type geminiReplay struct {
	seed  maphash.Seed
	ready bool
	ids   []uint64 // the messages held, in order
	res   []bool   // whether each is resumable
	at    idTable  // the index of each in ids
}

// idTable finds a message's index in a replay's ids by its key: an open-addressed table of
// the keys seen (64-bit hashes already, so their low bits place them), each entry 8 bytes,
// the key's high 32 bits (its tag) and the index it was given: half the memory a whole key
// takes, so that more of the table stays in the CPU's caches. An entry is not deleted when
// its message goes (a rewind, a checkpoint): it holds only while ids still has that key at
// that index (lookup compares the whole key there, only when the tag matches). An entry that
// no longer holds (ids has no key of its tag at its index) is reused by a key of its tag
// that meets it on its way, as a message re-added after a checkpoint meets its own, and is
// dropped when the table grows.
type idTable struct {
	slots []uint64 // a power of two of them, at most 3/4 used; 0: an empty slot
	used  int
}

// idEntry is the entry of key at index i of ids.
func idEntry(key uint64, i int) uint64 { return key&^0xffffffff | uint64(uint32(i+1)) }

// idHeld: entry e is the entry of a key ids holds, or at least of its tag.
func idHeld(e uint64, ids []uint64) bool {
	j := int(uint32(e)) - 1
	return j < len(ids) && ids[j]>>32 == e>>32
}

// find is the index of key in ids, where it is held; else the slot of its entry when it is
// added: the first of its tag that no longer holds on its way, or the empty one where it
// ends. The way is walked to its end: a key is held wherever its entry is on it.
func (t *idTable) find(key uint64, ids []uint64) (i int, held bool, slot *uint64) {
	mask := uint64(len(t.slots) - 1)
	for k := key & mask; ; k = (k + 1) & mask {
		s := &t.slots[k]
		switch {
		case *s == 0:
			if slot == nil {
				slot = s
			}
			return 0, false, slot
		case *s>>32 != key>>32:
		case int(uint32(*s))-1 < len(ids) && ids[uint32(*s)-1] == key:
			return int(uint32(*s)) - 1, true, nil
		case slot == nil && !idHeld(*s, ids):
			slot = s
		}
	}
}

// lookup is the index of key in ids, where it is held.
func (t *idTable) lookup(key uint64, ids []uint64) (int, bool) {
	if len(t.slots) == 0 {
		return 0, false
	}
	i, held, _ := t.find(key, ids)
	return i, held
}

// add gives key, which ids holds at its last index and at no other, its entry; slot is
// find's, of ids before key was appended (nil: none yet). The table grows first when it
// must, keeping the entries that hold.
func (t *idTable) add(key uint64, slot *uint64, ids []uint64) {
	if slot != nil && *slot != 0 {
		*slot = idEntry(key, len(ids)-1) // an entry of its tag that no longer held
		return
	}
	if slot == nil || (t.used+1)*4 > len(t.slots)*3 {
		old := t.slots
		held := 0
		for _, e := range old {
			if e != 0 && idHeld(e, ids) {
				held++
			}
		}
		n := 1024
		for (held+1)*2 > n { // at most half used after it: twice the slots of a full table
			n *= 2
		}
		t.slots, t.used = make([]uint64, n), 0
		for _, e := range old {
			if e != 0 && idHeld(e, ids) {
				*t.empty(ids[uint32(e)-1]) = e // placed by the key it holds, not by its own bits
				t.used++
			}
		}
		slot = t.empty(key)
	}
	*slot = idEntry(key, len(ids)-1)
	t.used++
}

// empty is the empty slot where an entry of key goes.
func (t *idTable) empty(key uint64) *uint64 {
	mask := uint64(len(t.slots) - 1)
	for k := key & mask; ; k = (k + 1) & mask {
		if t.slots[k] == 0 {
			return &t.slots[k]
		}
	}
}

func (r *geminiReplay) key(id string) uint64 { return maphash.String(r.seed, id) }

// keyOf is the key of string t; src: as apply's.
func (r *geminiReplay) keyOf(t *jsonv.Value, src []byte) uint64 { return geminiKey(r.seed, t, src) }

// geminiKey is the key under seed of string t; src: as apply's.
func geminiKey(seed maphash.Seed, t *jsonv.Value, src []byte) uint64 {
	if raw, ok := geminiPlain(t, src); ok {
		return maphash.Bytes(seed, raw) // maphash.String's of the same bytes
	}
	return maphash.String(seed, geminiStr(t, src))
}

// init readies an empty replay: its seed is drawn.
func (r *geminiReplay) init() {
	if !r.ready {
		r.seed, r.ready = maphash.MakeSeed(), true
	}
}

// geminiOp is what the replay does for one record (apply's cases), read of it alone: add a
// message, replace them all by a $set's checkpoint or add a metadata record's (the messages
// from..to of a list), or drop a $rewindTo's target and everything after it.
type geminiOp struct {
	what     uint8
	res      bool   // opAdd: the message is resumable
	id       uint64 // opAdd: the message's key; opRewind: the target's
	from, to int32
}

const (
	opNone uint8 = iota
	opAdd
	opCheckpoint
	opMetaMessages
	opRewind
)

// geminiMsg is a message of a checkpoint or a metadata record: its key, and whether it is
// resumable.
type geminiMsg struct {
	id  uint64
	res bool
}

// readGeminiOp is what apply does for record v, its keys drawn under seed; the messages it
// adds in bulk are appended to msgs. src: as apply's.
func readGeminiOp(seed maphash.Seed, v *jsonv.Value, src []byte, msgs *[]geminiMsg) geminiOp {
	list := func(what uint8, items []*jsonv.Value) geminiOp {
		op := geminiOp{what: what, from: int32(len(*msgs))}
		for _, it := range items {
			if isStr(it.Get("id")) {
				*msgs = append(*msgs, geminiMsg{geminiKey(seed, it.Get("id"), src), geminiResumable(it, src)})
			}
		}
		op.to = int32(len(*msgs))
		return op
	}
	switch {
	case isStr(v.Get("id")):
		return geminiOp{what: opAdd, id: geminiKey(seed, v.Get("id"), src), res: geminiResumable(v, src)}
	case isArr(v.Get("$set").Get("messages")):
		return list(opCheckpoint, arrOf(v.Get("$set").Get("messages")))
	case geminiPartialMeta(v) && !isObj(v.Get("$set")):
		return list(opMetaMessages, arrOf(v.Get("messages")))
	case isStr(v.Get("$rewindTo")):
		return geminiOp{what: opRewind, id: maphash.String(seed, v.Get("$rewindTo").Str)}
	}
	return geminiOp{}
}

// applyOp is apply of the record op was read of (its bulk messages in msgs), the replay's
// seed the one its keys were drawn under.
func (r *geminiReplay) applyOp(op geminiOp, msgs []geminiMsg) bool {
	switch op.what {
	case opAdd:
		r.addKey(op.id, op.res)
	case opCheckpoint:
		r.reset()
		fallthrough
	case opMetaMessages:
		for _, m := range msgs[op.from:op.to] {
			r.addKey(m.id, m.res)
		}
	case opRewind:
		return r.rewind(op.id)
	}
	return true
}

// rewind drops the message of key to and every one after it; false, the list emptied, when
// it holds none of that key.
func (r *geminiReplay) rewind(to uint64) bool {
	i, ok := r.at.lookup(to, r.ids)
	if !ok {
		r.reset()
		return false
	}
	r.ids, r.res = r.ids[:i], r.res[:i] // their entries no longer hold
	return true
}

// apply replays one record after line 1; false for a $rewindTo naming no message held. src
// is the record's bytes when its tree was built with geminiFields (texts left opaque), nil
// when its strings are decoded.
func (r *geminiReplay) apply(v *jsonv.Value, src []byte) bool {
	r.init()
	switch {
	case isStr(v.Get("id")):
		r.add(v, src)
	case isArr(v.Get("$set").Get("messages")):
		r.reset()
		for _, it := range arrOf(v.Get("$set").Get("messages")) {
			if isStr(it.Get("id")) {
				r.add(it, src)
			}
		}
	case geminiPartialMeta(v) && !isObj(v.Get("$set")):
		// A metadata record's messages are added (the loader does not clear the others).
		for _, it := range arrOf(v.Get("messages")) {
			if isStr(it.Get("id")) {
				r.add(it, src)
			}
		}
	case isStr(v.Get("$rewindTo")):
		return r.rewind(r.key(v.Get("$rewindTo").Str))
	}
	return true
}

// reset empties the message list.
func (r *geminiReplay) reset() {
	r.ids, r.res = r.ids[:0], r.res[:0] // no entry of the table holds any more
}

func (r *geminiReplay) add(v *jsonv.Value, src []byte) {
	r.addKey(r.keyOf(v.Get("id"), src), geminiResumable(v, src))
}

// addKey adds the message of key id, resumable or not.
func (r *geminiReplay) addKey(id uint64, res bool) {
	var slot *uint64
	if len(r.at.slots) > 0 {
		i, held, s := r.at.find(id, r.ids)
		if held {
			r.res[i] = res // kept in its place
			return
		}
		slot = s
	}
	if len(r.ids) == cap(r.ids) {
		// Doubled, not by the quarter append grows a long slice by: a long chat's list is
		// copied a few times instead of thirty.
		r.ids, r.res = slices.Grow(r.ids, max(len(r.ids), 1024)), slices.Grow(r.res, max(len(r.ids), 1024))
	}
	r.ids, r.res = append(r.ids, id), append(r.res, res)
	r.at.add(id, slot, r.ids)
}

// resumable: the replay holds a resumable message.
func (r *geminiReplay) resumable() bool {
	return slices.Contains(r.res, true)
}

// geminiResumable: a user message that is not the app's internal context, or a gemini
// message with text, tool calls or thoughts. src: as apply's.
func geminiResumable(m *jsonv.Value, src []byte) bool {
	t := m.Get("type")
	if !isStr(t) {
		return false
	}
	typ, ok := geminiPlain(t, src)
	if !ok {
		typ = []byte(geminiStr(t, src))
	}
	switch string(typ) {
	case "user":
		return geminiHasText(m.Get("content"), src, true)
	case "gemini":
		if len(arrOf(m.Get("toolCalls"))) > 0 || len(arrOf(m.Get("thoughts"))) > 0 {
			return true
		}
		return geminiHasText(m.Get("content"), src, false)
	}
	return false
}

// geminiHasText: a text of content c (a string, or parts with a text) is not blank once
// trimmed and, for a user message, does not begin with the app's internal context. With src
// (c built from it with its texts opaque) a text is read from its bytes: most begin with a
// character that settles it, and only the others are decoded.
func geminiHasText(c *jsonv.Value, src []byte, user bool) bool {
	has := func(t *jsonv.Value) bool {
		s := t.Str
		if src != nil {
			raw := src[t.Start+1 : t.End-1]
			if len(raw) == 0 {
				return false
			}
			// A character written as it is (no escape) begins the decoded text as well.
			if r, _ := utf8.DecodeRune(raw); r != '\\' && r != utf8.RuneError && !unicode.IsSpace(r) && (r != '<' || !user) {
				return true
			}
			s = geminiStr(t, src)
		}
		s = strings.TrimSpace(s)
		return s != "" && (!user || !strings.HasPrefix(s, "<session_context>"))
	}
	if isStr(c) {
		return has(c)
	}
	for _, p := range arrOf(c) {
		if t := p.Get("text"); isStr(t) && has(t) {
			return true
		}
	}
	return false
}

// geminiPlain is the decoded bytes of string t built opaque from src when it holds no escape
// (its bytes as they are); ok is false when t must be decoded (geminiStr).
func geminiPlain(t *jsonv.Value, src []byte) (raw []byte, ok bool) {
	if src == nil {
		return nil, false
	}
	raw = src[t.Start+1 : t.End-1]
	return raw, bytes.IndexByte(raw, '\\') < 0
}

// geminiStr is string t decoded: its Str, or from src when it was built opaque.
func geminiStr(t *jsonv.Value, src []byte) string {
	if src == nil {
		return t.Str
	}
	a := geminiTextArenas.Get().(*jsonv.Arena)
	defer geminiTextArenas.Put(a)
	return a.ParseFieldsValid(src[t.Start:t.End], nodeDialect, nil).Str
}

// geminiTextArenas decode the strings built opaque that must be read decoded (geminiStr).
var geminiTextArenas = sync.Pool{New: func() any { return new(jsonv.Arena) }}

// geminiMeta is what the checks against the file's place need of the metadata record.
type geminiMeta struct{ id, kind, hash string }

func geminiMetaOf(v *jsonv.Value) geminiMeta {
	return geminiMeta{strOf(v.Get("sessionId")), strOf(v.Get("kind")), strOf(v.Get("projectHash"))}
}

// geminiPatch is what merge reads of a record: the members of sessionId, kind and
// projectHash it names (has), each as strOf reads it.
type geminiPatch struct {
	has [3]bool
	val [3]string
}

// patchOf is what merge reads of v, taken by the loader for kind.
func patchOf(v *jsonv.Value, kind geminiKind) (p geminiPatch) {
	var src *jsonv.Value
	switch kind {
	case geminiSet:
		src = v.Get("$set")
	case geminiMetaRecord:
		src = v
	default:
		return p
	}
	for i, k := range [3]string{"sessionId", "kind", "projectHash"} {
		if x := src.Get(k); x != nil {
			p.has[i], p.val[i] = true, strOf(x) // JS spreads whatever the value is; a non-string fails the checks
		}
	}
	return p
}

// patched is merge of the record p was read of.
func (m geminiMeta) patched(p geminiPatch) geminiMeta {
	for i, to := range [3]*string{&m.id, &m.kind, &m.hash} {
		if p.has[i] {
			*to = p.val[i]
		}
	}
	return m
}

// merge is m after record v, as the loader merges the metadata: a $set's members and a
// metadata record's replace those they name (a $rewindTo and a message change nothing).
func (m geminiMeta) merge(v *jsonv.Value) geminiMeta {
	var src *jsonv.Value
	switch geminiKindOf(v) {
	case geminiSet:
		src = v.Get("$set")
	case geminiMetaRecord:
		src = v
	default:
		return m
	}
	for _, f := range []struct {
		key string
		to  *string
	}{{"sessionId", &m.id}, {"kind", &m.kind}, {"projectHash", &m.hash}} {
		if x := src.Get(f.key); x != nil {
			*f.to = strOf(x) // JS spreads whatever the value is; a non-string fails the checks
		}
	}
	return m
}

// geminiPlace judges the metadata against the file's place (kind by directory, sessionId by
// name, projectHash by the project's .project_root) and gives the sweep's warnings for a main
// session: own says the chat holds a resumable message.
func geminiPlace(path string, m geminiMeta, own bool) (problem string, warnings []string) {
	chats, sub, ok := geminiChats(path)
	if !ok {
		return "", nil
	}
	base := filepath.Base(path)
	nm := geminiMainRe.FindStringSubmatch(base)
	if want := map[bool]string{false: "main", true: "subagent"}[sub]; m.kind != want {
		return fmt.Sprintf("metadata kind is %q, a file at this place is %q", m.kind, want), nil
	}
	if (!sub && nm != nil && geminiID8(m.id) != nm[1]) || (sub && m.id+".jsonl" != base) {
		return fmt.Sprintf("metadata sessionId %q does not match the file name", m.id), nil
	}
	if h, ok := geminiProjectHash(filepath.Dir(chats)); ok && m.hash != h {
		return "metadata projectHash is not the SHA-256 of the project's .project_root", nil
	}
	if sub {
		return "", nil // not the sweep's: it lists chats/session-* only
	}
	if !own {
		warnings = append(warnings, "no resumable message: Gemini's start-up sweep deletes this session as corrupted")
	}
	if nm != nil {
		warnings = append(warnings, geminiStubWarnings(chats, base, nm[1], own)...)
	}
	return "", warnings
}

// NewSequence: the replay and the checks against the file's place, record by record, for a
// chat too large to hold (its warnings too).
func (geminiLog) NewSequence(path string) format.Sequence {
	s := &geminiSequence{path: path}
	s.r.init() // the seed batches draw their keys under
	return s
}

type geminiSequence struct {
	path     string
	meta     *geminiMeta
	r        geminiReplay
	ignored  int // records the loader ignores
	warnings []string
	arena    jsonv.Arena // each record's tree, dropped once read (the replay keeps no node)
	msgs     []geminiMsg // the bulk messages of the record being applied
}

// geminiMessageFields: what the replay reads of a message (add, geminiResumable): its id,
// type and texts are left opaque (read from their bytes, decoded only where they hold an
// escape or a text's first character does not settle geminiHasText), and of its tool calls
// and thoughts only how many there are.
var geminiMessageFields = &jsonv.Fields{Members: map[string]*jsonv.Fields{
	"id": {Opaque: true}, "type": {Opaque: true},
	"content": {Opaque: true, Items: &jsonv.Fields{Opaque: true, Members: map[string]*jsonv.Fields{
		"text": {Opaque: true},
	}}},
	"toolCalls": {Opaque: true, Items: &jsonv.Fields{Opaque: true}},
	"thoughts":  {Opaque: true, Items: &jsonv.Fields{Opaque: true}},
}}

// geminiFields: what the sequence reads of a record (RecordProblem's checklist, geminiMetaOf,
// merge, geminiKindOf, the replay), a message's members as geminiMessageFields names them.
var geminiFields = &jsonv.Fields{Members: map[string]*jsonv.Fields{
	"sessionId": nil, "projectHash": nil, "startTime": nil, "lastUpdated": nil, "kind": nil,
	"$rewindTo": nil,
	"$set": {Members: map[string]*jsonv.Fields{
		"sessionId": nil, "projectHash": nil, "kind": nil,
		"messages": {Items: geminiMessageFields},
	}},
	"messages":  {Items: geminiMessageFields},
	"id":        geminiMessageFields.Members["id"],
	"type":      geminiMessageFields.Members["type"],
	"content":   geminiMessageFields.Members["content"],
	"toolCalls": geminiMessageFields.Members["toolCalls"],
	"thoughts":  geminiMessageFields.Members["thoughts"],
}}

// Record applies RecordProblem's checklist to a record and replays it.
func (s *geminiSequence) Record(rec []byte) string {
	if err := jsonv.Valid(rec, nodeDialect); err != nil {
		return err.Error() // as RecordProblem says it
	}
	return s.RecordValid(rec)
}

// RecordValid: Record of a record judgeRecords has found valid.
func (s *geminiSequence) RecordValid(rec []byte) string {
	return s.record(s.arena.ParseFieldsValid(rec, nodeDialect, geminiFields), rec)
}

// ChecksRecords: Record applies RecordProblem's checklist on its own parse of the record.
func (s *geminiSequence) ChecksRecords() {}

// record is Record of the record's tree v; src: as geminiReplay.apply's.
func (s *geminiSequence) record(v *jsonv.Value, src []byte) string {
	s.msgs = s.msgs[:0]
	var head geminiHead
	r := readGeminiRec(s.r.seed, v, src, s.meta == nil, &head, &s.msgs)
	return s.apply(&r, &head, s.msgs)
}

// geminiRec is what the sequence reads of a record after line 1, all its findings come from
// (of line 1: geminiHead); its replay's bulk messages are kept apart.
type geminiRec struct {
	err     string // the syntax error of a record given unchecked, "" for a valid one
	problem string // geminiRecordProblem's
	ignored bool   // a record the loader ignores
	patch   *geminiPatch
	op      geminiOp
}

// geminiHead is what the sequence reads of line 1, the metadata record.
type geminiHead struct {
	problem string // geminiMetaProblem's
	meta    geminiMeta
}

// readGeminiRec reads the tree v of a record (built with geminiFields from src), and when
// header says so, into head, as the file's first record; keys are drawn under seed, the
// replay's bulk messages appended to msgs.
func readGeminiRec(seed maphash.Seed, v *jsonv.Value, src []byte, header bool, head *geminiHead, msgs *[]geminiMsg) geminiRec {
	if header {
		if head.problem = geminiMetaProblem(v); head.problem == "" {
			head.meta = geminiMetaOf(v)
		}
	}
	kind := geminiKindOf(v)
	r := geminiRec{problem: geminiKindProblem(v, kind)}
	if r.problem != "" {
		return r
	}
	r.ignored = kind == geminiIgnoredRecord
	if p := patchOf(v, kind); p.has != [3]bool{} {
		kept := p // only a record that names a member is given one
		r.patch = &kept
	}
	r.op = readGeminiOp(seed, v, src, msgs)
	return r
}

// apply is Record of the record r (and head, for line 1) was read of, its replay's bulk
// messages in msgs.
func (s *geminiSequence) apply(r *geminiRec, head *geminiHead, msgs []geminiMsg) string {
	if r.err != "" {
		return r.err
	}
	if s.meta == nil {
		if head.problem != "" {
			return head.problem
		}
		m := head.meta
		s.meta = &m
		return ""
	}
	if r.problem != "" {
		return r.problem
	}
	if r.ignored {
		s.ignored++
	}
	if r.patch != nil {
		*s.meta = s.meta.patched(*r.patch)
	}
	if !s.r.applyOp(r.op, msgs) {
		return geminiLostRewind
	}
	return ""
}

// geminiBatch reads the records of a block of a chat ahead of the sequence: its first record
// as line 1 too.
type geminiBatch struct {
	seed  maphash.Seed
	arena jsonv.Arena
	recs  []geminiRec
	head  geminiHead
	msgs  []geminiMsg
}

func (s *geminiSequence) NewBatch() format.RecordBatch { return &geminiBatch{seed: s.r.seed} }

func (s *geminiSequence) ApplyBatch(rb format.RecordBatch, k int) string {
	b := rb.(*geminiBatch)
	return s.apply(&b.recs[k], &b.head, b.msgs)
}

func (b *geminiBatch) Reset() {
	clear(b.recs) // no string of the last block is kept alive
	b.recs, b.msgs, b.head = b.recs[:0], b.msgs[:0], geminiHead{}
}

func (b *geminiBatch) Add(rec []byte, valid bool) {
	if !valid {
		if err := jsonv.Valid(rec, nodeDialect); err != nil {
			b.recs = append(b.recs, geminiRec{err: err.Error()})
			return
		}
	}
	b.AddKeyed(rec, nil)
}

// AddKeyed: Add of a valid record, whose members' keys begin at keys (nil: not known).
func (b *geminiBatch) AddKeyed(rec []byte, keys []int32) {
	v := b.arena.ParseFieldsKeys(rec, nodeDialect, geminiFields, keys)
	b.recs = append(b.recs, readGeminiRec(b.seed, v, rec, len(b.recs) == 0, &b.head, &b.msgs))
}

func (s *geminiSequence) End() string {
	if s.meta == nil {
		return ""
	}
	p, w := geminiPlace(s.path, *s.meta, s.r.resumable())
	s.warnings = append(geminiIgnoredWarning(s.ignored), w...)
	return p
}

// Warnings: the records Gemini ignores and the sweep's, once End has run.
func (s *geminiSequence) Warnings() []string { return s.warnings }

// geminiNoToolIDs: geminiToolIDs finds nothing in the valid record b, told from its bytes: no
// member of b is named functionCall, functionResponse or toolCalls. A name is written as it
// is, between its quotes, unless it holds a \u escape (no other escape stands for a letter).
// The words alone are common in a chat's texts, the quoted names are not; they are looked for
// by their capital letter, rare in a text.
func geminiNoToolIDs(b []byte) bool {
	return !geminiQuoted(b, "Call", `"functionCall"`, `"toolCalls"`) &&
		!geminiQuoted(b, "Response", `"functionResponse"`) && !bytes.Contains(b, []byte(`\u`))
}

// geminiQuoted: b holds one of names, each found where it holds part.
func geminiQuoted(b []byte, part string, names ...string) bool {
	for i := 0; ; i++ {
		j := bytes.Index(b[i:], []byte(part))
		if j < 0 {
			return false
		}
		i += j
		for _, n := range names {
			if k := i - strings.Index(n, part); k >= 0 && bytes.HasPrefix(b[k:], []byte(n)) {
				return true
			}
		}
	}
}

// geminiToolIDs walks v (under the member key) for the ids of the tool calls it makes (a
// functionCall's, a toolCalls entry's) into calls, and of the results it holds (a
// functionResponse's) into results.
func geminiToolIDs(v *jsonv.Value, key string, calls map[string]bool, results *[]string) {
	switch v.Type {
	case jsonv.Object:
		if id := v.Get("id"); isStr(id) {
			switch key {
			case "functionCall":
				calls[id.Str] = true
			case "functionResponse":
				*results = append(*results, id.Str)
			}
		}
		for _, m := range v.Keys {
			geminiToolIDs(m.Val, m.Key, calls, results)
		}
	case jsonv.Array:
		for _, it := range v.Items {
			if key == "toolCalls" && isStr(it.Get("id")) {
				calls[it.Get("id").Str] = true
			}
			geminiToolIDs(it, "", calls, results)
		}
	}
}

// FinishesAsIs is whether FinishSalvage leaves salvaged as it is, read streaming: no record
// recovered from a glued line answers a call no kept record makes, and the replay of the
// salvage is resumable or has no context-only checkpoint after its last resumable point.
// The ids and lines it must remember are kept as 64-bit hashes. false also when a drop is
// possible but not certain: FinishSalvage, on the file held whole, decides.
func (geminiLog) FinishesAsIs(_ string, damaged io.ReaderAt, dsize int64, salvaged io.ReaderAt, ssize int64) (bool, error) {
	fr, err := geminiFinishRead(damaged, dsize, salvaged, ssize)
	return err == nil && !fr.checkpoint && len(fr.drop) == 0, err
}

// geminiFinishNeed is what a salvage's finish has to do: drop context-only checkpoints, drop
// the lines of orphan answers (by start: their lengths with their '\n').
type geminiFinishNeed struct {
	checkpoint bool
	drop       map[int64]int64
}

// geminiFinishRead is what FinishesAsIs reads of the salvage (and, where some record answers
// a call no record makes, of the damaged file): whether a checkpoint may be dropped (the
// replay of every record is not resumable and has a context-only checkpoint after its last
// resumable point), and the lines the split recovered from a glued line — no whole line of
// damaged — that answer a tool call no record of salvaged makes.
func geminiFinishRead(damaged io.ReaderAt, dsize int64, salvaged io.ReaderAt, ssize int64) (fr geminiFinishNeed, err error) {
	f := geminiFinish{seed: maphash.MakeSeed()}
	err = f.read(salvaged, ssize)
	if err == errGeminiReplayAll {
		f = geminiFinish{seed: f.seed, all: true}
		err = f.read(salvaged, ssize)
	}
	if err != nil {
		return fr, err
	}
	fr.checkpoint = f.pending && !f.r.resumable()
	// Records answering a call no record makes: dropped unless the damaged file holds each
	// as a whole line.
	orphans, whole, err := geminiOrphans(f.answers, f.calls, damaged, dsize, f.lineKey)
	fr.drop = map[int64]int64{}
	for _, a := range f.answers {
		if orphans[a.line] && !whole[a.line] {
			fr.drop[a.start] = a.n
		}
	}
	return fr, err
}

// geminiOrphans: the lines (by key) of answers that answer a call calls lacks, and which of
// them damaged holds as a whole valid line (read only when there are some).
func geminiOrphans(answers []geminiAnswer, calls map[uint64]bool, damaged io.ReaderAt, dsize int64, key func(geminiLine) (uint64, error)) (orphans, whole map[uint64]bool, err error) {
	orphans = map[uint64]bool{}
	for _, a := range answers {
		for _, id := range a.ids {
			if !calls[id] {
				orphans[a.line] = true
			}
		}
	}
	whole = map[uint64]bool{}
	if len(orphans) == 0 {
		return orphans, whole, nil
	}
	err = format.EachLineLong(geminiLog{}, damaged, dsize, func(start, end int64, line []byte, terminated, long bool) error {
		k, err := key(geminiLine{damaged, start, end, line, terminated, long})
		if err != nil {
			return err
		}
		if orphans[k] && format.ValidRecord(geminiLog{}, line) {
			whole[k] = true
		}
		return nil
	})
	return orphans, whole, err
}

// errGeminiReplayAll: a pass of FinishesAsIs that replayed only what it needed found it needs
// a replay of every record (geminiFinish.read).
var errGeminiReplayAll = errors.New("the salvage needs a replay of every record")

// geminiFinish is what FinishesAsIs reads of the salvage, in one pass: the tool calls its
// records make, the records holding tool results, and whether a context-only checkpoint after
// its last resumable point is pending, with the replay that then tells whether the chat is
// resumable all the same.
//
// The replay matters only while a checkpoint is pending: a record that makes the pending end
// (a resumable message) leaves the replay unread until the next context-only checkpoint, and
// that one empties the list before it adds its messages. So the records are replayed only
// while one is pending, and the replay is then that of every record (inexact says records
// were left out since it was last emptied). A record with a string id is added as a message
// even where it holds a $set.messages checkpoint: when such a one becomes pending and records
// were left out, the pass stops with errGeminiReplayAll and is made again with all, replaying
// every record.
type geminiFinish struct {
	seed    maphash.Seed
	all     bool // replay every record
	calls   map[uint64]bool
	answers []geminiAnswer // the records holding tool results
	r       geminiReplay
	pending bool
	inexact bool // records were left out of the replay since it was last emptied
	arena   jsonv.Arena
	keys    []int32
}

// geminiAnswer is a record holding tool results: its line's key and place, and its results' ids.
type geminiAnswer struct {
	line     uint64
	ids      []uint64
	start, n int64 // the line's place, and its length with its '\n'
}

// geminiCheckpointFields: what FinishesAsIs reads of a record while no checkpoint is pending:
// whether it is a checkpoint (and a message: its id), and its messages.
var geminiCheckpointFields = &jsonv.Fields{Members: map[string]*jsonv.Fields{
	"id":   geminiMessageFields.Members["id"],
	"$set": {Members: map[string]*jsonv.Fields{"messages": {Items: geminiMessageFields}}},
}}

// lineKey is the key of a line (without its '\n'), held or long (then read from r: its
// start and end, where the next line starts, and terminated say where).
func (f *geminiFinish) lineKey(l geminiLine) (uint64, error) {
	if !l.long {
		return maphash.Bytes(f.seed, bytes.TrimRight(l.line, "\r")), nil
	}
	n := l.end - l.start
	if l.terminated {
		n--
	}
	n, err := format.TrimmedLen(l.r, l.start, n)
	if err != nil {
		return 0, err
	}
	var h maphash.Hash
	h.SetSeed(f.seed)
	if _, err := io.Copy(&h, io.NewSectionReader(l.r, l.start, n)); err != nil {
		return 0, err
	}
	return h.Sum64(), nil
}

// geminiLine is a line the finish reads: held, or long (format.EachLineLong: line is then
// its record's skeleton) and read from r where its key needs its bytes.
type geminiLine struct {
	r                io.ReaderAt
	start, end       int64
	line             []byte
	terminated, long bool
}

// read reads the records of salvaged.
func (f *geminiFinish) read(salvaged io.ReaderAt, ssize int64) error {
	f.calls = map[uint64]bool{}
	first := true
	return format.EachLineLong(geminiLog{}, salvaged, ssize, func(start, end int64, line []byte, terminated, long bool) error {
		if !format.ValidRecordKeys(geminiLog{}, line, &f.keys) { // the keys of the record's members
			return nil
		}
		body := bytes.TrimRight(line, "\r")
		var v *jsonv.Value
		var src []byte // the replay's: nil for a whole tree
		if geminiNoToolIDs(body) {
			fields := geminiFields
			if !first && !f.pending && !f.all {
				fields = geminiCheckpointFields
			}
			v, src = f.arena.ParseFieldsKeys(body, nodeDialect, fields, f.keys), body
		} else {
			v = jsonv.ParseDepthValid(body, nodeDialect, 0) // the whole tree, as Parse builds it
			if err := f.toolIDs(v, geminiLine{salvaged, start, end, line, terminated, long}); err != nil {
				return err
			}
		}
		if first {
			first = false // the metadata record
			return nil
		}
		// The checkpoints without a resumable message after the last resumable point.
		checkpoint, resumable := geminiCheckpoint(v, src)
		if !f.all && !f.pending {
			if !checkpoint || resumable {
				f.inexact = true // none pending after it either: not replayed
				return nil
			}
			// Pending from here: the replay must be exact after this record.
			if isStr(v.Get("id")) { // added as a message, the list not emptied
				if f.inexact {
					return errGeminiReplayAll
				}
				if src != nil {
					v = f.arena.ParseFieldsKeys(body, nodeDialect, geminiFields, f.keys) // its members as a message
				}
			}
			f.inexact = false
		}
		f.r.apply(v, src)
		if checkpoint {
			f.pending = !resumable
		} else if isStr(v.Get("id")) && geminiResumable(v, src) {
			f.pending = false
		}
		return nil
	})
}

// toolIDs adds the tool calls the whole tree v of l makes, and its tool results.
func (f *geminiFinish) toolIDs(v *jsonv.Value, l geminiLine) error {
	var results []string
	cs := map[string]bool{}
	geminiToolIDs(v, "", cs, &results)
	for id := range cs {
		f.calls[maphash.String(f.seed, id)] = true
	}
	if len(results) > 0 {
		key, err := f.lineKey(l)
		if err != nil {
			return err
		}
		a := geminiAnswer{line: key, start: l.start, n: l.end - l.start}
		for _, id := range results {
			a.ids = append(a.ids, maphash.String(f.seed, id))
		}
		f.answers = append(f.answers, a)
	}
	return nil
}
