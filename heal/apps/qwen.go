package apps

import (
	"bytes"
	"context"
	"fmt"
	"hash/maphash"
	"path/filepath"
	"regexp"
	"strings"

	"github.com/sessionmedic/sessionmedic/heal/format"
	"github.com/sessionmedic/sessionmedic/heal/fsio"
	"github.com/sessionmedic/sessionmedic/heal/jsonv"
	"github.com/sessionmedic/sessionmedic/heal/lock"
	"github.com/sessionmedic/sessionmedic/policy"
)

// Qwen Code 0.24.4 (qwen-code.md): one append-only JSONL file per session,
// <runtime>/projects/<project>/chats/<sessionId>.jsonl (and chats/archive/), every record
// appended on its own with an fsync and no lock. Records form a tree through
// uuid/parentUuid and carry Gemini-style message.parts; records sharing a uuid are fragments
// the loader concatenates. The loader skips a line JSON.parse rejects (after a brace scan
// that keeps the complete objects it finds, and fails when a stub ends inside a string),
// throws on mixed session ids, and walks parentUuid back from the last conversation record:
// a missing parent ends the walk, and everything before it is gone from the context. A
// re-appended line is a second fragment of its uuid: its parts are sent twice.

var qwenFileRe = regexp.MustCompile(`^([0-9a-fA-F-]{32,36})\.jsonl$`)

func addQwenCode(r *format.Registry) {
	r.Add("qwen-code", func(string) format.Profile { return qwenLog{} }, qwenLog{})
	r.AddLock(string(policy.LockQwenCode), lockQwenCode)
}

// qwenLog is a Qwen Code session.
type qwenLog struct{ format.Log }

// OwnKinds: the damage kinds its checklist reports (see format.Kinds).
func (qwenLog) OwnKinds() []string {
	return []string{format.KindEmpty, format.KindDuplicateRecord}
}

func (qwenLog) Name() string           { return "qwen-code" }
func (qwenLog) Dialect() jsonv.Dialect { return nodeDialect } // readline over a UTF-8 stream, then JSON.parse
func (qwenLog) EmptyIsDamage() bool    { return true }
func (qwenLog) AppendOnly() bool       { return true }
func (p qwenLog) CheckLines(f format.File, lines []format.Line) format.Verdict {
	return format.CheckRecords(p, f, lines) // record by record: the same pass as a streamed file's
}

// RecordProblem: what every record needs (qwen-code.md "What valid means" 2, the session id
// apart: that takes the file's name, the Sequence's).
func (qwenLog) RecordProblem(rec []byte, _ bool) string {
	v, err := jsonv.ParseDepth(rec, nodeDialect, 1)
	if err != nil {
		return err.Error()
	}
	return qwenRecordProblem(v)
}

func (qwenLog) NoRecords() format.Verdict {
	return format.Damage(format.KindEmpty, 0, "session has no records: Qwen Code says \"No saved session found\"")
}

// AppendedOK: a record as Qwen appends one. Its parent being an earlier record and its
// session id being the file's are the full pass's to check.
func (qwenLog) AppendedOK(rec []byte) bool {
	v, err := jsonv.ParseDepth(rec, nodeDialect, 1)
	return err == nil && qwenRecordProblem(v) == ""
}

// NewSequence: the checks that span records, record by record.
func (qwenLog) NewSequence(path string) format.Sequence { return newQwenSeq(path) }

// RecordStarts: JSON.stringify writes every record's uuid first.
func (qwenLog) RecordStarts() [][]byte { return [][]byte{[]byte(`{"uuid":"`)} }

// Whole: a record as Qwen writes one, never a value that was nested in a torn one (a part,
// a message: they have no uuid, sessionId or type of a record).
func (qwenLog) Whole(v *jsonv.Value) bool { return qwenRecordProblem(v) == "" }

// RejoinsSplitRecords: a record a raw newline split is joined back when the join is one
// whole record (qwen-code.md: byte-identical, 8/8).
func (qwenLog) RejoinsSplitRecords() bool { return true }

// DropsDuplicateLines: a byte-identical line is a re-append (a fragment of a record carries
// other parts); Qwen sends a repeated user or assistant record's text twice.
func (qwenLog) DropsDuplicateLines() bool { return true }

var qwenTypes = map[string]bool{"user": true, "assistant": true, "tool_result": true, "system": true}

// qwenRecordProblem applies qwen-code.md "What valid means" 2 to one record (its session id
// being the file's apart).
func qwenRecordProblem(v *jsonv.Value) string {
	switch {
	case !isObj(v):
		return "record is not an object"
	case !isStr(v.Get("uuid")):
		return "record has no string uuid"
	case !isStr(v.Get("sessionId")):
		return "record has no string sessionId"
	case !qwenTypes[strOf(v.Get("type"))]:
		return "record type is not user, assistant, tool_result or system"
	case !isStr(v.Get("timestamp")):
		return "record has no string timestamp"
	}
	if p := v.Get("parentUuid"); p == nil || (p.Type != jsonv.Null && p.Type != jsonv.String) {
		return "record parentUuid is neither a string nor null"
	}
	return ""
}

// qwenSeq is one pass over a session's records: the session id, each uuid seen, the parents
// named before their record, and a hash of every line (a byte-identical repeat is damage).
type qwenSeq struct {
	id      string // the session id: the file name's, else the first record's
	n       int
	uuids   map[string]bool
	pending map[string]bool // parents named that no record before had as uuid
	// pendingOrder: the parents pending has held, in the order first named (the gap
	// reported is the first in the file: a verdict never depends on a map's order).
	pendingOrder []string
	rootGap      string // the parent the first record names, when it is not a uuid before it
	lines        map[uint64]bool
	seed         maphash.Seed
	dup          bool            // the last problem is a repeated line
	repeats      int             // tool_result and system lines repeated byte for byte
	calls        map[string]bool // function call ids of the records, and whether a result answers it
	answers      map[string]bool // function response ids
}

func newQwenSeq(path string) *qwenSeq {
	s := &qwenSeq{uuids: map[string]bool{}, pending: map[string]bool{}, lines: map[uint64]bool{}, seed: maphash.MakeSeed(),
		calls: map[string]bool{}, answers: map[string]bool{}}
	if m := qwenFileRe.FindStringSubmatch(filepath.Base(path)); m != nil {
		s.id = m[1]
	}
	return s
}

// ProblemKind: a repeated line is a duplicate record (its later copies are dropped).
func (s *qwenSeq) ProblemKind() string {
	if s.dup {
		return format.KindDuplicateRecord
	}
	return ""
}

// Record is add of a record's bytes.
func (s *qwenSeq) Record(rec []byte) string {
	v, err := jsonv.ParseDepth(rec, nodeDialect, 1)
	if err != nil {
		return err.Error()
	}
	return s.add(v, rec)
}

func (s *qwenSeq) add(v *jsonv.Value, raw []byte) string {
	s.n++
	s.dup = false
	if p := qwenRecordProblem(v); p != "" {
		return p
	}
	sid := v.Get("sessionId").Str
	switch {
	case s.id == "":
		s.id = sid
	case !strings.EqualFold(sid, s.id):
		return fmt.Sprintf("record of session %q in session %s's file: Qwen Code refuses mixed session ids", sid, s.id)
	}
	h := maphash.Bytes(s.seed, trimCR(raw))
	if s.lines[h] {
		// A hash collision of two different lines is 2^-64: reported, a heal's KeepLines
		// compares the bytes themselves. A repeated user or assistant record is a second
		// fragment of its uuid: Qwen 0.24.4 concatenates the parts, and sends the text
		// twice ("ack fifth turnack fifth turn", seen with the oracle); a repeated
		// tool_result, or an assistant record of function calls only, is sent once, a
		// system record not at all (campaign cases qwen-15, qwen-127; dup_line seed 2):
		// those are warnings.
		if t := v.Get("type").Str; (t == "user" || t == "assistant") && qwenHasText(raw) {
			s.dup = true
			return "a " + t + " record with text repeats an earlier one byte for byte (a re-append): Qwen Code sends its text twice"
		}
		s.repeats++
		return ""
	}
	s.lines[h] = true
	s.toolParts(raw)
	u := v.Get("uuid").Str
	s.uuids[u] = true
	delete(s.pending, u)
	if p := v.Get("parentUuid"); p.Type == jsonv.String && !s.uuids[p.Str] {
		if !s.pending[p.Str] {
			s.pendingOrder = append(s.pendingOrder, p.Str)
		}
		s.pending[p.Str] = true
		if s.n == 1 {
			s.rootGap = p.Str
		}
	}
	return ""
}

// qwenMaxCalls bounds the tool call ids remembered of one session.
const qwenMaxCalls = 1 << 16

// toolParts notes the function calls and responses of a record's message parts: Qwen sends
// a call only with its result and a result only with its call (a history the API accepts),
// and drops the others without a word (campaign case qwen-261: a flipped byte in a
// response's id, 2 items gone).
func (s *qwenSeq) toolParts(raw []byte) {
	if !bytes.Contains(raw, []byte(`"function`)) || len(s.calls)+len(s.answers) > qwenMaxCalls {
		return
	}
	v, err := jsonv.ParseDepth(raw, nodeDialect, 5)
	if err != nil {
		return
	}
	for _, p := range arrOf(v.Get("message").Get("parts")) {
		if id := p.Get("functionCall").Get("id"); isStr(id) {
			s.calls[id.Str] = true
		}
		if id := p.Get("functionResponse").Get("id"); isStr(id) {
			s.answers[id.Str] = true
		}
	}
}

// qwenHasText: the record's message has a part with a text (read only for a repeated line).
func qwenHasText(raw []byte) bool {
	v, err := jsonv.ParseDepth(raw, nodeDialect, 4)
	if err != nil {
		return false
	}
	for _, p := range arrOf(v.Get("message").Get("parts")) {
		if isStr(p.Get("text")) {
			return true
		}
	}
	return false
}

// End: every parent named is a record of the file (qwen-code.md "What valid means" 3), but
// the first record's: a walk that stops there loses no record the file holds (Qwen 0.24.4
// resumes a file whose line 1 was torn with every later record: seen with the oracle).
func (s *qwenSeq) End() string {
	for _, p := range s.pendingOrder {
		if s.pending[p] && p != s.rootGap {
			return fmt.Sprintf("history gap: parentUuid %q names no record of the file (Qwen Code drops everything before it)", p)
		}
	}
	return ""
}

// Warnings: what Qwen drops without a word.
func (s *qwenSeq) Warnings() []string {
	var out []string
	if s.rootGap != "" && s.pending[s.rootGap] {
		out = append(out, fmt.Sprintf("the first record's parent %q is not in the file: the records before it are gone, Qwen Code starts the history there", s.rootGap))
	}
	unanswered, orphans := 0, 0
	for id := range s.calls {
		if !s.answers[id] {
			unanswered++
		}
	}
	for id := range s.answers {
		if !s.calls[id] {
			orphans++
		}
	}
	if orphans > 0 {
		out = append(out, fmt.Sprintf("%d tool result(s) answer no call of the session: Qwen Code drops them without a word", orphans))
	}
	if unanswered > 0 {
		out = append(out, fmt.Sprintf("%d tool call(s) have no result (an interrupted turn, or a result's id lost): Qwen Code drops them without a word", unanswered))
	}
	if s.repeats > 0 {
		out = append(out, fmt.Sprintf("%d line(s) without text (tool results, function calls, system records) repeat an earlier one byte for byte (a re-append): Qwen Code sends them once", s.repeats))
	}
	return out
}

func trimCR(b []byte) []byte {
	for len(b) > 0 && b[len(b)-1] == '\r' {
		b = b[:len(b)-1]
	}
	return b
}

// lockQwenCode waits until no Qwen Code process has the session (lock.Qwen): its id is the
// file name's, its project root the first record's cwd, its runtime the directory that holds
// projects/.
func lockQwenCode(ctx context.Context, path string, _ format.Profile, lp format.LockParams) (format.Lock, error) {
	s := lock.QwenSession{AppSession: lock.AppSession{Path: path}}
	if m := qwenFileRe.FindStringSubmatch(filepath.Base(path)); m != nil {
		s.ID = m[1]
	}
	if l, _ := fsio.FirstLine(path, qwenLine1Max); l != nil {
		if v, err := jsonv.ParseDepth(l, nodeDialect, 1); err == nil {
			s.Cwd = strOf(v.Get("cwd"))
		} else if c := jsonv.PrefixMembers(l, nodeDialect)["cwd"]; len(c) > 0 && c[0] == '"' {
			if v, err := jsonv.Parse(c, nodeDialect); err == nil {
				s.Cwd = v.Str
			}
		}
	}
	// <runtime>/projects/<project>/chats[/archive]/<id>.jsonl
	d := filepath.Dir(path)
	if filepath.Base(d) == "archive" {
		d = filepath.Dir(d)
	}
	if filepath.Base(d) == "chats" && filepath.Base(filepath.Dir(filepath.Dir(d))) == "projects" {
		s.Runtime = filepath.Dir(filepath.Dir(filepath.Dir(d)))
	}
	if err := lock.Qwen(ctx, s, lockOptions(lp)); err != nil {
		return nil, err
	}
	return format.Unlocked{}, nil
}

// qwenLine1Max: a first line longer than this is read no further for the cwd.
const qwenLine1Max = 64 << 10
