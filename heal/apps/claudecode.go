package apps

import (
	"context"
	"hash/maphash"
	"io"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/sessionmedic/sessionmedic/heal/format"
	"github.com/sessionmedic/sessionmedic/heal/fsio"
	"github.com/sessionmedic/sessionmedic/heal/jsonv"
	"github.com/sessionmedic/sessionmedic/heal/lock"
	"github.com/sessionmedic/sessionmedic/policy"
)

// Claude Code (claude-code.md): one append-only JSONL transcript per session,
// <config>/projects/<slug>/<sessionId>.jsonl, and its subagents'
// <sessionId>/subagents/[<sub>/]agent-<id>.jsonl, in the same record format. Records are
// appended in batches by several threads with no lock, so a torn stub may have the next
// batch glued onto it; the app's loader drops any line that is not one JSON object, glued
// records with it, which the split salvage recovers. There is no lock: a transcript is live
// while Claude's pid registry names its session (heal/lock).

func addClaudeCode(r *format.Registry) {
	r.Add("claude-code", func(string) format.Profile { return claudeCodeLog{} }, claudeCodeLog{})
	r.AddLock(string(policy.LockClaudeCode), lockClaudeCode)
}

// nodeDialect is what an app on Node reads: its file decoded as UTF-8 lossily (a byte that is
// not UTF-8 becomes U+FFFD), then JSON.parse. A record with such a byte in a string loads
// (Claude Code 2.1.330, seen with the oracle; Gemini CLI reads with readline, alike). V8's
// JSON.parse has no nesting limit short of memory (Node 20 parses 5,000,000 levels), so
// neither has this one, short of 2^24.
var nodeDialect = jsonv.Dialect{Lossy: true, MaxDepth: 1 << 24}

// claudeCodeLog is a session's (or a subagent's) transcript.
type claudeCodeLog struct{ format.Log }

// OwnKinds: the damage kinds its checklist reports (see format.Kinds).
func (claudeCodeLog) OwnKinds() []string {
	return []string{format.KindSchema}
}

func (claudeCodeLog) Name() string           { return "claude-code" }
func (claudeCodeLog) Dialect() jsonv.Dialect { return nodeDialect }
func (claudeCodeLog) EmptyIsDamage() bool    { return true }
func (claudeCodeLog) AppendOnly() bool       { return true }
func (p claudeCodeLog) CheckLines(f format.File, lines []format.Line) format.Verdict {
	return format.CheckRecords(p, f, lines) // record by record: the same pass as a streamed file's
}

// SkeletonFields: what its checks read of a record (claudeFields holds claudeProblemFields;
// Whole reads its keys, type, sessionId and uuid), so that a long record is judged from
// those alone where its skeleton is over the bound (format.SkeletonFielder).
func (claudeCodeLog) SkeletonFields() *jsonv.Fields { return claudeFields }

// RecordProblem: the per-record checklist; which record comes first does not matter (Claude
// skips a torn first line and re-appends its atis-latch record).
func (claudeCodeLog) RecordProblem(rec []byte, _ bool) string {
	v, err := jsonv.ParseFields(rec, nodeDialect, claudeProblemFields)
	if err != nil {
		return err.Error()
	}
	return claudeRecordProblem(v)
}

// NoRecords: a file of blank lines holds no conversation to resume.
func (claudeCodeLog) NoRecords() format.Verdict { return claudeNoConversation() }

// AppendedOK: any record the checklist accepts may be appended (the file already holds the
// user or assistant record that made it healthy).
func (p claudeCodeLog) AppendedOK(rec []byte) bool { return p.RecordProblem(rec, false) == "" }

// RecordStarts: JSON.stringify writes a chain record's parentUuid first, a meta record's type.
func (claudeCodeLog) RecordStarts() [][]byte {
	return [][]byte{[]byte(`{"parentUuid":`), []byte(`{"type":"`)}
}

// Whole: a record as Claude writes one (its first key parentUuid or type, a string type and
// sessionId, a chain record's string uuid), never a value that was nested in a torn record
// (a content block, a message: they carry no sessionId).
func (claudeCodeLog) Whole(rec *jsonv.Value) bool {
	if !isObj(rec) || len(rec.Keys) == 0 || !isStr(rec.Get("type")) || !isStr(rec.Get("sessionId")) {
		return false
	}
	switch rec.Keys[0].Key {
	case "parentUuid":
		return claudeRecordProblem(rec) == "" && isStr(rec.Get("uuid"))
	case "type":
		return claudeRecordProblem(rec) == ""
	}
	return false
}

// TruncatedTail: Claude removes rows itself (removeMessageByUuid tombstones an orphaned
// final assistant row after a streaming fallback) and rewrites its meta records, so a
// missing tail of only those is not a truncation; a missing user row, or more than one
// record, is.
func (claudeCodeLog) TruncatedTail(missing io.ReaderAt, size int64) (bool, string, error) {
	records, assistants, meta := 0, 0, 0
	user := false
	err := format.SplitAtLong(claudeCodeLog{}, missing, size, nil, func(l format.Line) error {
		if l.Val == nil {
			return nil
		}
		records++
		switch t := strOf(l.Val.Get("type")); {
		case t == "user":
			user = true
			return format.Stop
		case t == "assistant":
			assistants++
		case !claudeChainType(t):
			meta++
		}
		return nil
	})
	switch {
	case err != nil:
		return true, "", err
	case user:
		return true, "", nil
	case meta == records:
		return false, "only meta records are missing from the last-good copy's tail: Claude rewrites those itself", nil
	case records == 1 && assistants == 1:
		return false, "only the final assistant row of the last-good copy is missing: it may be Claude's own tombstone (removeMessageByUuid after a streaming fallback)", nil
	}
	return true, "", nil
}

// lockClaudeCode waits until no live Claude process has the transcript's session open.
func lockClaudeCode(ctx context.Context, path string, _ format.Profile, lp format.LockParams) (format.Lock, error) {
	cfg, sid, ok := claudeSession(path)
	if !ok {
		return format.Unlocked{}, nil
	}
	if err := lock.ClaudeCode(ctx, cfg, sid, lockOptions(lp)); err != nil {
		return nil, err
	}
	return format.Unlocked{}, nil
}

// claudeSession is the config dir and session id of a transcript; ok is false for a file
// outside Claude's layout. Through a symlinked rule root the layout is where it points.
func claudeSession(path string) (cfg, sid string, ok bool) {
	if cfg, sid, ok = claudeLayout(path); ok {
		return cfg, sid, true
	}
	return claudeLayout(filepath.Join(fsio.Resolved(filepath.Dir(path)), filepath.Base(path)))
}

// claudeLayout reads the config dir and session id off a transcript path as written:
// <cfg>/projects/<slug>/<sid>.jsonl, or <cfg>/projects/<slug>/<sid>/subagents/…/agent-*.jsonl.
func claudeLayout(path string) (cfg, sid string, ok bool) {
	base, dir := filepath.Base(path), filepath.Dir(path)
	if !strings.HasSuffix(base, ".jsonl") {
		return "", "", false
	}
	if strings.HasPrefix(base, "agent-") {
		for d := dir; filepath.Dir(d) != d; d = filepath.Dir(d) {
			if filepath.Base(d) != "subagents" {
				continue
			}
			session := filepath.Dir(d)
			if projects := filepath.Dir(filepath.Dir(session)); filepath.Base(projects) == "projects" {
				return filepath.Dir(projects), filepath.Base(session), true
			}
		}
	}
	if projects := filepath.Dir(dir); filepath.Base(projects) == "projects" {
		return filepath.Dir(projects), strings.TrimSuffix(base, ".jsonl"), true
	}
	return "", "", false
}

// claudeFileSession is the session a transcript's records belong to, read off its path
// ("" when the path does not say).
func claudeFileSession(path string) string {
	if _, sid, ok := claudeLayout(path); ok && uuidRe.MatchString(sid) {
		return sid
	}
	if stem := strings.TrimSuffix(filepath.Base(path), ".jsonl"); uuidRe.MatchString(stem) {
		return stem
	}
	return ""
}

// claudeChainType: the record types of the conversation chain.
func claudeChainType(t string) bool {
	return t == "user" || t == "assistant" || t == "attachment" || t == "system"
}

// claudeRecordProblem applies claude-code.md "What valid means" 4 to one record. Attachment
// and system rows carry no message (their content is attachment and content): only user and
// assistant rows need one.
func claudeRecordProblem(v *jsonv.Value) string {
	t := v.Get("type")
	if !isStr(t) {
		return "record has no string type"
	}
	if !claudeChainType(t.Str) {
		return ""
	}
	// No uuid, sessionId or parentUuid is required: Claude Code 2.1.330 resumes a chain
	// record without any of them, or with a parentUuid that is not a string, and sends every
	// message (seen with the oracle); a missing parent is bridged. Only a user or assistant
	// row without a message object is skipped.
	if (t.Str == "user" || t.Str == "assistant") && !isObj(v.Get("message")) {
		return t.Str + " record has no message object"
	}
	return ""
}

func claudeNoConversation() format.Verdict {
	return format.Damage(format.KindSchema, 0, "no user or assistant record: Claude finds no conversation to resume")
}

// claudeWarner gathers the findings Claude copes with itself (claude-code.md "What valid
// means" 4 and 6), record by record: dangling parents (counted at the end, against every
// uuid of the file), records of another session, an assistant message without role or
// content, a final tool_use without its result.
type claudeWarner struct {
	sid                       string
	dangling, foreign, hollow int
	lastToolUses              []string        // the tool_use ids of the last assistant row
	answered                  map[string]bool // tool_use ids with a result after it
}

func (w *claudeWarner) warnings() []string {
	var out []string
	if w.dangling > 0 {
		out = append(out, format.KindDanglingReference+": "+strconv.Itoa(w.dangling)+" record(s) name a parentUuid not in the file (Claude bridges the chain)")
	}
	if w.foreign > 0 {
		out = append(out, strconv.Itoa(w.foreign)+" record(s) carry another session's sessionId")
	}
	if w.hollow > 0 {
		out = append(out, strconv.Itoa(w.hollow)+" message(s) without role or content (or a null one): Claude skips them")
	}
	for _, id := range w.lastToolUses {
		if !w.answered[id] {
			out = append(out, "the last assistant row's tool_use "+id+" has no tool_result (Claude appends an interrupted result on resume)")
		}
	}
	return out
}

// claudeBlocks are the content blocks of a record's message of the given type.
func claudeBlocks(v *jsonv.Value, typ string) []*jsonv.Value {
	c := v.Get("message").Get("content")
	if !isArr(c) {
		return nil
	}
	var out []*jsonv.Value
	for _, b := range c.Items {
		if strOf(b.Get("type")) == typ {
			out = append(out, b)
		}
	}
	return out
}

// NewSequence: a Claude transcript must hold a user or assistant record somewhere; its
// warnings are claudeWarner's, the uuids kept as hashes.
func (claudeCodeLog) NewSequence(path string) format.Sequence {
	return &claudeSequence{w: claudeWarner{sid: claudeFileSession(path), answered: map[string]bool{}},
		seed: maphash.MakeSeed(), uuids: map[uint64]bool{}}
}

type claudeSequence struct {
	conversation bool
	w            claudeWarner
	seed         maphash.Seed
	uuids        map[uint64]bool // the hashes of the records' uuids
	parents      []uint64        // ... and of their string parentUuids
	arena        jsonv.Arena     // each record's tree, dropped once judged
	ids          []string        // the tool ids of the record read last (readClaudeRec)
}

// claudeRec is what a Claude Code sequence reads of a record: claudeRecordProblem's
// finding (or the syntax error of a record given unchecked), and what the uuids and
// claudeWarner's findings need.
type claudeRec struct {
	problem          string
	typ              string // "user", "assistant" or "" (another type)
	uuid, parent     uint64 // hashes, when has says so
	hasUUID, hasPar  bool
	foreign, hollow  bool
	toolFrom, toolTo int // the record's tool ids in its reader's ids: an assistant row's tool_use ids, a user row's tool_result tool_use_ids
}

// readClaudeRec reads the tree v of a record, its uuids hashed with seed, its sessionId
// compared with the file's (sid), its tool ids appended to ids.
func readClaudeRec(v *jsonv.Value, seed maphash.Seed, sid string, ids *[]string) claudeRec {
	if p := claudeRecordProblem(v); p != "" {
		return claudeRec{problem: p}
	}
	var r claudeRec
	if u := v.Get("uuid"); isStr(u) {
		r.uuid, r.hasUUID = maphash.String(seed, u.Str), true
	}
	if p := v.Get("parentUuid"); isStr(p) {
		r.parent, r.hasPar = maphash.String(seed, p.Str), true
	}
	if s := v.Get("sessionId"); sid != "" && isStr(s) && s.Str != sid {
		r.foreign = true
	}
	block, member := "", ""
	switch t := strOf(v.Get("type")); t {
	case "assistant":
		m := v.Get("message")
		r.typ, r.hollow = t, m.Get("role") == nil || m.Get("content") == nil || m.Get("content").Type == jsonv.Null
		block, member = "tool_use", "id"
	case "user":
		c := v.Get("message").Get("content")
		r.typ, r.hollow = t, c == nil || c.Type == jsonv.Null // Claude sends no message for it (seen with the oracle)
		block, member = "tool_result", "tool_use_id"
	}
	r.toolFrom = len(*ids)
	if block != "" {
		for _, b := range claudeBlocks(v, block) {
			*ids = append(*ids, strOf(b.Get(member)))
		}
	}
	r.toolTo = len(*ids)
	return r
}

// apply is Record of the record r was read of (its tool ids in ids).
func (s *claudeSequence) apply(r claudeRec, ids []string) string {
	if r.problem != "" {
		return r.problem
	}
	w := &s.w
	if r.typ != "" {
		s.conversation = true
	}
	if r.hasUUID {
		s.uuids[r.uuid] = true
	}
	if r.hasPar {
		s.parents = append(s.parents, r.parent)
	}
	if r.foreign {
		w.foreign++
	}
	if r.hollow {
		w.hollow++
	}
	switch r.typ {
	case "assistant":
		w.lastToolUses = append(w.lastToolUses[:0], ids[r.toolFrom:r.toolTo]...)
		clear(w.answered)
	case "user":
		if len(w.lastToolUses) > 0 {
			for _, id := range ids[r.toolFrom:r.toolTo] {
				w.answered[id] = true
			}
		}
	}
	return ""
}

// claudeBatch reads the records of a block of a transcript ahead of the sequence.
type claudeBatch struct {
	seed  maphash.Seed
	sid   string
	arena jsonv.Arena
	recs  []claudeRec
	ids   []string
}

func (s *claudeSequence) NewBatch() format.RecordBatch {
	return &claudeBatch{seed: s.seed, sid: s.w.sid}
}

func (s *claudeSequence) ApplyBatch(b format.RecordBatch, k int) string {
	cb := b.(*claudeBatch)
	return s.apply(cb.recs[k], cb.ids)
}

func (b *claudeBatch) Reset() { b.recs, b.ids = b.recs[:0], b.ids[:0] }

func (b *claudeBatch) Add(rec []byte, valid bool) {
	if !valid {
		if err := jsonv.Valid(rec, nodeDialect); err != nil {
			b.recs = append(b.recs, claudeRec{problem: err.Error()}) // as RecordProblem says it
			return
		}
	}
	b.AddKeyed(rec, nil)
}

// AddKeyed: Add of a valid record, whose members' keys begin at keys (nil: not known).
func (b *claudeBatch) AddKeyed(rec []byte, keys []int32) {
	v := b.arena.ParseFieldsKeys(rec, nodeDialect, claudeFields, keys)
	b.recs = append(b.recs, readClaudeRec(v, b.seed, b.sid, &b.ids))
}

// claudeProblemFields: what claudeRecordProblem reads of a record (its message's type alone).
var claudeProblemFields = &jsonv.Fields{Members: map[string]*jsonv.Fields{"type": nil, "message": {}}}

// claudeFields: what a sequence reads of a record (claudeRecordProblem, the uuids, the
// warnings): a message's text and a tool's input or output are never built.
var claudeFields = &jsonv.Fields{Members: map[string]*jsonv.Fields{
	"type": nil, "uuid": nil, "parentUuid": nil, "sessionId": nil,
	"message": {Members: map[string]*jsonv.Fields{
		"role": {Opaque: true},
		"content": {Opaque: true, Items: &jsonv.Fields{Members: map[string]*jsonv.Fields{
			"type": nil, "id": nil, "tool_use_id": nil,
		}}},
	}},
}}

func (s *claudeSequence) Record(rec []byte) string {
	if err := jsonv.Valid(rec, nodeDialect); err != nil {
		return err.Error() // as RecordProblem says it
	}
	return s.RecordValid(rec)
}

// RecordValid: Record of a record judgeRecords has found valid.
func (s *claudeSequence) RecordValid(rec []byte) string {
	return s.record(s.arena.ParseFieldsValid(rec, nodeDialect, claudeFields))
}

// record is Record of the record's tree.
func (s *claudeSequence) record(v *jsonv.Value) string {
	s.ids = s.ids[:0]
	return s.apply(readClaudeRec(v, s.seed, s.w.sid, &s.ids), s.ids)
}

// ChecksRecords: Record applies RecordProblem's checklist on its own parse of the record.
func (s *claudeSequence) ChecksRecords() {}

// Warnings: claudeWarner's, once End has run.
func (s *claudeSequence) Warnings() []string {
	s.w.dangling = 0
	for _, p := range s.parents {
		if !s.uuids[p] {
			s.w.dangling++
		}
	}
	return s.w.warnings()
}

// Held: the uuids' set (a hash and a map slot's share each), the parents, the last tool
// uses and their results, the arena (format.HeldSequence).
func (s *claudeSequence) Held() int {
	return len(s.uuids)*24 + cap(s.parents)*8 + (cap(s.w.lastToolUses)+len(s.w.answered))*64 + s.arena.Held()
}

func (s *claudeSequence) End() string {
	if !s.conversation {
		return claudeNoConversation().Detail
	}
	return ""
}
