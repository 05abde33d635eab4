package apps

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"path/filepath"
	"regexp"
	"strconv"
	"syscall"

	"github.com/sessionmedic/sessionmedic/heal/format"
	"github.com/sessionmedic/sessionmedic/heal/fsio"
	"github.com/sessionmedic/sessionmedic/heal/jsonv"
	"github.com/sessionmedic/sessionmedic/heal/lock"
	"github.com/sessionmedic/sessionmedic/internal/resolve"
	"github.com/sessionmedic/sessionmedic/policy"
)

// Codex CLI (codex.md): one append-only JSONL rollout per thread,
// <home>/sessions/YYYY/MM/DD/rollout-<ts>-<id>.jsonl (archived: <home>/archived_sessions/),
// a session_meta record first; paginated rollouts number every record with a top-level
// ordinal. A thread's writer holds its flock in <home>/thread-writer-locks (heal/lock.Codex).
// Forks point into their parent's first bytes (history_base.end_byte_offset): never changed.

var codexRolloutRe = regexp.MustCompile(`^rollout-\d{4}-\d{2}-\d{2}T\d{2}-\d{2}-\d{2}-([0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12})\.jsonl$`)

// codexLine1Max bounds what is read of a rollout's first line (session_meta, ~20 KB).
const codexLine1Max = 1 << 20

func addCodex(r *format.Registry) {
	r.Add("codex", func(string) format.Profile { return codexLog{} }, codexLog{})
	r.AddLock(string(policy.LockCodex), lockCodex)
}

// codexDialect is serde_json's, which Codex reads each line with: strict UTF-8, and a
// recursion limit of 128 — a line nested 128 levels deep is skipped (Codex 0.169.0 resumed
// a rollout with one at 127 whole and dropped the message at 128, seen with the oracle).
var codexDialect = jsonv.Dialect{MaxDepth: 127}

type codexLog struct{ format.Log }

// OwnKinds: the damage kinds its checklist reports (see format.Kinds).
func (codexLog) OwnKinds() []string {
	return []string{format.KindEmpty}
}

func (codexLog) Name() string { return "codex" }

func (codexLog) Dialect() jsonv.Dialect { return codexDialect }
func (codexLog) EmptyIsDamage() bool    { return true }
func (codexLog) AppendOnly() bool       { return true }
func (p codexLog) CheckLines(f format.File, lines []format.Line) format.Verdict {
	return format.CheckRecords(p, f, lines) // record by record: the same pass as a streamed file's
}

// RecordProblem applies the checks one record allows: the header's shape, and an ordinal, when
// there is one, that is a non-negative integer. The sequence of ordinals, the last record's
// ordinal and the header's id against the file name need the whole file (Inspect).
func (codexLog) RecordProblem(rec []byte, first bool) string {
	v, err := jsonv.ParseDepth(rec, codexDialect, 2) // the record's and its payload's members
	if err != nil {
		return err.Error()
	}
	if p := codexHeaderProblem(v); first && p != "" {
		return p
	}
	if o := v.Get("ordinal"); o != nil && !codexOrdinal(o) {
		return "ordinal is not a non-negative integer"
	}
	return ""
}

func (codexLog) NoRecords() format.Verdict {
	return format.Damage(format.KindEmpty, 0, "rollout holds no record")
}

// AppendedOK: an appended record carries an integer ordinal (so the file's last record has
// one) and is not a second session_meta. An append to a legacy rollout is read in full. That
// the appended ordinals continue the file's sequence is not checked here: the periodic full
// pass of an append-only file re-checks it.
func (codexLog) AppendedOK(rec []byte) bool {
	v, err := jsonv.ParseDepth(rec, codexDialect, 1)
	return err == nil && codexOrdinal(v.Get("ordinal")) && strOf(v.Get("type")) != "session_meta"
}

// SkeletonFields: what its checks read of a record (format.SkeletonFielder): the header's
// type and payload down to payload.history_base (codexHeaderFields, RecordProblem's
// reading too), a record's timestamp and ordinal, and a turn_context's payload.cwd and the
// first record's timestamp, which a rebuilt header takes (RebuildHeader).
func (codexLog) SkeletonFields() *jsonv.Fields { return codexSkeletonFields }

var codexSkeletonFields = &jsonv.Fields{Members: map[string]*jsonv.Fields{"timestamp": nil, "ordinal": nil, "type": nil,
	"payload": {Members: map[string]*jsonv.Fields{"id": nil, "history_mode": nil, "cwd": nil,
		"history_base": {Members: map[string]*jsonv.Fields{"end_ordinal_exclusive": nil}}}}}}

// RecordStarts: every record is written as {"timestamp":"…",…}.
func (codexLog) RecordStarts() [][]byte { return [][]byte{[]byte(`{"timestamp":"`)} }

// Whole: a RolloutLine, the shape the app's loader accepts.
func (codexLog) Whole(rec *jsonv.Value) bool {
	return isStr(rec.Get("timestamp")) && isStr(rec.Get("type")) && isObj(rec.Get("payload"))
}

// codexThreadID is the thread id a rollout's name carries ("" when it carries none).
func codexThreadID(path string) string {
	if m := codexRolloutRe.FindStringSubmatch(filepath.Base(path)); m != nil {
		return m[1]
	}
	return ""
}

// codexHome is the Codex home of a rollout: the parent of its archived_sessions directory or
// of the sessions directory above its day directories, read through symlinks (a symlinked
// rule root stands for the directory it points to); "" outside that layout.
func codexHome(path string) string {
	d := fsio.Resolved(filepath.Dir(path))
	if filepath.Base(d) == "archived_sessions" {
		return filepath.Dir(d)
	}
	for range 4 { // sessions/YYYY/MM/DD/, or an older flatter layout
		if filepath.Base(d) == "sessions" {
			return filepath.Dir(d)
		}
		d = filepath.Dir(d)
	}
	return ""
}

// lockCodex takes the thread's writer lock; a home without thread-writer-locks is of an era
// before that lock (the directory is never created).
func lockCodex(ctx context.Context, path string, _ format.Profile, lp format.LockParams) (format.Lock, error) {
	home, id := codexHome(path), codexThreadID(path)
	if home == "" || id == "" {
		return format.Unlocked{}, nil
	}
	dir := filepath.Join(home, "thread-writer-locks")
	// Looked at through the resolver: a thread-writer-locks that is a symlink is refused.
	if st, err := resolve.Lstat(dir); errors.Is(err, fs.ErrNotExist) {
		return format.Unlocked{}, nil
	} else if err != nil || st.Mode&syscall.S_IFMT != syscall.S_IFDIR {
		return nil, fmt.Errorf("codex thread locks %s: not a directory (%v)", dir, err)
	}
	return lock.Codex(ctx, home, id, lockOptions(lp))
}

func codexOrdinal(v *jsonv.Value) bool {
	return v != nil && v.Type == jsonv.Number && v.IsInt && v.Int >= 0
}

// codexHeaderProblem: what keeps rec from being a session_meta header ("" for nothing).
func codexHeaderProblem(rec *jsonv.Value) string {
	if strOf(rec.Get("type")) != "session_meta" {
		return "not session_meta (the app refuses the rollout)"
	}
	if !isObj(rec.Get("payload")) || !isStr(rec.Get("payload").Get("id")) {
		return "session_meta has no string payload.id"
	}
	return ""
}

// AddOrdinals gives the trailing records of a paginated rollout that lack an ordinal
// the numbers after the last record that has one, inserting `,"ordinal":N` right after each
// one's timestamp member (where the app writes it); nil when there is nothing to add or the
// number cannot be placed so.
func (codexLog) AddOrdinals(_ string, r io.ReaderAt, size int64) (*format.Splice, error) {
	// The last record with an ordinal member, read from the end: a sound rollout's last line.
	// A record none of whose keys is "ordinal" (spelled plainly) is passed over unbuilt.
	var keys []int32
	prev, valid, found := int64(-1), false, false
	var from int64 // where the records after it begin
	want := func(line []byte) bool {
		return format.ValidRecordKeys(codexLog{}, line, &keys) && mayHaveKey(line, keys, `"ordinal"`)
	}
	err := format.SplitBackLong(codexLog{}, r, size, want, func(l format.Line) error {
		if l.Val == nil {
			return nil
		}
		o := l.Val.Get("ordinal")
		if o == nil {
			return nil
		}
		found, valid, from = true, codexOrdinal(o), int64(l.End)
		if valid {
			prev = o.Int
		}
		return format.Stop
	})
	if err != nil || !found || !valid {
		return nil, err
	}
	var missing []int64 // where each record after it takes its number; -1: it cannot
	err = splitFrom(codexLog{}, r, from, size, nil, func(l format.Line) error {
		if l.Val == nil {
			return nil
		}
		at := int64(-1)
		if len(l.Val.Keys) > 0 && l.Val.Keys[0].Key == "timestamp" && isStr(l.Val.Keys[0].Val) {
			at = l.Off(l.Val.Keys[0].Val.End)
		}
		missing = append(missing, at)
		return nil
	})
	if err != nil || len(missing) == 0 {
		return nil, err
	}
	sp, last := &format.Splice{}, int64(0)
	for _, at := range missing {
		if at < 0 {
			return nil, nil
		}
		prev++
		sp.AddRange(last, at-last)
		sp.AddData([]byte(`,"ordinal":` + strconv.FormatInt(prev, 10)))
		last = at
	}
	sp.AddRange(last, size-last)
	return sp, nil
}

// mayHaveKey: one of the keys of the record line (their opening quotes at keys) may be key
// (quoted): written so, or with an escape.
func mayHaveKey(line []byte, keys []int32, key string) bool {
	for _, k := range keys {
		rest := line[k:]
		if bytes.HasPrefix(rest, []byte(key)) {
			return true
		}
		if end := bytes.IndexByte(rest[1:], '"'); end >= 0 && bytes.IndexByte(rest[1:1+end], '\\') >= 0 {
			return true
		}
	}
	return false
}

// RebuildHeader rebuilds a torn or missing session_meta line 1 from what the rollout
// and its name hold: the id from the name, the timestamp of the first record after it, the
// cwd of the first turn_context, and the complete string members of the torn line's payload
// (session_id, timestamp, originator, cli_version, source, model_provider), which is read
// from the file at path when r (a salvage) no longer has it. Every other byte of r is
// kept. nil when line 1 is a session_meta, or the id, a record after it or a cwd is missing,
// or the records after it do not start the sequence a header of ordinal 0 begins.
func (codexLog) RebuildHeader(path string, r io.ReaderAt, size int64) (*format.Splice, error) {
	id := codexThreadID(path)
	if id == "" {
		return nil, nil
	}
	spot, ok, err := findHeaderSpot(codexLog{}, path, r, size, func(v *jsonv.Value) bool { return strOf(v.Get("type")) == "session_meta" }, codexLine1Max)
	if !ok {
		return nil, err
	}
	var ts, cwd []byte // the first record's timestamp, the first turn_context's cwd
	next, paginated, first := false, false, false
	// Past the first record, only a line that may be a turn_context is built: its type
	// written plainly, or with a \u escape (the only one that spells a letter or '_').
	mayBeTurn := func(line []byte) bool {
		return !next || bytes.Contains(line, []byte("turn_context")) || bytes.Contains(line, []byte(`\u`))
	}
	err = spot.after(codexLog{}, r, size, mayBeTurn, func(l format.Line) error {
		if l.Val == nil {
			return nil
		}
		if !next {
			next = true
			if t := l.Val.Get("timestamp"); isStr(t) {
				b, err := l.RawOf(r, t)
				if err != nil {
					return err
				}
				ts = b
			}
			o := l.Val.Get("ordinal")
			paginated, first = o != nil, codexOrdinal(o) && o.Int == 1
		}
		if c := l.Val.Get("payload").Get("cwd"); strOf(l.Val.Get("type")) == "turn_context" && isStr(c) {
			b, err := l.RawOf(r, c)
			if err != nil {
				return err
			}
			cwd = b
			return format.Stop
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	members := codexPrefixMembers(spot.torn)
	if cwd == nil {
		cwd = members["cwd"]
	}
	if !next || cwd == nil || ts == nil {
		return nil, nil
	}
	if paginated && !first {
		return nil, nil // a fork's header (history_base) or a lost record: not rebuilt
	}
	quoted := []byte(strconv.Quote(id))
	if members["session_id"] == nil {
		members["session_id"] = quoted
	}
	if members["timestamp"] == nil {
		members["timestamp"] = ts
	}
	members["id"], members["cwd"] = quoted, cwd
	h := append([]byte(`{"timestamp":`), ts...)
	if paginated {
		h = append(h, `,"ordinal":0`...)
	}
	h = append(h, `,"type":"session_meta","payload":{`...)
	for _, k := range []string{"session_id", "id", "timestamp", "cwd", "originator", "cli_version", "source", "model_provider"} {
		if m := members[k]; m != nil {
			h = append(append(h, `"`+k+`":`...), m...)
			h = append(h, ',')
		}
	}
	h = h[:len(h)-1]
	if paginated {
		h = append(h, `,"history_mode":"paginated"`...)
	}
	return spot.splice(size, h, []byte("}}\n")), nil
}

// codexPrefixMembers reads a torn session_meta line as far as it goes: the complete string
// members of its payload, each its raw bytes (see [jsonv.PrefixMembers]).
func codexPrefixMembers(b []byte) map[string][]byte {
	out := map[string][]byte{}
	if string(jsonv.PrefixMembers(b, codexDialect)["type"]) != `"session_meta"` {
		return out
	}
	for k, v := range jsonv.PrefixMembers(b, codexDialect, "payload") {
		if v[0] == '"' {
			out[k] = v
		}
	}
	return out
}

// KeptPrefix: the bytes of this rollout the forks of its thread hold as their history, the
// largest history_base.end_byte_offset of the rollouts under the home's sessions and
// archived_sessions whose history_base names this thread (0 for none). Only the first line
// of each (bounded) is read; compressed rollouts are not.
func (codexLog) KeptPrefix(path string) int64 {
	id, home := codexThreadID(path), codexHome(path)
	if id == "" || home == "" {
		return 0
	}
	var keep int64
	for _, sub := range []string{"sessions", "archived_sessions"} {
		filepath.WalkDir(filepath.Join(home, sub), func(p string, d fs.DirEntry, err error) error {
			if err != nil || !d.Type().IsRegular() || !codexRolloutRe.MatchString(d.Name()) || codexThreadID(p) == id {
				return nil
			}
			line, complete := fsio.FirstLine(p, codexLine1Max)
			if !complete || !bytes.Contains(line, []byte(id)) {
				return nil
			}
			v, _ := jsonv.Parse(line, codexDialect) // nil when not valid: no history_base
			hb := v.Get("payload").Get("history_base")
			if end := hb.Get("end_byte_offset"); strOf(hb.Get("thread_id")) == id && codexOrdinal(end) {
				keep = max(keep, end.Int)
			}
			return nil
		})
	}
	return keep
}

// NewSequence: a paginated rollout's ordinals never repeat or go back, its header has one,
// and so has its last record (codex.md "What valid means" 2–4); a gap in the ordinals or a
// middle record without one is a warning.
func (codexLog) NewSequence(path string) format.Sequence {
	return &codexSequence{id: codexThreadID(path)}
}

// codexUntimedWarning: Codex 0.169.0 resumes a rollout without the records that have no
// string timestamp, without a word (seen with the oracle): history is lost.
func codexUntimedWarning(n int) []string {
	if n == 0 {
		return nil
	}
	return []string{fmt.Sprintf("%d record(s) without a string timestamp: Codex skips them on resume", n)}
}

type codexSequence struct {
	id                 string // the file name's thread id ("" when unknown)
	n                  int
	untimed            int
	gaps, unnumbered   int // ordinals skipped; records after the header without one
	paginated, lastHas bool
	headerHas, fork    bool
	start, prev        int64
	arena              jsonv.Arena // each record's tree, dropped once judged
}

func (s *codexSequence) Record(rec []byte) string {
	if err := jsonv.Valid(rec, codexDialect); err != nil {
		return err.Error()
	}
	return s.RecordValid(rec)
}

// RecordValid: Record of a record judgeRecords has found valid.
func (s *codexSequence) RecordValid(rec []byte) string {
	return s.record(s.arena.ParseFieldsValid(rec, codexDialect, s.fields()))
}

// ChecksRecords: Record applies RecordProblem's checklist on its own parse of the record.
func (s *codexSequence) ChecksRecords() {}

// codexRecordFields: what record reads of a record after the header (the timestamp's type
// only, and the ordinal); codexHeaderFields: of the header, its type and payload down to
// payload.history_base.
var (
	codexRecordFields = &jsonv.Fields{Members: map[string]*jsonv.Fields{"timestamp": {Opaque: true}, "ordinal": nil}}
	codexHeaderFields = &jsonv.Fields{Members: map[string]*jsonv.Fields{"timestamp": {Opaque: true}, "ordinal": nil, "type": nil,
		"payload": {Members: map[string]*jsonv.Fields{"id": nil, "history_mode": nil,
			"history_base": {Members: map[string]*jsonv.Fields{"end_ordinal_exclusive": nil}}}}}}
)

// fields is what the next record is read for: the header down to payload.history_base.
func (s *codexSequence) fields() *jsonv.Fields {
	if s.n == 0 {
		return codexHeaderFields
	}
	return codexRecordFields
}

// codexRec is what the sequence reads of a record, all its findings come from: the members
// of any record, and those of a header when it was read as one (the file's first record).
type codexRec struct {
	err           string // the syntax error of a record given unchecked, "" for a valid one
	timed         bool   // a string timestamp
	hasOrd, ordOK bool   // an ordinal; a non-negative integer one
	ord           int64
	// The header's: what keeps it from being one, its payload's id, history mode and fork.
	header        bool
	headerProblem string
	idStr         bool
	id            string
	paginated     bool
	fork          bool
	start         int64
}

// readCodexRec reads the tree v of a record, as a header when header says so (v built with
// codexHeaderFields, else codexRecordFields at least).
func readCodexRec(v *jsonv.Value, header bool) codexRec {
	r := codexRec{timed: isStr(v.Get("timestamp"))}
	if o := v.Get("ordinal"); o != nil {
		r.hasOrd, r.ordOK = true, codexOrdinal(o)
		if r.ordOK {
			r.ord = o.Int
		}
	}
	if header {
		r.header, r.headerProblem = true, codexHeaderProblem(v)
		meta := v.Get("payload")
		if id := meta.Get("id"); isStr(id) {
			r.idStr, r.id = true, id.Str
		}
		r.paginated = strOf(meta.Get("history_mode")) == "paginated"
		if e := meta.Get("history_base").Get("end_ordinal_exclusive"); codexOrdinal(e) {
			r.fork, r.start = true, e.Int
		}
	}
	return r
}

// record is Record of the record's tree.
func (s *codexSequence) record(v *jsonv.Value) string {
	return s.apply(readCodexRec(v, s.n == 0))
}

// apply is Record of what was read of the record: RecordProblem's checklist first (the
// header's shape, an ordinal that is a non-negative integer), then the sequence's. The
// file's first record was read as a header.
func (s *codexSequence) apply(r codexRec) string {
	if r.err != "" {
		return r.err
	}
	if s.n == 0 && r.headerProblem != "" {
		return r.headerProblem
	}
	if r.hasOrd && !r.ordOK {
		return "ordinal is not a non-negative integer"
	}
	s.n++
	if !r.timed {
		s.untimed++
	}
	s.lastHas = r.ordOK
	if s.n == 1 {
		if s.id != "" && r.idStr && r.id != s.id {
			return fmt.Sprintf("session_meta id %q is not the file name's %s", r.id, s.id)
		}
		s.paginated = r.paginated
		if r.fork {
			s.start, s.fork = r.start, true
		}
		if s.headerHas = s.lastHas; s.headerHas && r.ord != s.start && !(s.fork && r.ord == 0) {
			return fmt.Sprintf("session_meta has ordinal %d, want %d", r.ord, s.start)
		}
		if s.headerHas {
			s.prev = max(r.ord, s.start-1)
		}
		return ""
	}
	if !r.hasOrd {
		s.unnumbered++
		return ""
	}
	s.paginated = true
	if !s.headerHas {
		return "session_meta of a paginated rollout has no ordinal"
	}
	if r.ord <= s.prev {
		return fmt.Sprintf("ordinal %d after %d (reused or decreasing; never renumbered)", r.ord, s.prev)
	}
	if r.ord > s.prev+1 {
		s.gaps++
	}
	s.prev = r.ord
	return ""
}

// codexBatch reads the records of a block of a rollout ahead of the sequence (a
// format.BatchSequence's batch): its first record as a header too.
type codexBatch struct {
	arena jsonv.Arena
	recs  []codexRec
}

func (s *codexSequence) NewBatch() format.RecordBatch { return &codexBatch{} }

func (s *codexSequence) ApplyBatch(b format.RecordBatch, k int) string {
	return s.apply(b.(*codexBatch).recs[k])
}

func (b *codexBatch) Reset() { b.recs = b.recs[:0] }

func (b *codexBatch) Add(rec []byte, valid bool) {
	if !valid {
		if err := jsonv.Valid(rec, codexDialect); err != nil {
			b.recs = append(b.recs, codexRec{err: err.Error()})
			return
		}
	}
	b.AddKeyed(rec, nil)
}

// AddKeyed: Add of a valid record, whose members' keys begin at keys (nil: not known).
func (b *codexBatch) AddKeyed(rec []byte, keys []int32) {
	header, f := len(b.recs) == 0, codexRecordFields
	if header {
		f = codexHeaderFields
	}
	b.recs = append(b.recs, readCodexRec(b.arena.ParseFieldsKeys(rec, codexDialect, f, keys), header))
}

// Warnings, once End has run: records without a timestamp, and a paginated rollout's gaps in
// the ordinals and records before the last without one (a record the app wrote and a heal or
// its loader dropped: the app resumes such a rollout, numbering on from its last record).
func (s *codexSequence) Warnings() []string {
	w := codexUntimedWarning(s.untimed)
	if s.paginated && s.gaps+s.unnumbered > 0 {
		w = append(w, fmt.Sprintf("%d gap(s) in the ordinals, %d record(s) before the last without one (the app resumes the rollout)", s.gaps, s.unnumbered))
	}
	return w
}

// Held: its counts, and the arena (format.HeldSequence).
func (s *codexSequence) Held() int { return 128 + len(s.id) + s.arena.Held() }

func (s *codexSequence) End() string {
	switch {
	case !s.paginated || s.n == 0:
		return ""
	case !s.headerHas:
		return "session_meta of a paginated rollout has no ordinal"
	case !s.lastHas:
		return "the last record has no ordinal (the app refuses to resume)"
	}
	return ""
}
