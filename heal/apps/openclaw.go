package apps

import (
	"context"
	"io"
	"math"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/sessionmedic/sessionmedic/heal/format"
	"github.com/sessionmedic/sessionmedic/heal/fsio"
	"github.com/sessionmedic/sessionmedic/heal/jsonv"
	"github.com/sessionmedic/sessionmedic/heal/lock"
	"github.com/sessionmedic/sessionmedic/internal/resolve"
	"github.com/sessionmedic/sessionmedic/policy"
)

// OpenClaw (openclaw.md): an agent's sessions directory holds the store sessions.json (one
// object, an entry per session, rotated to sessions.json.bak.<ms> and written through
// sessions.json.<uuid>.tmp) and one append-only transcript per session. Both are guarded by
// the OpenClaw lock files of heal/lock. A file of an install of the SQLite era is left alone;
// the era's agent database, <agentDir>/openclaw-agent.sqlite, is judged through SQLite
// (sqlitestore.go).

var (
	openclawSessionIDRe = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._:@-]*$`)
	openclawBakRe       = regexp.MustCompile(`^sessions\.json\.bak\.(\d+)$`)
	openclawTempRe      = regexp.MustCompile(`(?i)^sessions\.json\.(?:\d+\.)?[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}\.tmp$`)
)

func addOpenClaw(r *format.Registry) {
	r.Add("openclaw", func(path string) format.Profile {
		base := filepath.Base(path)
		if base == "sessions.json" || strings.HasPrefix(base, "sessions.json.") {
			return openclawStore{}
		}
		if base == "openclaw-agent.sqlite" {
			return openclawAgentDB
		}
		return openclawTranscript{}
	}, openclawStore{}, openclawTranscript{}, openclawAgentDB)
	r.AddLock(string(policy.LockOpenClaw), lockOpenClaw)
}

// openclawStore is sessions.json (and its backups and temp files).
type openclawStore struct{ format.Document }

// OwnKinds: the damage kinds its checklist reports (see format.Kinds).
func (openclawStore) OwnKinds() []string {
	return []string{format.KindNotObject, format.KindSchema, format.KindWipedPlaceholder}
}

func (openclawStore) Name() string           { return "openclaw-store" }
func (openclawStore) Dialect() jsonv.Dialect { return jsonv.Dialect{} }
func (openclawStore) EmptyIsDamage() bool    { return true }

// DocShape: the checklist takes the store's entries one by one.
func (openclawStore) DocShape() jsonv.Shape { return openclawStoreShape }

// openclawStoreShape: an entry is read one level down (its members' scalars).
var openclawStoreShape = jsonv.Shape{Root: true, ElemDepth: 1}

func (openclawStore) NewDocCheck(f format.File) format.DocCheck { return &openclawStoreCheck{f: f} }

// openclawStoreCheck checks each entry as it comes; the first problem is the verdict.
type openclawStoreCheck struct {
	f       format.File
	entries int
	problem *format.Verdict
}

func (c *openclawStoreCheck) Elem(e jsonv.Elem) {
	if e.In.Type != jsonv.Object {
		return
	}
	c.entries++
	if c.problem == nil {
		if p := openclawEntryProblem(e.Val); p != "" {
			v := format.Damage(format.KindSchema, int64(e.KeyStart), "%s: %s", e.Key, p)
			c.problem = &v
		}
	}
}

// Records: the store's entries.
func (c *openclawStoreCheck) Records() int { return c.entries }

func (c *openclawStoreCheck) End(root *jsonv.Value, _ jsonv.WalkInfo) format.Verdict {
	return checkOpenClawStore(c.f, root, c.entries, c.problem)
}
func (openclawStore) SkipReason(path string, _ []byte) string { return openclawSQLiteEra(path) }

// DropInvalid removes the entries that fail the per-entry checklist.
func (p openclawStore) DropInvalid(data []byte) []byte {
	return format.SpliceBytes(data, p.DropInvalidSplice)
}

// DropInvalidSplice is DropInvalid of the store r holds, said as a splice of it.
func (openclawStore) DropInvalidSplice(r io.ReaderAt, size int64) (*format.Splice, error) {
	return openclawDropInvalid(r, size)
}

// Backups: the rotation backups and complete temp files, newest first.
func (openclawStore) Backups(path string) []string { return openclawBackups(filepath.Dir(path)) }

// Probe: the store itself.
func (openclawStore) Probe() string { return "sessions.json" }

// MissingIn: a store renamed away by a rotation that died, which backups or transcripts
// show existed. The directory's own name says whether it is a sessions directory: it is read
// through a symlinked rule root, which stands for the directory it points to.
func (openclawStore) MissingIn(dir string, names []string) []string {
	if openclawStoreMissing(fsio.Resolved(dir), names) {
		return []string{"sessions.json"}
	}
	return nil
}

func (openclawStore) MissingEvidence() string        { return "backups or transcripts show it existed" }
func (openclawStore) MissingSources(string) []string { return nil }

// TempLockTarget: the store's temp files are written under the store's lock.
func (openclawStore) TempLockTarget(temp string, _ []byte) string {
	return filepath.Join(filepath.Dir(temp), "sessions.json")
}

// openclawTranscript is one session's append-only transcript.
type openclawTranscript struct{ format.Log }

// OwnKinds: the damage kinds its checklist reports (see format.Kinds).
func (openclawTranscript) OwnKinds() []string {
	return []string{format.KindEmpty}
}

func (openclawTranscript) Name() string           { return "openclaw-transcript" }
func (openclawTranscript) Dialect() jsonv.Dialect { return jsonv.Dialect{} }
func (openclawTranscript) EmptyIsDamage() bool    { return true }
func (openclawTranscript) AppendOnly() bool       { return true }
func (p openclawTranscript) CheckLines(f format.File, lines []format.Line) format.Verdict {
	return format.CheckRecords(p, f, lines) // record by record: the same pass as a streamed file's
}
func (openclawTranscript) SkipReason(path string, _ []byte) string { return openclawSQLiteEra(path) }
func (openclawTranscript) RecordProblem(rec []byte, first bool) string {
	return transcriptLineProblem(rec, first)
}

// transcriptFields: what transcriptEntryProblem reads of a record, the header's type decoded
// (entryFields: of a record after it, the type of its type alone).
var (
	transcriptFields = &jsonv.Fields{Members: map[string]*jsonv.Fields{"type": nil, "id": {Opaque: true}}}
	entryFields      = &jsonv.Fields{Members: map[string]*jsonv.Fields{"type": {Opaque: true}}}
)

// SkeletonFields: what its checks read of a record (format.SkeletonFielder): its type and
// id (the header's, an entry's type, a record's key: idKeyFields).
func (openclawTranscript) SkeletonFields() *jsonv.Fields { return idKeyFields }

func (openclawTranscript) NoRecords() format.Verdict {
	return format.Damage(format.KindEmpty, 0, "transcript has no header")
}
func (openclawTranscript) AppendedOK(rec []byte) bool { return transcriptAppendedOK(rec) }

// NewSequence: nothing spans records (see openclawSeq).
func (openclawTranscript) NewSequence(string) format.Sequence { return &openclawSeq{} }

// RecordKey: an entry is keyed by its id, the session header apart.
func (openclawTranscript) RecordKey(rec *jsonv.Value) string { return idKey(rec) }

// TempLockTarget: temp files are written under the store's lock.
func (openclawTranscript) TempLockTarget(temp string, _ []byte) string {
	return filepath.Join(filepath.Dir(temp), "sessions.json")
}

// lockOpenClaw takes the store's lock for the store, a transcript's own lock for it.
func lockOpenClaw(ctx context.Context, path string, p format.Profile, lp format.LockParams) (format.Lock, error) {
	o := lockOptions(lp)
	if o.Stale == 0 {
		o.Stale = 30 * time.Second
	}
	if _, ok := p.(openclawStore); ok {
		return lock.OpenClaw(ctx, filepath.Join(filepath.Dir(path), "sessions.json.lock"), false, o)
	}
	o.Stale = 30 * time.Minute
	return lock.OpenClaw(ctx, path+".lock", true, o)
}

// openclawSQLiteEra returns why a file of a SQLite-era install must be left alone, or "".
func openclawSQLiteEra(path string) string {
	sessions := filepath.Dir(path)
	if filepath.Base(sessions) != "sessions" || filepath.Base(filepath.Dir(filepath.Dir(sessions))) != "agents" {
		// Not <state>/agents/<id>/sessions as written: a symlinked rule root; the layout is
		// where it points.
		sessions = fsio.Resolved(sessions)
	}
	agentDir := filepath.Dir(sessions) // <state>/agents/<id>
	// (An O_PATH descriptor on Linux: its close does not drop SQLite's locks on the store.)
	if db := filepath.Join(agentDir, "agent", "openclaw-agent.sqlite"); lstatOK(db) {
		return "openclaw SQLite era: legacy file left for `openclaw doctor --fix` to import; the agent's sessions are in " + db + ", guarded by a rule whose path holds it (the state or agent directory, not the sessions directory)"
	}
	state := filepath.Dir(filepath.Dir(agentDir))
	data, _, err := fsio.ReadStable(filepath.Join(state, "openclaw.json"), 16<<20)
	if err != nil {
		return ""
	}
	v, err := jsonv.Parse(data, jsonv.Dialect{})
	if err != nil {
		return ""
	}
	if ver := v.Get("meta").Get("lastTouchedVersion"); isStr(ver) && versionAtLeast(ver.Str, 2026, 8) {
		return "openclaw SQLite era (lastTouchedVersion " + ver.Str + "): legacy file left for `openclaw doctor --fix`"
	}
	return ""
}

func lstatOK(path string) bool { _, err := resolve.Lstat(path); return err == nil }

func versionAtLeast(v string, major, minor int) bool {
	parts := strings.SplitN(v, ".", 3)
	if len(parts) < 2 {
		return false
	}
	a, err1 := strconv.Atoi(parts[0])
	b, err2 := strconv.Atoi(parts[1])
	if err1 != nil || err2 != nil {
		return false
	}
	return a > major || a == major && b >= minor
}

// openclawEntryProblem applies openclaw.md "What valid means" 4–6 to one entry.
func openclawEntryProblem(e *jsonv.Value) string {
	if !isObj(e) {
		return "entry is not an object"
	}
	id := e.Get("sessionId")
	if !isStr(id) {
		return "entry has no string sessionId"
	}
	if len(id.Str) > 255 || !openclawSessionIDRe.MatchString(id.Str) || strings.ContainsAny(id.Str, `/\`) {
		return "entry has an unsafe sessionId"
	}
	if u := e.Get("updatedAt"); u != nil && (u.Type != jsonv.Number || math.IsNaN(u.Num) || math.IsInf(u.Num, 0)) {
		return "entry updatedAt is not a number"
	}
	return ""
}

// checkOpenClawStore is the store's verdict, given its number of entries and the first
// entry's problem.
func checkOpenClawStore(f format.File, root *jsonv.Value, entries int, problem *format.Verdict) format.Verdict {
	if root.Type != jsonv.Object {
		return format.Damage(format.KindNotObject, int64(root.Start), "store is not an object")
	}
	if problem != nil {
		return *problem
	}
	v := format.OK()
	if filepath.Base(f.Path) != "sessions.json" {
		return v
	}
	if entries == 0 {
		if bak := openclawWipeEvidence(f.Path); bak != "" {
			return format.Damage(format.KindWipedPlaceholder, 0, "empty store, but %s holds entries whose transcripts are live and unreferenced", filepath.Base(bak))
		}
	}
	return v
}

// openclawTranscriptFor is the transcript path an entry points at.
func openclawTranscriptFor(dir string, e *jsonv.Value) string {
	if f := e.Get("sessionFile"); isStr(f) && f.Str != "" {
		return filepath.Join(dir, filepath.Base(f.Str))
	}
	return filepath.Join(dir, strOf(e.Get("sessionId"))+".jsonl")
}

// openclawWipeEvidence returns the newest strictly valid backup whose entries point at live
// transcripts, when the store itself is empty (openclaw.md: "{} is a wiped placeholder only when").
func openclawWipeEvidence(store string) string {
	dir := filepath.Dir(store)
	for _, cand := range openclawBackups(dir) {
		// Judged and walked entry by entry from the file, never held: a backup may be large.
		live, ok := openclawBackupLive(dir, cand)
		if !ok {
			continue
		}
		if live > 0 {
			return cand
		}
		return ""
	}
	return ""
}

// openclawBackupLive counts the entries of a strictly valid backup whose transcripts are
// live; ok is false when it is not a valid store of valid entries (or cannot be read).
func openclawBackupLive(dir, cand string) (live int, ok bool) {
	f, id, err := fsio.OpenRegular(cand)
	if err != nil || id.Size > 256<<20 {
		if f != nil {
			f.Close()
		}
		return 0, false
	}
	defer f.Close()
	if _, err := jsonv.ValidReader(io.NewSectionReader(f, 0, id.Size), jsonv.Dialect{}, format.StreamBuf, format.MaxLine); err != nil {
		return 0, false
	}
	entries, bad := 0, false
	root, _, err := jsonv.Walk(f, id.Size, jsonv.Dialect{}, openclawStoreShape, func(e jsonv.Elem) {
		if e.In.Type != jsonv.Object || bad {
			return
		}
		entries++
		if openclawEntryProblem(e.Val) != "" {
			bad = true
			return
		}
		if st, err := resolve.Lstat(openclawTranscriptFor(dir, e.Val)); err == nil && st.Mode&syscall.S_IFMT == syscall.S_IFREG {
			live++
		}
	})
	if err != nil || !isObj(root) || entries == 0 || !fsio.StillSame(f, id) {
		return 0, false
	}
	if bad {
		return 0, true // a backup with an invalid entry: the newest valid one decides, and it has none live
	}
	return live, true
}

// openclawBackups lists the store's backup candidates, newest first: rotation backups by
// their epoch-ms suffix and complete temp files by mtime.
func openclawBackups(dir string) []string {
	ents, err := resolve.ReadDir(dir)
	if err != nil {
		return nil
	}
	type cand struct {
		path string
		ms   int64
	}
	var cs []cand
	for _, e := range ents {
		name := e.Name()
		if m := openclawBakRe.FindStringSubmatch(name); m != nil {
			ms, _ := strconv.ParseInt(m[1], 10, 64)
			cs = append(cs, cand{filepath.Join(dir, name), ms})
		} else if openclawTempRe.MatchString(name) {
			if fi, err := e.Info(); err == nil {
				cs = append(cs, cand{filepath.Join(dir, name), fi.ModTime().UnixMilli()})
			}
		}
	}
	sort.SliceStable(cs, func(i, j int) bool { return cs[i].ms > cs[j].ms })
	out := make([]string, len(cs))
	for i, c := range cs {
		out[i] = c.path
	}
	return out
}

// openclawStoreMissing reports whether a sessions dir has lost its store: no sessions.json,
// but rotation backups or live transcripts that a store would index.
func openclawStoreMissing(dir string, names []string) bool {
	if filepath.Base(dir) != "sessions" {
		return false
	}
	for _, n := range names {
		if n == "sessions.json" {
			return false
		}
	}
	for _, n := range names {
		if openclawBakRe.MatchString(n) || (strings.HasSuffix(n, ".jsonl") && !strings.Contains(n, ".corrupt-") && !strings.Contains(n, ".checkpoint.")) {
			return true
		}
	}
	return false
}

// openclawSeq is the streamed pass over a transcript: nothing spans its records (each is
// judged alone, the header by being first), so a file of any size is judged record by
// record, never as a whole tree. It applies RecordProblem's checklist itself, on the members
// it reads of a record (openclawRec), and reads them ahead of itself in batches.
type openclawSeq struct {
	n     int         // records seen
	arena jsonv.Arena // each record's tree, dropped once read
}

// openclawRec is what transcriptEntryProblem reads of a record.
type openclawRec struct {
	err    string // the syntax error of a record given unchecked, "" for a valid one
	header bool   // type "session" and a string id (read only of a record read as the header)
	typed  bool   // a string type
}

// readOpenclawRec reads the tree v of a record, built with transcriptFields when header
// says it is read as the file's first record, else with entryFields at least.
func readOpenclawRec(v *jsonv.Value, header bool) openclawRec {
	t := v.Get("type")
	return openclawRec{header: header && strOf(t) == "session" && isStr(v.Get("id")), typed: isStr(t)}
}

// openclawFields is what a record is read for: the first of the file as the header.
func openclawFields(header bool) *jsonv.Fields {
	if header {
		return transcriptFields
	}
	return entryFields
}

// apply is transcriptEntryProblem of the record r was read of, the first one the header.
func (s *openclawSeq) apply(r openclawRec) string {
	if r.err != "" {
		return r.err
	}
	s.n++
	switch {
	case s.n == 1 && !r.header:
		return "not a session header"
	case s.n > 1 && !r.typed:
		return "entry has no string type"
	}
	return ""
}

func (s *openclawSeq) Record(rec []byte) string {
	if err := jsonv.Valid(rec, jsonv.Dialect{}); err != nil {
		return err.Error() // as RecordProblem says it
	}
	return s.RecordValid(rec)
}

// RecordValid: Record of a record judgeRecords has found valid.
func (s *openclawSeq) RecordValid(rec []byte) string {
	return s.apply(readOpenclawRec(s.arena.ParseFieldsValid(rec, jsonv.Dialect{}, openclawFields(s.n == 0)), s.n == 0))
}

// ChecksRecords: Record applies RecordProblem's checklist on its own parse of the record.
func (s *openclawSeq) ChecksRecords() {}

// Held: the arena (format.HeldSequence).
func (s *openclawSeq) Held() int { return 64 + s.arena.Held() }

func (s *openclawSeq) End() string { return "" }

// openclawBatch reads the records of a block of a transcript ahead of the sequence.
type openclawBatch struct {
	arena jsonv.Arena
	recs  []openclawRec
}

func (s *openclawSeq) NewBatch() format.RecordBatch { return &openclawBatch{} }

func (s *openclawSeq) ApplyBatch(b format.RecordBatch, k int) string {
	return s.apply(b.(*openclawBatch).recs[k])
}

func (b *openclawBatch) Reset() { b.recs = b.recs[:0] }

func (b *openclawBatch) Add(rec []byte, valid bool) {
	if !valid {
		if err := jsonv.Valid(rec, jsonv.Dialect{}); err != nil {
			b.recs = append(b.recs, openclawRec{err: err.Error()})
			return
		}
	}
	b.AddKeyed(rec, nil)
}

// AddKeyed: Add of a valid record, whose members' keys begin at keys (nil: not known).
func (b *openclawBatch) AddKeyed(rec []byte, keys []int32) {
	header := len(b.recs) == 0 // the file's first record is the first of its batch
	v := b.arena.ParseFieldsKeys(rec, jsonv.Dialect{}, openclawFields(header), keys)
	b.recs = append(b.recs, readOpenclawRec(v, header))
}

// openclawDropInvalid removes the entries that fail the per-entry checklist, keeping every
// other member's bytes as they are (the opt-in drop-invalid-entries extension), the store
// walked entry by entry: a splice of its kept entries, or nil when none is dropped.
func openclawDropInvalid(r io.ReaderAt, size int64) (*format.Splice, error) {
	type span struct{ from, to int64 }
	var kept []span
	entries := 0
	root, _, err := jsonv.Walk(r, size, jsonv.Dialect{}, openclawStoreShape, func(e jsonv.Elem) {
		if e.In.Type != jsonv.Object {
			return
		}
		entries++
		if openclawEntryProblem(e.Val) == "" {
			kept = append(kept, span{int64(e.KeyStart), int64(e.Val.End)})
		}
	})
	if err != nil || !isObj(root) || len(kept) == entries {
		return nil, nil // not a store that parses, or nothing to drop
	}
	s := &format.Splice{}
	if len(kept) == 0 {
		s.AddData([]byte("{}"))
	} else {
		s.AddData([]byte("{\n  "))
		for i, k := range kept {
			if i > 0 {
				s.AddData([]byte(",\n  "))
			}
			s.AddRange(k.from, k.to-k.from)
		}
		s.AddData([]byte("\n}"))
	}
	s.AddRange(int64(root.End), size-int64(root.End)) // the original's trailing newline, if any
	return s, nil
}

// transcriptLineProblem applies the OpenClaw transcript checklist to one record.
func transcriptLineProblem(body []byte, first bool) string {
	v, err := jsonv.ParseDepth(body, jsonv.Dialect{}, 1)
	if err != nil {
		return err.Error()
	}
	return transcriptEntryProblem(v, first)
}

// transcriptEntryProblem: the first record is the session header (type "session", a string
// id); every other is an entry with a string type.
func transcriptEntryProblem(v *jsonv.Value, first bool) string {
	if first {
		if strOf(v.Get("type")) != "session" || !isStr(v.Get("id")) {
			return "not a session header"
		}
		return ""
	}
	if !isStr(v.Get("type")) {
		return "entry has no string type"
	}
	return ""
}

// transcriptAppendedOK: a record appended after a transcript's header is an entry with a
// string type, and not a second header.
func transcriptAppendedOK(rec []byte) bool {
	v, err := jsonv.ParseDepth(rec, jsonv.Dialect{}, 1)
	return err == nil && isStr(v.Get("type")) && strOf(v.Get("type")) != "session"
}
