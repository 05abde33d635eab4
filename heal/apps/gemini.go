package apps

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"path/filepath"
	"regexp"
	"time"

	"github.com/sessionmedic/sessionmedic/heal/format"
	"github.com/sessionmedic/sessionmedic/heal/fsio"
	"github.com/sessionmedic/sessionmedic/heal/jsonv"
	"github.com/sessionmedic/sessionmedic/heal/lock"
	"github.com/sessionmedic/sessionmedic/internal/resolve"
	"github.com/sessionmedic/sessionmedic/policy"
)

// Gemini CLI (gemini-cli.md): one append-only chat log per session under
// tmp/<slug>/chats/ (session-<ts>-<id8>.jsonl; a subagent's chats/<parent>/<id>.jsonl): a
// metadata line, then messages and $set / $rewindTo patches. No lock: a project is live while
// a Gemini process works in its root. The app's start-up sweep deletes a session it cannot
// list, so a session seen healthy that disappears is restored from its last-good copy.

var (
	geminiMainRe = regexp.MustCompile(`^session-\d{4}-\d{2}-\d{2}T\d{2}-\d{2}-([A-Za-z0-9_-]{8})\.jsonl$`)
	geminiIDRe   = regexp.MustCompile(`[^A-Za-z0-9_-]`)
	geminiDirRe  = regexp.MustCompile(`^[A-Za-z0-9_-]+$`)
)

const (
	geminiMaxAge   = 30 * 24 * time.Hour // sessionRetention.maxAge's default
	maxProjectRoot = 4096                // a .project_root longer than PATH_MAX is not one
	maxStubSibling = 1 << 20             // a sibling larger than this is no startup-only stub
)

func addGeminiCLI(r *format.Registry) {
	r.Add("gemini-cli", func(string) format.Profile { return geminiLog{} }, geminiLog{})
	r.AddLock(string(policy.LockGeminiCLI), lockGeminiCLI)
}

type geminiLog struct{ format.Log }

// OwnKinds: the damage kinds its checklist reports (see format.Kinds).
func (geminiLog) OwnKinds() []string {
	return []string{format.KindEmpty}
}

func (geminiLog) Name() string           { return "gemini-cli" }
func (geminiLog) Dialect() jsonv.Dialect { return nodeDialect } // Node's utf8 decoding, then JSON.parse
func (geminiLog) EmptyIsDamage() bool    { return true }
func (geminiLog) AppendOnly() bool       { return true }
func (p geminiLog) CheckLines(f format.File, lines []format.Line) format.Verdict {
	return format.CheckRecords(p, f, lines) // record by record: the same pass as a streamed file's
}

// RecordProblem: line 1 is the metadata record; every other record a message, a $set object
// or a $rewindTo string (whose target only a full pass can look up).
func (geminiLog) RecordProblem(rec []byte, first bool) string {
	v, err := jsonv.ParseFields(rec, nodeDialect, geminiProblemFields)
	if err != nil {
		return err.Error()
	}
	if first {
		return geminiMetaProblem(v)
	}
	return geminiRecordProblem(v)
}

// geminiProblemFields: what RecordProblem and AppendedOK read of a record (geminiMetaProblem,
// geminiRecordProblem): top-level members, and of $set its type alone.
var geminiProblemFields = &jsonv.Fields{Members: map[string]*jsonv.Fields{
	"sessionId": nil, "projectHash": nil, "startTime": nil, "lastUpdated": nil, "kind": nil,
	"$rewindTo": nil, "$set": {Opaque: true}, "id": nil,
}}

func (geminiLog) NoRecords() format.Verdict {
	return format.Damage(format.KindEmpty, 0, "chat log has no metadata record")
}

// AppendedOK: a message or a $set; a $rewindTo needs its target looked up by a full pass.
func (geminiLog) AppendedOK(rec []byte) bool {
	v, err := jsonv.ParseFields(rec, nodeDialect, geminiProblemFields)
	return err == nil && v.Get("$rewindTo") == nil && geminiRecordProblem(v) == ""
}

// RecordStarts are how JSON.stringify begins each of the app's records.
func (geminiLog) RecordStarts() [][]byte {
	return [][]byte{[]byte(`{"id":"`), []byte(`{"$set":`), []byte(`{"$rewindTo":`), []byte(`{"sessionId":"`)}
}

// Whole: a message, a $set, a $rewindTo or a metadata record.
func (geminiLog) Whole(v *jsonv.Value) bool {
	return (isStr(v.Get("id")) && isStr(v.Get("type"))) || isObj(v.Get("$set")) ||
		isStr(v.Get("$rewindTo")) || (isStr(v.Get("sessionId")) && isStr(v.Get("projectHash")))
}

// Restore: the last-good copy r holds (size bytes) is a resumable session the app would
// still keep by age. It is read streaming (format.SplitAtLong): a line longer than the line
// window is read as its record's skeleton, whose strings over SkeletonString are cut (a
// message's text, never an id or a time).
func (geminiLog) Restore(lastGood io.ReaderAt, size int64, now time.Time) bool {
	var r geminiReplay
	var newest time.Time
	err := format.SplitAtLong(geminiLog{}, lastGood, size, nil, func(l format.Line) error {
		if l.Val == nil {
			return nil
		}
		for _, lu := range []*jsonv.Value{l.Val.Get("lastUpdated"), l.Val.Get("$set").Get("lastUpdated")} {
			if t, err := time.Parse(time.RFC3339Nano, strOf(lu)); err == nil && t.After(newest) {
				newest = t
			}
		}
		r.apply(l.Val, nil) // the metadata record is none of the app's patches: a no-op
		return nil
	})
	if err != nil {
		return false
	}
	return r.resumable() && !newest.IsZero() && !newest.Before(now.Add(-geminiMaxAge))
}

// RebuildHeader rebuilds a torn or missing metadata line of a main session from the values the
// tree holds: the session id from a $set.sessionId record (or the chats/<id>/ directory of
// its subagents) matching the file name's <id8>, the hash of .project_root, and the earliest
// timestamp for both times. Nil unless every value is found, and found once.
func (geminiLog) RebuildHeader(path string, r io.ReaderAt, size int64) (*format.Splice, error) {
	m := geminiMainRe.FindStringSubmatch(filepath.Base(path))
	chats, sub, ok := geminiChats(path)
	if m == nil || !ok || sub {
		return nil, nil
	}
	var at, end int64 = -1, -1 // line 1's start, and where the bytes kept after the header start
	ids := map[string][]byte{}
	var earliest time.Time
	var ts []byte
	see := func(l *format.Line, v *jsonv.Value) error {
		if !isStr(v) {
			return nil
		}
		s, err := l.StrOf(r, v)
		if err != nil {
			return err
		}
		if t, err := time.Parse(time.RFC3339Nano, s); err == nil && (ts == nil || t.Before(earliest)) {
			raw, err := l.RawOf(r, v)
			if err != nil {
				return err
			}
			earliest, ts = t, raw
		}
		return nil
	}
	err := format.SplitAtLong(geminiLog{}, r, size, nil, func(l format.Line) error {
		if l.Blank {
			return nil
		}
		if at < 0 {
			if l.Val != nil && geminiMetaProblem(l.Val) == "" {
				return format.Stop // line 1 is there
			}
			at, end = int64(l.Start), int64(l.Start)
			if l.Val == nil || geminiRecordProblem(l.Val) != "" {
				end = int64(l.End) // a torn line 1 is replaced, a record's line kept after it
			}
		}
		if l.Val == nil {
			return nil
		}
		set := l.Val.Get("$set")
		if id := set.Get("sessionId"); isStr(id) {
			s, err := l.StrOf(r, id)
			if err != nil {
				return err
			}
			if geminiID8(s) == m[1] {
				raw, err := l.RawOf(r, id)
				if err != nil {
					return err
				}
				if ids[s] = raw; len(ids) > 1 {
					return format.Stop // two sessions' ids: none is rebuilt
				}
			}
		}
		if err := see(&l, l.Val.Get("timestamp")); err != nil {
			return err
		}
		for _, it := range arrOf(set.Get("messages")) {
			if err := see(&l, it.Get("timestamp")); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil || at < 0 || len(ids) > 1 {
		return nil, err // nothing to rebuild from, line 1 is there, or two ids
	}
	if ents, err := resolve.ReadDir(chats); err == nil {
		for _, e := range ents {
			if n := e.Name(); e.IsDir() && geminiDirRe.MatchString(n) && geminiID8(n) == m[1] {
				ids[n] = []byte(`"` + n + `"`)
			}
		}
	}
	hash, ok := geminiProjectHash(filepath.Dir(chats))
	if len(ids) != 1 || !ok || ts == nil {
		return nil, nil
	}
	var h []byte
	for _, raw := range ids {
		h = append(append([]byte(`{"sessionId":`), raw...), `,"projectHash":"`+hash+`","startTime":`...)
	}
	h = append(append(append(append(h, ts...), `,"lastUpdated":`...), ts...), `,"kind":"main"}`+"\n"...)
	return headerSpot{at: at, from: end}.splice(size, h), nil
}

// lockGeminiCLI: no lock; wait while a Gemini process works in the file's project.
func lockGeminiCLI(ctx context.Context, path string, _ format.Profile, lp format.LockParams) (format.Lock, error) {
	if chats, _, ok := geminiChats(path); ok {
		if root, ok := geminiProjectRoot(filepath.Dir(chats)); ok {
			if err := lock.Gemini(ctx, root, lockOptions(lp)); err != nil {
				return nil, err
			}
		}
	}
	return format.Unlocked{}, nil // no project root: no way to tell, and nothing to wait for
}

// geminiChats is the chats directory a chat file is in, and whether it is a subagent's
// (chats/<parent>/<id>.jsonl); ok is false outside the app's layout. It is read where
// every symlink on the way points: a symlinked rule root (even one named chats) stands for
// the directory it points to, whose parent holds .project_root.
func geminiChats(path string) (chats string, sub, ok bool) {
	dir := fsio.Resolved(filepath.Dir(path))
	switch {
	case filepath.Base(dir) == "chats":
		return dir, false, true
	case filepath.Base(filepath.Dir(dir)) == "chats":
		return filepath.Dir(dir), true, true
	}
	return "", false, false
}

// geminiProjectRoot is the content of <project>/.project_root (bounded); ok is false when
// it cannot be read.
func geminiProjectRoot(project string) (string, bool) {
	f, _, err := fsio.OpenRegular(filepath.Join(project, ".project_root"))
	if err != nil {
		return "", false
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, maxProjectRoot+1))
	if err != nil || len(b) == 0 || len(b) > maxProjectRoot {
		return "", false
	}
	return string(b), true
}

// geminiProjectHash is the projectHash of the sessions of a project: SHA-256 of its root.
func geminiProjectHash(project string) (string, bool) {
	root, ok := geminiProjectRoot(project)
	sum := sha256.Sum256([]byte(root))
	return hex.EncodeToString(sum[:]), ok
}

// geminiID8 is the <id8> of a session id: the first 8 characters of its sanitised form.
func geminiID8(id string) string {
	s := geminiIDRe.ReplaceAllString(id, "_")
	return s[:min(8, len(s))]
}

// geminiMetaProblem checks the metadata record's members (the path apart).
func geminiMetaProblem(v *jsonv.Value) string {
	for _, k := range []string{"sessionId", "projectHash", "startTime", "lastUpdated"} {
		if !isStr(v.Get(k)) {
			return "line 1 is not the metadata record: no string " + k
		}
	}
	for _, k := range []string{"startTime", "lastUpdated"} {
		if _, err := time.Parse(time.RFC3339Nano, v.Get(k).Str); err != nil {
			return "metadata " + k + " is not an ISO time"
		}
	}
	if k := strOf(v.Get("kind")); k != "main" && k != "subagent" {
		return `metadata kind is neither "main" nor "subagent"`
	}
	return ""
}

// geminiRecordProblem checks a record after line 1. The loader (loadConversationRecord)
// takes each parsed line as a $rewindTo (string), a message (string id), a $set (object) or
// a metadata record (string sessionId and projectHash, merged: a resume appends one); it
// ignores any other, so that is no problem here (the sequence warns of it).
func geminiRecordProblem(v *jsonv.Value) string { return geminiKindProblem(v, geminiKindOf(v)) }

// geminiKindProblem is geminiRecordProblem of v, taken by the loader for kind.
func geminiKindProblem(v *jsonv.Value, kind geminiKind) string {
	if kind != geminiIgnoredRecord {
		return ""
	}
	set, rw := v.Get("$set"), v.Get("$rewindTo")
	switch {
	case set != nil:
		return "$set is not an object"
	case rw != nil:
		return "$rewindTo is not a string"
	}
	return ""
}

// geminiPartialMeta: a metadata record, as the loader tells one after line 1.
func geminiPartialMeta(v *jsonv.Value) bool {
	return isStr(v.Get("sessionId")) && isStr(v.Get("projectHash"))
}

// geminiKind is what the loader takes a record after line 1 for, tried in its order.
type geminiKind int

const (
	geminiRewind geminiKind = iota
	geminiMessage
	geminiSet
	geminiMetaRecord
	geminiIgnoredRecord
)

func geminiKindOf(v *jsonv.Value) geminiKind {
	switch {
	case isStr(v.Get("$rewindTo")):
		return geminiRewind
	case isStr(v.Get("id")):
		return geminiMessage
	case isObj(v.Get("$set")):
		return geminiSet
	case geminiPartialMeta(v):
		return geminiMetaRecord
	}
	return geminiIgnoredRecord
}

// geminiIgnoredWarning is the warning of n records the loader ignores.
func geminiIgnoredWarning(n int) []string {
	if n == 0 {
		return nil
	}
	return []string{fmt.Sprintf("Gemini ignores %d record(s) of this chat: neither a message, a $set, a $rewindTo nor metadata", n)}
}

// geminiStubWarnings: another session-*-<id8>.jsonl beside a session (#27368) makes the
// sweep delete both when either has no resumable content.
func geminiStubWarnings(chats, base, id8 string, own bool) []string {
	ents, err := resolve.ReadDir(chats)
	if err != nil {
		return nil
	}
	var out []string
	for _, e := range ents {
		n := e.Name()
		if nm := geminiMainRe.FindStringSubmatch(n); nm == nil || nm[1] != id8 || n == base || !e.Type().IsRegular() {
			continue
		}
		switch {
		case !own:
			out = append(out, "shares its <id8> with "+n+": the start-up sweep deletes both files (gemini-cli #27368)")
		case !geminiResumableFile(filepath.Join(chats, n)):
			out = append(out, n+" beside it has the same <id8> and no resumable message: the start-up sweep deletes both files (gemini-cli #27368)")
		}
	}
	return out
}

// geminiResumableFile: a sibling chat file holds a resumable message (one too large to read
// is taken to).
func geminiResumableFile(p string) bool {
	f, _, err := fsio.OpenRegular(p)
	if err != nil {
		return true // gone or not a file: nothing the sweep would take with it
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, maxStubSibling+1))
	if err != nil || len(b) > maxStubSibling {
		return true
	}
	var r geminiReplay
	for _, l := range format.Split(b, geminiLog{}) {
		if l.Val != nil {
			r.apply(l.Val, nil)
		}
	}
	return r.resumable()
}

// arrOf is an array's items (none for anything else).
func arrOf(v *jsonv.Value) []*jsonv.Value {
	if isArr(v) {
		return v.Items
	}
	return nil
}
