package apps

import (
	"context"
	"encoding/base64"
	"path/filepath"
	"regexp"
	"strings"

	"github.com/sessionmedic/sessionmedic/heal/format"
	"github.com/sessionmedic/sessionmedic/heal/fsio"
	"github.com/sessionmedic/sessionmedic/heal/jsonv"
	"github.com/sessionmedic/sessionmedic/heal/lock"
	"github.com/sessionmedic/sessionmedic/policy"
)

// nanobot (nanobot.md): one JSONL file per session, a metadata record first, rewritten
// whole; from era D on, a namespace directory (32 hex digits) holds the sessions and the
// flock .session-files.lock that guards them.

var nanobotNamespaceRe = regexp.MustCompile(`^[0-9a-f]{32}$`)

func addNanobot(r *format.Registry) {
	r.Add("nanobot", func(string) format.Profile { return nanobot{} }, nanobot{})
	r.AddLock(string(policy.LockNanobot), lockNanobot)
}

type nanobot struct{ format.Log }

// OwnKinds: the damage kinds its checklist reports (see format.Kinds).
func (nanobot) OwnKinds() []string {
	return []string{format.KindEmpty}
}

func (nanobot) Name() string           { return "nanobot" }
func (nanobot) Dialect() jsonv.Dialect { return nanobotDialect }

var nanobotDialect = jsonv.Dialect{NonFinite: true}

func (nanobot) EmptyIsDamage() bool { return true }
func (p nanobot) CheckLines(f format.File, lines []format.Line) format.Verdict {
	return format.CheckRecords(p, f, lines) // record by record: the same pass as a streamed file's
}

// RecordProblem: line 1 is the metadata record, every other one a message or the one
// provider_state record (nanobot.md "What valid means" 3–6).
func (nanobot) RecordProblem(rec []byte, first bool) string {
	v, err := jsonv.ParseDepth(rec, nanobotDialect, 1) // top-level members only
	if err != nil {
		return err.Error()
	}
	if first {
		return nanobotMetaProblem(v)
	}
	return nanobotRecordProblem(v)
}

// SkeletonFields: what its checks read of a record (format.SkeletonFielder): nanobotFields,
// which holds RecordKey's _type.
func (nanobot) SkeletonFields() *jsonv.Fields { return nanobotFields }

func (nanobot) NoRecords() format.Verdict { return format.Damage(format.KindEmpty, 0, "no records") }

// AppendedOK: a message (nanobot rewrites its file whole; a record after the first is one
// the checklist accepts).
func (nanobot) AppendedOK(rec []byte) bool {
	v, err := jsonv.ParseDepth(rec, nanobotDialect, 1)
	return err == nil && nanobotRecordProblem(v) == "" && strOf(v.Get("_type")) != "provider_state"
}

// NewSequence: one provider_state record at most, and the warnings on the metadata
// (nanobot.md "What valid means" 7).
func (nanobot) NewSequence(path string) format.Sequence { return &nanobotSeq{path: path} }

type nanobotSeq struct {
	path                string
	seen                bool
	key                 string
	lc                  int64
	messages, providers int64
	warnings            []string
	arena               jsonv.Arena // each record's tree, dropped once judged
}

// nanobotFields: what the checklist and the sequence read of a record (top-level members;
// a message's content is never built).
var nanobotFields = &jsonv.Fields{Members: map[string]*jsonv.Fields{
	"_type": nil, "key": nil, "last_consolidated": nil,
	"created_at": {Opaque: true}, "updated_at": {Opaque: true}, "role": {Opaque: true},
	"metadata": {Members: map[string]*jsonv.Fields{}},
}}

// ChecksRecords: RecordValid applies RecordProblem's checks too, on its one build of the
// record.
func (*nanobotSeq) ChecksRecords() {}

func (s *nanobotSeq) Record(rec []byte) string {
	if err := jsonv.Valid(rec, nanobotDialect); err != nil {
		return err.Error() // as RecordProblem says it
	}
	return s.RecordValid(rec)
}

// RecordValid is Record of a record that passed jsonv.Valid, built in the pass's arena to
// the members read: RecordProblem's checks, then the sequence's.
func (s *nanobotSeq) RecordValid(rec []byte) string {
	v := s.arena.ParseFieldsValid(rec, nanobotDialect, nanobotFields)
	if !s.seen {
		if p := nanobotMetaProblem(v); p != "" {
			return p
		}
	} else if p := nanobotRecordProblem(v); p != "" {
		return p
	}
	return s.add(v)
}

// add is the sequence's check of the next record, v.
func (s *nanobotSeq) add(v *jsonv.Value) string {
	if !s.seen {
		s.seen, s.key = true, strOf(v.Get("key"))
		if lc := v.Get("last_consolidated"); lc != nil && lc.IsInt {
			s.lc = lc.Int
		}
		return ""
	}
	if strOf(v.Get("_type")) == "provider_state" {
		if s.providers++; s.providers > 1 {
			return "a second provider_state record"
		}
		return ""
	}
	s.messages++
	return ""
}

func (s *nanobotSeq) End() string {
	if !s.seen {
		return ""
	}
	if s.lc < 0 || s.lc > s.messages {
		s.warnings = append(s.warnings, "last_consolidated out of range (nanobot resets it)")
	}
	stem := strings.TrimSuffix(filepath.Base(s.path), ".jsonl")
	if s.path != "" && stem != base64.RawURLEncoding.EncodeToString([]byte(s.key)) && stem != nanobotLossyName(s.key) {
		s.warnings = append(s.warnings, "metadata key does not match the file name")
	}
	return ""
}

func (s *nanobotSeq) Warnings() []string { return s.warnings }

// RecordKey: the file holds one metadata record.
func (nanobot) RecordKey(rec *jsonv.Value) string {
	if strOf(rec.Get("_type")) == "metadata" {
		return "\x00metadata"
	}
	return ""
}

// lockNanobot takes the namespace's .session-files.lock; eras A–C have no lock.
func lockNanobot(ctx context.Context, path string, _ format.Profile, lp format.LockParams) (format.Lock, error) {
	dir := filepath.Dir(path)
	if !nanobotNamespaceRe.MatchString(filepath.Base(dir)) {
		// Through a symlinked rule root the namespace has the name the link points to.
		dir = fsio.Resolved(dir)
	}
	if !nanobotNamespaceRe.MatchString(filepath.Base(dir)) {
		return format.Unlocked{}, nil
	}
	return lock.Flock(ctx, filepath.Join(dir, ".session-files.lock"), true, lockOptions(lp))
}

// TempLockTarget: nanobot's lock guards a whole directory; a temp file is cleaned up under the
// lock of its directory's sessions.
func (nanobot) TempLockTarget(temp string, _ []byte) string {
	return filepath.Join(filepath.Dir(temp), "session")
}

// nanobotMetaProblem checks line 1, the metadata record.
func nanobotMetaProblem(m *jsonv.Value) string {
	if t := m.Get("_type"); !isStr(t) || t.Str != "metadata" {
		return "not the metadata record"
	}
	if !isStr(m.Get("key")) {
		return "metadata has no string key"
	}
	for _, k := range []string{"created_at", "updated_at"} {
		if !isStr(m.Get(k)) {
			return "metadata has no string " + k
		}
	}
	if !isObj(m.Get("metadata")) {
		return "metadata.metadata is not an object"
	}
	if lc := m.Get("last_consolidated"); lc == nil || lc.Type != jsonv.Number || !lc.IsInt {
		return "metadata has no integer last_consolidated"
	}
	return ""
}

// nanobotRecordProblem checks a record after line 1.
func nanobotRecordProblem(v *jsonv.Value) string {
	switch strOf(v.Get("_type")) {
	case "provider_state":
		return ""
	case "metadata":
		return "a metadata record after line 1"
	}
	if !isStr(v.Get("role")) {
		return "message has no string role"
	}
	return ""
}

func nanobotLossyName(key string) string {
	s := strings.ReplaceAll(key, ":", "_")
	for _, ch := range []string{"<", ">", ":", "\"", "/", "\\", "|", "?", "*"} {
		s = strings.ReplaceAll(s, ch, "_")
	}
	return strings.TrimSpace(s)
}
