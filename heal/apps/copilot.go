package apps

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"hash/maphash"
	"io"
	"path/filepath"
	"regexp"
	"strings"

	"go.yaml.in/yaml/v3"

	"github.com/sessionmedic/sessionmedic/heal/format"
	"github.com/sessionmedic/sessionmedic/heal/jsonv"
	"github.com/sessionmedic/sessionmedic/heal/lock"
	"github.com/sessionmedic/sessionmedic/internal/resolve"
	"github.com/sessionmedic/sessionmedic/policy"
)

// GitHub Copilot CLI 1.0.102 (copilot-cli.md): one append-only JSONL event log per session,
// <home>/session-state/<id>/events.jsonl, appended in whole-line batches without fsync. Its
// loader (Rust, serde) parses every line: a line that does not parse is dropped — and the
// whole file then rewritten without it, the damaged bytes kept beside it in
// events.jsonl.backup-before-recovery-<sha256> —, a line that parses but lacks a member its
// event type requires makes the session refuse to load, and so does a first line that is not
// a whole session.start. Events are not keyed by id: a re-appended turn is sent twice.

// copilotUUIDRe is an event id as Copilot's envelope check takes it (either case).
var copilotUUIDRe = regexp.MustCompile(`^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$`)

// copilotDialect is serde_json's: strict UTF-8, its recursion limit.
var copilotDialect = codexDialect

const (
	copilotLine1Max     = 64 << 10 // a first line longer than this is read no further
	copilotWorkspaceMax = 64 << 10 // workspace.yaml is a dozen short lines
)

func addCopilotCLI(r *format.Registry) {
	r.Add("copilot-cli", func(string) format.Profile { return copilotLog{} }, copilotLog{})
	r.AddLock(string(policy.LockCopilotCLI), lockCopilotCLI)
}

// copilotSession is the session id of a path <…>/<id>/events.jsonl ("" for another shape).
func copilotSession(path string) string {
	if filepath.Base(path) != "events.jsonl" {
		return ""
	}
	if id := filepath.Base(filepath.Dir(path)); uuidRe.MatchString(id) {
		return id
	}
	return ""
}

// copilotLog is a Copilot CLI event log.
type copilotLog struct{ format.Log }

// OwnKinds: the damage kinds its checklist reports (see format.Kinds).
func (copilotLog) OwnKinds() []string {
	return []string{format.KindEmpty, format.KindDuplicateRecord}
}

func (copilotLog) Name() string           { return "copilot-cli" }
func (copilotLog) Dialect() jsonv.Dialect { return copilotDialect }
func (copilotLog) EmptyIsDamage() bool    { return true }
func (copilotLog) AppendOnly() bool       { return true }
func (p copilotLog) CheckLines(f format.File, lines []format.Line) format.Verdict {
	return format.CheckRecords(p, f, lines) // record by record: the same pass as a streamed file's
}

// RecordProblem: every event has its envelope and the data members its type requires in
// the package's own schema; the first is a session.start.
func (copilotLog) RecordProblem(rec []byte, first bool) string {
	v, err := jsonv.Parse(rec, copilotDialect)
	if err != nil {
		return err.Error()
	}
	return copilotEventProblem(v, first)
}

func (copilotLog) NoRecords() format.Verdict {
	return format.Damage(format.KindEmpty, 0, "session has no events: Copilot CLI says \"No session or task matched\"")
}

// AppendedOK: an event as Copilot appends one (not a session.start: that is line 1 only).
func (copilotLog) AppendedOK(rec []byte) bool {
	v, err := jsonv.Parse(rec, copilotDialect)
	return err == nil && copilotEventProblem(v, false) == "" && strOf(v.Get("type")) != "session.start"
}

// NewSequence: the checks that span events, event by event.
func (copilotLog) NewSequence(path string) format.Sequence { return newCopilotSeq(path) }

// RecordStarts: Copilot serializes every event's type first.
func (copilotLog) RecordStarts() [][]byte { return [][]byte{[]byte(`{"type":"`)} }

// Whole: an event with its envelope and its type's required data, never a value that was
// nested in a torn one.
func (copilotLog) Whole(v *jsonv.Value) bool {
	return copilotEventProblem(v, strOf(v.Get("type")) == "session.start") == ""
}

// RejoinsSplitRecords: an event a raw newline split (#2649) is joined back when the join is
// one whole event (copilot-cli.md: byte-identical, 8/8).
func (copilotLog) RejoinsSplitRecords() bool { return true }

// DropsDuplicateLines: every event has its own id and timestamp, so a byte-identical line is
// a re-append, which Copilot sends twice.
func (copilotLog) DropsDuplicateLines() bool { return true }

// RecordKey: an event is keyed by its id (a last-good copy and the salvaged events are
// merged by it).
func (copilotLog) RecordKey(rec *jsonv.Value) string { return idKey(rec) }

// DropInvalid drops the events after line 1 that parse but lack what their type requires
// (copilot-cli.md: Copilot refuses the whole session for one; without it, it loads, 7/8);
// every other byte is kept. nil when there is no such event, or a line does not parse (the
// salvage's to judge).
func (p copilotLog) DropInvalid(data []byte) []byte {
	return format.SpliceBytes(data, p.DropInvalidSplice)
}

// DropInvalidSplice is DropInvalid of the file r holds, said as a splice of it.
func (copilotLog) DropInvalidSplice(r io.ReaderAt, size int64) (*format.Splice, error) {
	sp, dropped, i := &format.Splice{}, false, 0
	err := format.SplitAtLong(copilotLog{}, r, size, nil, func(l format.Line) error {
		defer func() { i++ }()
		if l.Blank {
			sp.AddRange(int64(l.Start), int64(l.End-l.Start))
			return nil
		}
		if l.Val == nil {
			return errUnparsed
		}
		if i > 0 && copilotEventProblem(l.Val, false) != "" {
			dropped = true
			return nil
		}
		sp.AddRange(int64(l.Start), int64(l.End-l.Start))
		return nil
	})
	switch {
	case err == errUnparsed || err == nil && !dropped:
		return nil, nil
	case err != nil:
		return nil, err
	}
	return sp, nil
}

// errUnparsed ends a walk that met a line that does not parse.
var errUnparsed = errors.New("a line does not parse")

// copilotEventProblem: what keeps v from being an event Copilot loads ("" for nothing).
func copilotEventProblem(v *jsonv.Value, first bool) string {
	switch {
	case !isObj(v):
		return "event is not an object"
	case !isStr(v.Get("type")):
		return "event has no string type"
	case !isObj(v.Get("data")):
		return "event has no object data"
	case !isStr(v.Get("id")):
		return "event has no string id"
	case !isStr(v.Get("timestamp")):
		return "event has no string timestamp"
	}
	if !copilotUUIDRe.MatchString(v.Get("id").Str) {
		return "event id is not a UUID: Copilot CLI refuses the session (invalid session event envelope)"
	}
	if p := v.Get("parentId"); p == nil || (p.Type != jsonv.Null && !(p.Type == jsonv.String && copilotUUIDRe.MatchString(p.Str))) {
		return "event parentId is neither a UUID nor null: Copilot CLI refuses the session (invalid session event envelope)"
	}
	t := v.Get("type").Str
	if first && t != "session.start" {
		return "line 1 is not session.start: Copilot CLI says \"Session file is corrupted or incompatible\""
	}
	return copilotDataProblem(t, v.Get("data"))
}

// copilotSeq is one pass over a session's events: its id (the directory's), and every event
// id seen with a hash of its line (a line repeated byte for byte repeats its id too).
type copilotSeq struct {
	path    string
	id      string
	n       int
	ids     map[string]uint64
	seed    maphash.Seed
	dup     bool // the last problem is a repeated line
	repeats int  // events repeating an earlier id that change nothing Copilot sends
}

func newCopilotSeq(path string) *copilotSeq {
	return &copilotSeq{path: path, id: copilotSession(path), ids: map[string]uint64{}, seed: maphash.MakeSeed()}
}

// ProblemKind: a repeated line is a duplicate record (its later copies are dropped).
func (s *copilotSeq) ProblemKind() string {
	if s.dup {
		return format.KindDuplicateRecord
	}
	return ""
}

// Record is add of an event's bytes.
func (s *copilotSeq) Record(rec []byte) string {
	v, err := jsonv.Parse(rec, copilotDialect)
	if err != nil {
		return err.Error()
	}
	return s.add(v, rec)
}

func (s *copilotSeq) add(v *jsonv.Value, raw []byte) string {
	s.n++
	s.dup = false
	if p := copilotEventProblem(v, s.n == 1); p != "" {
		return p
	}
	if s.n == 1 && s.id != "" {
		if sid := v.Get("data").Get("sessionId"); !isStr(sid) || sid.Str != s.id {
			return fmt.Sprintf("session.start names session %q in session %s's directory", strOf(sid), s.id)
		}
	}
	h := maphash.Bytes(s.seed, trimCR(raw))
	id := v.Get("id").Str
	if earlier, seen := s.ids[id]; seen {
		// An event repeating an earlier one's id (a re-append, two writers): Copilot 1.0.102
		// sends a repeated user message twice, and a repeated tool request as a made-up
		// second call answered "interrupted"; any other repeat changes nothing it sends
		// (seen with the oracle: turn start and end, usage, resume, shutdown, system
		// message, tool start and result, an answer without tool requests): a warning.
		// A hash collision of two different lines is 2^-64: reported, a heal's KeepLines
		// compares the bytes themselves.
		if !copilotSent(v) {
			s.repeats++
			return ""
		}
		if earlier == h {
			s.dup = true
			return "a " + v.Get("type").Str + " event repeats an earlier one byte for byte (a re-append): Copilot CLI sends it twice"
		}
		return fmt.Sprintf("a %s event has the id %q of an earlier event (two writers): Copilot CLI sends both", v.Get("type").Str, id)
	}
	s.ids[id] = h
	return ""
}

// copilotSent: a repeat of this event changes what Copilot sends — a user message, or an
// assistant message with tool requests.
func copilotSent(v *jsonv.Value) bool {
	switch v.Get("type").Str {
	case "user.message":
		return true
	case "assistant.message":
		r := v.Get("data").Get("toolRequests")
		return r == nil || r.Type != jsonv.Array || len(r.Items) > 0
	}
	return false
}

func (s *copilotSeq) End() string { return "" }

// Warnings: Copilot's own repair, when it made one: the lines it dropped are only in its
// backup beside the file (sessionmedic leaves that evidence alone).
func (s *copilotSeq) Warnings() []string {
	var out []string
	if s.repeats > 0 {
		out = append(out, fmt.Sprintf("%d event(s) repeat an earlier event's id (a re-append, or two writers): Copilot CLI loads them without sending anything twice", s.repeats))
	}
	if s.id == "" {
		return out
	}
	names, _, err := resolve.Names(filepath.Dir(s.path), lock.CopilotMaxEntries)
	if err != nil {
		return out
	}
	for _, n := range names {
		if strings.HasPrefix(n, "events.jsonl.backup-before-recovery-") && !strings.Contains(n, ".tmp.") {
			out = append(out, "Copilot CLI repaired this session itself on a load and dropped the lines it could not parse; they are kept in "+n+" (report only: sessionmedic does not merge them back)")
		}
	}
	return out
}

// RebuildHeader rebuilds a torn or missing session.start on line 1 as Copilot writes it
// (copilot-cli.md "Heal guidance"): the session id from the directory, version 1, producer
// copilot-agent, copilotVersion from the torn line's prefix, startTime, timestamp and the
// context from workspace.yaml (created_at; cwd, git_root, branch), and as its id the
// parentId the first kept event names. Every other byte of data is kept. nil when line 1 is
// a session.start, no event follows it, the torn line names another session, its prefix no
// longer holds the version, or workspace.yaml is not this session's.
func (copilotLog) RebuildHeader(path string, r io.ReaderAt, size int64) (*format.Splice, error) {
	id := copilotSession(path)
	if id == "" {
		return nil, nil
	}
	h, ok, err := findHeaderSpot(copilotLog{}, path, r, size, func(v *jsonv.Value) bool { return strOf(v.Get("type")) == "session.start" }, copilotLine1Max)
	if !ok {
		return nil, err
	}
	torn := h.torn
	var parent *string
	if err := h.after(copilotLog{}, r, size, nil, func(l format.Line) error {
		if l.Val == nil {
			return nil
		}
		if v := l.Val.Get("parentId"); isStr(v) {
			s, err := l.StrOf(r, v)
			if err != nil {
				return err
			}
			parent = &s
		}
		return format.Stop
	}); err != nil || parent == nil {
		return nil, err
	}
	if m := copilotTornString(torn, "sessionId"); m != nil && *m != id {
		return nil, nil
	}
	version := copilotTornString(torn, "copilotVersion")
	if version == nil {
		return nil, nil
	}
	ws := copilotWorkspace(filepath.Join(filepath.Dir(path), "workspace.yaml"))
	if ws == nil || ws.ID != id || ws.CreatedAt == "" {
		return nil, nil
	}
	var ctx bytes.Buffer
	for _, m := range [][2]string{{"cwd", ws.Cwd}, {"gitRoot", ws.GitRoot}, {"branch", ws.Branch}} {
		if m[1] == "" {
			continue
		}
		if ctx.Len() > 0 {
			ctx.WriteByte(',')
		}
		ctx.WriteString(jsonQuote(m[0]) + ":" + jsonQuote(m[1]))
	}
	head := `{"type":"session.start","data":{"sessionId":` + jsonQuote(id) + `,"version":1,"producer":"copilot-agent","copilotVersion":` +
		jsonQuote(*version) + `,"startTime":` + jsonQuote(ws.CreatedAt)
	if ctx.Len() > 0 {
		head += `,"context":{` + ctx.String() + `}`
	}
	head += `},"id":` + jsonQuote(*parent) + `,"timestamp":` + jsonQuote(ws.CreatedAt) + `,"parentId":null}` + "\n"
	return h.splice(size, []byte(head)), nil
}

// copilotTornRe finds a string member of session.start's data in a torn line; the value must
// be whole (its closing quote there).
var copilotTornRe = regexp.MustCompile(`"(sessionId|copilotVersion)":"((?:[^"\\]|\\.)*)"`)

// copilotTornString is the value of data member name in the torn first line, nil when the
// prefix no longer holds it whole.
func copilotTornString(torn []byte, name string) *string {
	if !bytes.HasPrefix(torn, []byte(`{"type":"session.start","data":{`)) {
		return nil
	}
	for _, m := range copilotTornRe.FindAllSubmatch(torn, -1) {
		if string(m[1]) != name {
			continue
		}
		var s string
		if json.Unmarshal(append(append([]byte{'"'}, m[2]...), '"'), &s) != nil {
			return nil
		}
		return &s
	}
	return nil
}

// copilotWS is what the rebuild reads of workspace.yaml.
type copilotWS struct {
	ID        string `yaml:"id"`
	Cwd       string `yaml:"cwd"`
	GitRoot   string `yaml:"git_root"`
	Branch    string `yaml:"branch"`
	CreatedAt string `yaml:"created_at"`
}

// copilotWorkspace reads workspace.yaml (never through a symlink, a FIFO or past
// copilotWorkspaceMax bytes); nil when it cannot be read whole.
func copilotWorkspace(p string) *copilotWS {
	b, whole := resolve.ReadSmall(p, copilotWorkspaceMax)
	if b == nil || !whole {
		return nil
	}
	var n yaml.Node
	if yaml.Unmarshal(b, &n) != nil || len(n.Content) != 1 || n.Content[0].Kind != yaml.MappingNode {
		return nil
	}
	var ws copilotWS
	m := n.Content[0]
	for i := 0; i+1 < len(m.Content); i += 2 {
		k, v := m.Content[i], m.Content[i+1]
		if v.Kind != yaml.ScalarNode {
			continue
		}
		switch k.Value { // scalar text as written: a timestamp stays the string Copilot wrote
		case "id":
			ws.ID = v.Value
		case "cwd":
			ws.Cwd = v.Value
		case "git_root":
			ws.GitRoot = v.Value
		case "branch":
			ws.Branch = v.Value
		case "created_at":
			ws.CreatedAt = v.Value
		}
	}
	return &ws
}

// jsonQuote is s as a JSON string, as JSON.stringify and serde write it (no HTML escaping).
func jsonQuote(s string) string {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(s)
	return strings.TrimSuffix(b.String(), "\n")
}

// lockCopilotCLI takes Copilot's operation lock for the session, after checking no Copilot
// process has it open (lock.Copilot). A path that is no session's takes nothing.
func lockCopilotCLI(ctx context.Context, path string, _ format.Profile, lp format.LockParams) (format.Lock, error) {
	id := copilotSession(path)
	if id == "" {
		return format.Unlocked{}, nil
	}
	return lock.Copilot(ctx, filepath.Dir(path), id, lockOptions(lp))
}
