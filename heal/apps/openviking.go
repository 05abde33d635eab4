package apps

import (
	"bytes"
	"context"
	"errors"
	"hash/maphash"
	"io"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"

	"github.com/sessionmedic/sessionmedic/heal/format"
	"github.com/sessionmedic/sessionmedic/heal/fsio"
	"github.com/sessionmedic/sessionmedic/heal/jsonv"
	"github.com/sessionmedic/sessionmedic/heal/lock"
	"github.com/sessionmedic/sessionmedic/internal/resolve"
	"github.com/sessionmedic/sessionmedic/policy"
)

// OpenViking (openviking.md): a session directory holds messages.jsonl, the live messages
// rewritten whole, and .meta.json, whose message_count follows them; history/archive_NNN
// holds the messages a commit archived. Files in an OVE1 envelope are encrypted and left
// alone. Its lock is the OpenViking path lock of heal/lock.

var ovDialect = jsonv.Dialect{NonFinite: true}

func addOpenViking(r *format.Registry) {
	r.Add("openviking", func(path string) format.Profile {
		if filepath.Base(path) == ".meta.json" {
			return ovMeta{}
		}
		return ovMessages{}
	}, ovMessages{}, ovMeta{})
	r.AddLock(string(policy.LockOpenViking), lockOpenViking)
}

// ovMessages is a session's messages.jsonl.
type ovMessages struct{ format.Log }

// OwnKinds: the damage kinds its checklist reports (see format.Kinds).
func (ovMessages) OwnKinds() []string {
	return []string{format.KindEmpty, format.KindSchema, format.KindStaleLiveRecords}
}

func (ovMessages) Name() string           { return "openviking-messages" }
func (ovMessages) Dialect() jsonv.Dialect { return ovDialect }
func (ovMessages) EmptyIsDamage() bool    { return false }
func (ovMessages) CheckLines(f format.File, lines []format.Line) format.Verdict {
	return checkOVMessages(f, lines)
}
func (ovMessages) SkipReason(_ string, data []byte) string { return ovEncrypted(data) }

// CheckEmpty: an empty messages file is damage only when its metadata counts messages.
func (ovMessages) CheckEmpty(f format.File) format.Verdict { return ovEmptyMessages(f) }

// SkeletonFields: what its checks read of a message (format.SkeletonFielder): ovFields, and
// the type a record's key reads (idKey).
func (ovMessages) SkeletonFields() *jsonv.Fields { return ovSkeletonFields }

var ovSkeletonFields = &jsonv.Fields{Members: map[string]*jsonv.Fields{
	"id": nil, "role": nil, "parts": {Opaque: true}, "content": {Opaque: true}, "type": nil,
}}

// Superseded: the messages a finished commit already archived.
func (ovMessages) Superseded(path string) func(*jsonv.Value) bool {
	archived := ovArchivedIDs(filepath.Dir(path))
	return func(rec *jsonv.Value) bool { return archived[strOf(rec.Get("id"))] }
}

// RecordKey: a message is keyed by its id.
func (ovMessages) RecordKey(rec *jsonv.Value) string { return idKey(rec) }

// Reconcile drops the live messages already archived.
func (p ovMessages) Reconcile(path string, data []byte, kind string) []byte {
	return format.SpliceBytes(data, func(r io.ReaderAt, size int64) (*format.Splice, error) {
		return p.ReconcileSplice(path, r, size, kind)
	})
}

// ReconcileSplice is Reconcile of the messages r holds, said as a splice of them: their
// salvage, which drops the archived ones.
func (p ovMessages) ReconcileSplice(path string, r io.ReaderAt, size int64, kind string) (*format.Splice, error) {
	if kind != format.KindStaleLiveRecords {
		return nil, nil
	}
	sp, _, err := format.PlanKeep(p, path, r, size)
	return sp, err
}

// LinkedEdit keeps .meta.json's message_count equal to the live lines (records).
func (ovMessages) LinkedEdit(messages string, records int) (format.Edit, bool) {
	metaPath := filepath.Join(filepath.Dir(messages), ".meta.json")
	meta, id, err := fsio.ReadStable(metaPath, 16<<20)
	if err != nil {
		return format.Edit{}, false
	}
	if out, ok := ovSetCount(meta, records); ok {
		return format.Edit{Path: metaPath, Old: meta, OldID: id, Data: out}, true
	}
	return format.Edit{}, false
}

// ovMeta is a session's .meta.json.
type ovMeta struct{ format.Document }

// LastInDir: a heal sees a session's live messages before the .meta.json that counts them.
func (ovMeta) LastInDir(name string) bool { return name == ".meta.json" }

// ovLockNameRe matches OpenViking's lock files (.ovlock, .exact.ovlock.*). It is never
// written.
var ovLockNameRe = regexp.MustCompile(`(\.ovlock|^\.exact\.ovlock\..*)$`)

// IsLockName: OpenViking's path locks.
func (ovMeta) IsLockName(name string) bool { return ovLockNameRe.MatchString(name) }

// OwnKinds: the damage kinds its checklist reports (see format.Kinds).
func (ovMeta) OwnKinds() []string {
	return []string{format.KindNotObject, format.KindSchema, format.KindMetadataLag}
}

func (ovMeta) Name() string           { return "openviking-meta" }
func (ovMeta) Dialect() jsonv.Dialect { return ovDialect }
func (ovMeta) EmptyIsDamage() bool    { return true }

// DocShape: the checklist reads top-level members only.
func (ovMeta) DocShape() jsonv.Shape                     { return jsonv.Shape{} }
func (ovMeta) NewDocCheck(f format.File) format.DocCheck { return ovMetaCheck{f} }

type ovMetaCheck struct{ f format.File }

func (ovMetaCheck) Elem(jsonv.Elem) {}
func (c ovMetaCheck) End(root *jsonv.Value, _ jsonv.WalkInfo) format.Verdict {
	return checkOVMeta(c.f, root)
}
func (ovMetaCheck) Records() int                       { return 1 }
func (ovMeta) SkipReason(_ string, data []byte) string { return ovEncrypted(data) }

// Reconcile sets message_count to the live messages, when none of them is archived.
func (m ovMeta) Reconcile(path string, data []byte, kind string) []byte {
	return format.SpliceBytes(data, func(r io.ReaderAt, size int64) (*format.Splice, error) {
		return m.ReconcileSplice(path, r, size, kind)
	})
}

// ReconcileSplice is Reconcile of the .meta.json r holds, said as a splice of it: its bytes,
// but those of its top-level message_count (the last, where the key is repeated, as the app's
// json.load keeps it) made the count of live messages; nil when that count is already there,
// or when the file holds no such number.
func (ovMeta) ReconcileSplice(path string, r io.ReaderAt, size int64, _ string) (*format.Splice, error) {
	live, overlap, ok := ovLive(filepath.Dir(path))
	if !ok || overlap {
		return nil, nil
	}
	return ovCountSplice(r, size, live)
}

// ovCountSplice is ovSetCount of the .meta.json r holds, said as a splice of it (nil where
// ovSetCount changes nothing).
func ovCountSplice(r io.ReaderAt, size int64, live int) (*format.Splice, error) {
	root, _, err := jsonv.Walk(r, size, ovDialect, jsonv.Shape{}, nil)
	if err != nil || !isObj(root) {
		return nil, nil // not a document that parses: nothing to reconcile
	}
	n := root.Get("message_count")
	if n == nil || n.Type != jsonv.Number {
		return nil, nil
	}
	num := []byte(strconv.Itoa(live))
	at, end := int64(n.Start), int64(n.End)
	if end-at == int64(len(num)) {
		raw := make([]byte, len(num))
		if _, err := r.ReadAt(raw, at); err != nil && err != io.EOF {
			return nil, err
		}
		if bytes.Equal(raw, num) {
			return nil, nil
		}
	}
	sp := &format.Splice{}
	sp.AddRange(0, at)
	sp.AddData(num)
	sp.AddRange(end, size-end)
	return sp, nil
}

func ovEncrypted(data []byte) string {
	if bytes.HasPrefix(data, []byte("OVE1")) {
		return "encrypted (OVE1 envelope)"
	}
	return ""
}

// lockOpenViking takes the session's path lock below its `<workspace>/viking` tree.
func lockOpenViking(ctx context.Context, path string, _ format.Profile, lp format.LockParams) (format.Lock, error) {
	sid := filepath.Dir(path)
	root := vikingRoot(sid)
	if root == "" {
		// Through a symlinked rule root, the tree above the session is where it points.
		sid = fsio.Resolved(sid)
		root = vikingRoot(sid)
	}
	return lock.OpenViking(ctx, sid, root, lockOptions(lp))
}

// vikingRoot is the `<workspace>/viking` directory above a session, or "" when not found.
func vikingRoot(sid string) string {
	for d := sid; d != filepath.Dir(d); d = filepath.Dir(d) {
		if filepath.Base(d) == "viking" {
			return d
		}
	}
	return ""
}

var ovArchiveRe = regexp.MustCompile(`^archive_(\d{3})$`)

// ovArchive is one history/archive_NNN directory.
type ovArchive struct {
	n        int
	done     bool
	failed   bool
	ready    bool
	retained int // len(phase1.retained_message_ids), -1 when unknown
	ids      map[string]bool
}

func ovArchives(sid string) []ovArchive {
	ents, err := resolve.ReadDir(filepath.Join(sid, "history"))
	if err != nil {
		return nil
	}
	var out []ovArchive
	for _, e := range ents {
		m := ovArchiveRe.FindStringSubmatch(e.Name())
		if m == nil || !e.IsDir() {
			continue
		}
		dir := filepath.Join(sid, "history", e.Name())
		a := ovArchive{retained: -1, ids: map[string]bool{}}
		a.n, _ = strconv.Atoi(m[1])
		_, err1 := resolve.Lstat(filepath.Join(dir, ".done"))
		_, err2 := resolve.Lstat(filepath.Join(dir, ".failed.json"))
		a.done, a.failed = err1 == nil, err2 == nil
		if data, _, err := fsio.ReadStable(filepath.Join(dir, ".meta.json"), 16<<20); err == nil {
			if v, err := jsonv.Parse(data, ovDialect); err == nil {
				p := v.Get("phase1")
				if st := p.Get("status"); isStr(st) && st.Str == "ready" {
					a.ready = true
				}
				if r := p.Get("retained_message_ids"); isArr(r) {
					a.retained = len(r.Items)
				}
			}
		}
		// Read line by line, never held: an archive may hold many messages.
		if f, id, err := fsio.OpenRegular(filepath.Join(dir, "messages.jsonl")); err == nil {
			format.EachLineLong(ovMessages{}, f, id.Size, func(_, _ int64, line []byte, _, _ bool) error {
				if format.ValidRecord(ovMessages{}, line) { // a long line's skeleton
					v := jsonv.ParseFieldsValid(bytes.TrimSuffix(line, []byte("\r")), ovDialect, ovIDField)
					if id := v.Get("id"); isStr(id) {
						a.ids[id.Str] = true
					}
				}
				return nil
			})
			f.Close()
		}
		out = append(out, a)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].n < out[j].n })
	return out
}

// ovArchivedIDs are the ids of archives whose Phase 2 finished (.done, no .failed.json): only
// those may be reconciled against (openviking.md rule 8).
func ovArchivedIDs(sid string) map[string]bool {
	ids := map[string]bool{}
	for _, a := range ovArchives(sid) {
		if a.done && !a.failed {
			for id := range a.ids {
				ids[id] = true
			}
		}
	}
	return ids
}

// ovMetaCount reads message_count from the session's .meta.json.
func ovMetaCount(sid string) (int64, bool) {
	data, _, err := fsio.ReadStable(filepath.Join(sid, ".meta.json"), 16<<20)
	if err != nil {
		return 0, false
	}
	v, err := jsonv.Parse(data, ovDialect)
	if err != nil {
		return 0, false
	}
	n := v.Get("message_count")
	if n == nil || n.Type != jsonv.Number || !n.IsInt {
		return 0, false
	}
	return n.Int, true
}

func ovEmptyMessages(f format.File) format.Verdict {
	sid := filepath.Dir(f.Path)
	n, ok := ovMetaCount(sid)
	if !ok || n == 0 {
		return format.OK()
	}
	arch := ovArchives(sid)
	for i := len(arch) - 1; i >= 0; i-- {
		if arch[i].ready {
			if arch[i].retained == 0 {
				return format.OK()
			}
			break
		}
	}
	return format.Damage(format.KindEmpty, 0, "messages.jsonl is empty while .meta.json says message_count %d and no commit explains it", n)
}

func checkOVMessages(f format.File, lines []format.Line) format.Verdict {
	return format.CheckRecords(ovMessages{}, f, lines)
}

// NewSequence: a session's messages are judged record by record (a big one streaming): each
// has a string id, never repeated, a role of user or assistant, and parts or content; then
// none may be archived already by a finished commit (stale-live-records, at the first).
func (ovMessages) NewSequence(path string) format.Sequence {
	s := &ovSeq{seed: maphash.MakeSeed(), seen: map[uint64]struct{}{}, first: -1}
	if path != "" {
		s.archived = ovArchivedIDs(filepath.Dir(path))
	}
	return s
}

// ovSeq is a pass over a session's messages. Ids are remembered as 64-bit hashes.
type ovSeq struct {
	seed     maphash.Seed
	seen     map[uint64]struct{}
	archived map[string]bool
	at       int64 // where the record being read starts
	stale    int   // records archived already
	first    int64 // where the first of them starts
	arena    jsonv.Arena
}

func (s *ovSeq) RecordAt(off int64) { s.at = off }

func (s *ovSeq) Record(rec []byte) string {
	if jsonv.Valid(rec, ovDialect) != nil {
		return "not a valid record"
	}
	return s.RecordValid(rec)
}

// ovFields: what the checklist reads of a message (a part's or a content's bytes are never
// built).
var ovFields = &jsonv.Fields{Members: map[string]*jsonv.Fields{
	"id": nil, "role": nil, "parts": {Opaque: true}, "content": {Opaque: true},
}}

// ovIDField: a message built to its id alone (an archive's).
var ovIDField = &jsonv.Fields{Members: map[string]*jsonv.Fields{"id": nil}}

// RecordValid checks a message that passed jsonv.Valid, built in the pass's arena to the
// members read.
func (s *ovSeq) RecordValid(rec []byte) string {
	v := s.arena.ParseFieldsValid(rec, ovDialect, ovFields)
	id := v.Get("id")
	if !isStr(id) {
		return "message has no string id"
	}
	if r := v.Get("role"); !isStr(r) || (r.Str != "user" && r.Str != "assistant") {
		return "role is not user or assistant"
	}
	if !isArr(v.Get("parts")) && v.Get("content") == nil {
		return "message has neither parts nor content"
	}
	k := maphash.String(s.seed, id.Str)
	if _, dup := s.seen[k]; dup {
		return "duplicate message id " + id.Str
	}
	s.seen[k] = struct{}{}
	if s.archived[id.Str] {
		if s.stale++; s.first < 0 {
			s.first = s.at
		}
	}
	return ""
}

func (s *ovSeq) EndVerdict() (format.Verdict, bool) {
	if s.stale == 0 {
		return format.Verdict{}, false
	}
	return format.Damage(format.KindStaleLiveRecords, s.first, "%d live messages are already archived in a finished commit", s.stale), true
}

func (s *ovSeq) End() string { return "" }

// ovLive counts the live lines of a session's messages.jsonl and whether any is archived;
// ok is false when the file is missing or not valid.
func ovLive(sid string) (live int, overlap bool, ok bool) {
	// Read line by line, never held: a session's live messages may be many.
	f, id, err := fsio.OpenRegular(filepath.Join(sid, "messages.jsonl"))
	if err != nil {
		return 0, false, false
	}
	defer f.Close()
	archived := ovArchivedIDs(sid)
	bad := errors.New("not a whole record")
	err = format.EachLineLong(ovMessages{}, f, id.Size, func(_, _ int64, line []byte, terminated, _ bool) error {
		if line != nil && len(bytes.TrimSpace(line)) == 0 {
			return nil
		}
		if !terminated || !format.ValidRecord(ovMessages{}, line) {
			return bad
		}
		live++
		if len(archived) > 0 {
			if v, err := jsonv.ParseDepth(bytes.TrimRight(line, "\r"), ovDialect, 1); err == nil {
				if id := v.Get("id"); isStr(id) && archived[id.Str] {
					overlap = true
				}
			}
		}
		return nil
	})
	if err != nil || !fsio.StillSame(f, id) {
		return 0, false, false
	}
	return live, overlap, true
}

func checkOVMeta(f format.File, root *jsonv.Value) format.Verdict {
	if root.Type != jsonv.Object {
		return format.Damage(format.KindNotObject, int64(root.Start), "top-level value is not an object")
	}
	n := root.Get("message_count")
	if n == nil || n.Type != jsonv.Number || !n.IsInt {
		return format.Damage(format.KindSchema, int64(root.Start), "message_count is not an integer")
	}
	v := format.OK()
	live, overlap, ok := ovLive(filepath.Dir(f.Path))
	if ok && !overlap && int64(live) > n.Int {
		return format.Damage(format.KindMetadataLag, int64(n.Start), "message_count %d lags %d live messages", n.Int, live)
	}
	if ok && int64(live) < n.Int {
		v.Warnings = append(v.Warnings, "message_count exceeds the live messages")
	}
	return v
}

// ovSetCount changes only the number after "message_count" in .meta.json's own bytes.
func ovSetCount(meta []byte, count int) ([]byte, bool) {
	root, err := jsonv.Parse(meta, ovDialect)
	if err != nil || !isObj(root) {
		return nil, false
	}
	n := root.Get("message_count")
	if n == nil || n.Type != jsonv.Number {
		return nil, false
	}
	num := strconv.Itoa(count)
	if bytes.Equal(n.Raw(meta), []byte(num)) {
		return nil, false
	}
	out := append([]byte{}, meta[:n.Start]...)
	out = append(out, num...)
	return append(out, meta[n.End:]...), true
}
