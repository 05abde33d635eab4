package apps

import (
	"bytes"
	"context"
	"fmt"
	"hash/maphash"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"

	"github.com/sessionmedic/sessionmedic/heal/format"
	"github.com/sessionmedic/sessionmedic/heal/fsio"
	"github.com/sessionmedic/sessionmedic/heal/jsonv"
	"github.com/sessionmedic/sessionmedic/heal/lock"
	"github.com/sessionmedic/sessionmedic/policy"
)

// pi coding agent 0.73.1 (pi.md): one append-only JSONL file per session,
// <agent>/sessions/--<cwd>--/<ts>_<uuid>.jsonl: a session header on line 1, then entries
// forming a tree through id/parentId. The loader reads the file as UTF-8 (lossily), skips every
// line JSON.parse rejects, and overwrites the file with a new session (a new id) when its first
// parsed line is no header; a skipped entry cuts the walk from the last entry back to the root,
// and everything before it is gone from the context. No lock: a session is live while a pi
// process has it open, names it, or works in its cwd (heal/lock).

var piFileRe = regexp.MustCompile(`^(\d{4}-\d{2}-\d{2}T\d{2})-(\d{2})-(\d{2})-(\d{3}Z)_([0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12})\.jsonl$`)

const (
	piLine1Max = 64 << 10 // a header line longer than this is read no further
	piMaxSegs  = 64       // a directory name of more '-'-separated parts is not decoded
	piMaxStats = 4096     // directories looked at while decoding one name
)

func addPi(r *format.Registry) {
	r.Add("pi", func(string) format.Profile { return piLog{} }, piLog{})
	r.AddLock(string(policy.LockPi), lockPi)
}

// piLog is a pi session.
type piLog struct{ format.Log }

// OwnKinds: the damage kinds its checklist reports (see format.Kinds).
func (piLog) OwnKinds() []string {
	return []string{format.KindEmpty}
}

func (piLog) Name() string           { return "pi" }
func (piLog) Dialect() jsonv.Dialect { return nodeDialect } // readFileSync(…, "utf8"), then JSON.parse
func (piLog) EmptyIsDamage() bool    { return true }
func (piLog) AppendOnly() bool       { return true }
func (p piLog) CheckLines(f format.File, lines []format.Line) format.Verdict {
	return format.CheckRecords(p, f, lines) // record by record: the same pass as a streamed file's
}

// RecordProblem: line 1 is the session header; every other record an entry with a string
// type. Whether its id and parentId are as the header's version needs, and its parent is
// there, only a pass over the whole file tells (the Sequence).
func (piLog) RecordProblem(rec []byte, first bool) string {
	v, err := jsonv.ParseDepth(rec, nodeDialect, 1)
	if err != nil {
		return err.Error()
	}
	if first {
		return piHeaderProblem(v)
	}
	return piEntryTypeProblem(v)
}

func (piLog) NoRecords() format.Verdict {
	return format.Damage(format.KindEmpty, 0, "session has no header: pi overwrites the file with a new session")
}

// AppendedOK: an entry as pi appends one (string type, string id, a string or null
// parentId). That its parent is an earlier entry is not checked here: pi appends each entry
// under its current leaf, so an append breaks the tree only through a torn line, which the
// syntax check catches; the periodic full pass checks the rest.
func (piLog) AppendedOK(rec []byte) bool {
	v, err := jsonv.ParseDepth(rec, nodeDialect, piDepth)
	return err == nil && piEntryTypeProblem(v) == "" && piEntryProblem(v) == ""
}

// NewSequence: the checks that span records, record by record.
func (piLog) NewSequence(path string) format.Sequence { return newPiSeq(path) }

// RecordStarts: JSON.stringify writes every record's type first.
func (piLog) RecordStarts() [][]byte { return [][]byte{[]byte(`{"type":"`)} }

// Whole: a header, or an entry (string type and id, and a parentId that is a string or
// null): never a value that was nested in a torn record (a content block has no parentId).
func (piLog) Whole(v *jsonv.Value) bool {
	if strOf(v.Get("type")) == "session" {
		return piHeaderProblem(v) == ""
	}
	return piEntryTypeProblem(v) == "" && piEntryProblem(v) == ""
}

// RejoinsSplitRecords: a record split by raw newlines is joined back when the join is one
// whole record (pi.md: byte-identical, 8/8).
func (piLog) RejoinsSplitRecords() bool { return true }

// RecordKey: an entry is keyed by its id (pi indexes entries by id, the last one winning),
// the session header apart.
func (piLog) RecordKey(rec *jsonv.Value) string { return idKey(rec) }

// RebuildHeader rebuilds a torn or missing header line of a file named <ts>_<uuid>.jsonl, as
// pi writes it: version 3, the id from the name, the timestamp from the name's <ts> (its '-'
// put back to ':' and '.'), and the cwd of the torn line when its prefix holds the whole
// value, else the one directory the name of the file's directory decodes to. Every other
// byte of data is kept. A last-good copy's header is the last-good strategy's to use. nil when
// line 1 is a header, no entry follows it, the torn line names another id, or no single cwd
// is found.
func (piLog) RebuildHeader(path string, r io.ReaderAt, size int64) (*format.Splice, error) {
	m := piFileRe.FindStringSubmatch(filepath.Base(path))
	if m == nil {
		return nil, nil
	}
	id := m[5]
	h, ok, err := findHeaderSpot(piLog{}, path, r, size, func(v *jsonv.Value) bool { return strOf(v.Get("type")) == "session" }, piLine1Max)
	if !ok {
		return nil, err
	}
	entry := false
	if err := h.after(piLog{}, r, size, nil, func(l format.Line) error {
		if entry = l.Val != nil; entry {
			return format.Stop
		}
		return nil
	}); err != nil || !entry {
		return nil, err
	}
	members := piTornMembers(h.torn)
	if tid := members["id"]; tid != nil && string(tid) != `"`+id+`"` {
		return nil, nil // the torn header is another session's
	}
	cwd := members["cwd"]
	if string(members["type"]) != `"session"` || cwd == nil {
		cwd = piCwdFromDir(path)
	}
	if cwd == nil {
		return nil, nil
	}
	ts := m[1] + ":" + m[2] + ":" + m[3] + "." + m[4]
	head := append([]byte(`{"type":"session","version":3,"id":"`+id+`","timestamp":"`+ts+`","cwd":`), cwd...)
	return h.splice(size, head, []byte("}\n")), nil
}

// piTornMembers are the complete string members of a torn header line. A string is whole
// once its closing quote is there, so the last member before the tear counts too (the
// line is read with a '}' put after it); a member of another type is not taken.
func piTornMembers(torn []byte) map[string][]byte {
	out := map[string][]byte{}
	if len(torn) == 0 {
		return out
	}
	closed := append(bytes.TrimRight(bytes.Clone(torn), " \t\r"), '}')
	for k, v := range jsonv.PrefixMembers(closed, nodeDialect) {
		if v[0] == '"' {
			out[k] = v
		}
	}
	return out
}

// piCwdFromDir decodes the name of a session file's directory, --<cwd>-- (pi wrote the cwd
// without its leading '/', each '/' as '-'), into the cwd as a JSON string: only when exactly
// one existing directory is a decoding of it (each '-' may have been '/' or '-'). The name
// is read as written, else where the directory resolves to (a symlinked rule root). Run as
// root over another user's session, only a directory that user owns counts: the name is the
// user's to choose, and the rebuilt header must not tell them of a directory they cannot see.
func piCwdFromDir(path string) []byte {
	dir := filepath.Dir(path)
	name := filepath.Base(dir)
	if !piDirName(name) {
		name = filepath.Base(fsio.Resolved(dir))
	}
	if !piDirName(name) {
		return nil
	}
	inner := name[2 : len(name)-2]
	if inner == "" {
		return []byte(`"/"`)
	}
	segs := strings.Split(inner, "-")
	if len(segs) > piMaxSegs {
		return nil
	}
	d := piDecoder{segs: segs, budget: piMaxStats, owner: -1}
	if os.Geteuid() == 0 {
		fi, err := os.Lstat(dir) // whoever made the directory chose its name
		if err != nil {
			return nil
		}
		if st, ok := fi.Sys().(*syscall.Stat_t); ok && st.Uid != 0 {
			d.owner = int64(st.Uid)
		}
	}
	d.walk("/", 0)
	if len(d.found) != 1 || d.budget < 0 {
		return nil
	}
	b, err := jsonString(d.found[0])
	if err != nil {
		return nil
	}
	return b
}

func piDirName(name string) bool {
	return len(name) >= 4 && strings.HasPrefix(name, "--") && strings.HasSuffix(name, "--")
}

// piDecoder finds the existing directories a session directory's name decodes to, stopping
// at two (more tell nothing more) or when its budget of looks runs out.
type piDecoder struct {
	segs   []string
	found  []string
	budget int
	owner  int64 // >= 0: a directory found counts only if this uid owns it
}

// walk extends dir, which decodes segs[:i], by each next component segs[i:j] joined with '-'.
func (d *piDecoder) walk(dir string, i int) {
	for j := i + 1; j <= len(d.segs) && len(d.found) < 2 && d.budget >= 0; j++ {
		comp := strings.Join(d.segs[i:j], "-")
		if comp == "" || comp == "." || comp == ".." {
			continue
		}
		p := filepath.Join(dir, comp)
		d.budget--
		fi, err := os.Stat(p)
		if err != nil || !fi.IsDir() {
			continue
		}
		if j == len(d.segs) {
			if st, ok := fi.Sys().(*syscall.Stat_t); d.owner < 0 || (ok && int64(st.Uid) == d.owner) {
				d.found = append(d.found, p)
			}
			continue
		}
		d.walk(p, j)
	}
}

// jsonString is s as JSON.stringify writes it: '"' and '\\' escaped, the control characters
// as \b \f \n \r \t or \u00XX, everything else as it is.
func jsonString(s string) ([]byte, error) {
	var b strings.Builder
	b.WriteByte('"')
	for _, r := range s {
		switch r {
		case '"', '\\':
			b.WriteByte('\\')
			b.WriteRune(r)
		case '\b':
			b.WriteString(`\b`)
		case '\f':
			b.WriteString(`\f`)
		case '\n':
			b.WriteString(`\n`)
		case '\r':
			b.WriteString(`\r`)
		case '\t':
			b.WriteString(`\t`)
		default:
			if r < 0x20 {
				fmt.Fprintf(&b, `\u%04x`, r)
			} else {
				b.WriteRune(r)
			}
		}
	}
	b.WriteByte('"')
	out := []byte(b.String())
	if jsonv.Valid(out, nodeDialect) != nil {
		return nil, fmt.Errorf("not a JSON string: %q", s)
	}
	return out, nil
}

// lockPi waits until no pi process has the session (lock.Pi): its id is the file name's, its
// cwd the header's.
func lockPi(ctx context.Context, path string, _ format.Profile, lp format.LockParams) (format.Lock, error) {
	s := lock.AppSession{Path: path}
	if m := piFileRe.FindStringSubmatch(filepath.Base(path)); m != nil {
		s.ID = m[5]
	}
	if l, _ := fsio.FirstLine(path, piLine1Max); l != nil {
		if v, err := jsonv.ParseDepth(l, nodeDialect, 1); err == nil && strOf(v.Get("type")) == "session" {
			s.Cwd = strOf(v.Get("cwd"))
			if s.ID == "" {
				s.ID = strOf(v.Get("id"))
			}
		} else if c := jsonv.PrefixMembers(l, nodeDialect)["cwd"]; len(c) > 0 && c[0] == '"' {
			if v, err := jsonv.Parse(c, nodeDialect); err == nil {
				s.Cwd = v.Str // a torn header's cwd still says where pi works
			}
		}
	}
	if err := lock.Pi(ctx, s, lockOptions(lp)); err != nil {
		return nil, err
	}
	return format.Unlocked{}, nil
}

// piHeaderProblem applies pi.md "What valid means" 2 to line 1 (the file name apart).
func piHeaderProblem(v *jsonv.Value) string {
	if strOf(v.Get("type")) != "session" || !isStr(v.Get("id")) {
		return "line 1 is not a session header: pi overwrites the file with a new session"
	}
	if _, ok := piVersion(v); !ok {
		return "session header version is not 1, 2 or 3"
	}
	if !isStr(v.Get("timestamp")) {
		return "session header has no string timestamp"
	}
	return ""
}

// piVersion is a header's version: 1, 2 or 3.
func piVersion(v *jsonv.Value) (int64, bool) {
	ver := v.Get("version")
	if ver == nil || ver.Type != jsonv.Number || !ver.IsInt || ver.Int < 1 || ver.Int > 3 {
		return 0, false
	}
	return ver.Int, true
}

// piEntryTypeProblem: what every entry after line 1 needs, whatever the version.
func piEntryTypeProblem(v *jsonv.Value) string {
	t := v.Get("type")
	switch {
	case !isStr(t):
		return "entry has no string type"
	}
	return ""
}

// piDepth is how deep an entry is read: its message's content blocks' members.
const piDepth = 4

// piEntryProblem: what an entry of a version 2 or 3 file needs (a version 1 file's entries
// have no ids: pi gives them fresh ones when it migrates the file).
func piEntryProblem(v *jsonv.Value) string {
	if !isStr(v.Get("id")) {
		return "entry has no string id"
	}
	if strOf(v.Get("type")) == "message" {
		m := v.Get("message")
		if !isObj(m) {
			// Seen with the oracle (campaign case pi-204): a byte of the key "message"
			// changed, and pi 0.73.1 exits 1 on resume.
			return "a message entry without a message object: pi fails to resume"
		}
		for _, c := range arrOf(m.Get("content")) {
			if strOf(c.Get("type")) == "text" && !isStr(c.Get("text")) {
				// Seen with the oracle (cases pi-503, pi-139): a text block whose key
				// "text" changed fails pi's resume in a user message, and is dropped in a
				// tool result.
				return "a text block without its text: pi fails to resume or drops it"
			}
		}
	}
	if p := v.Get("parentId"); p == nil || (p.Type != jsonv.Null && p.Type != jsonv.String) {
		return "entry parentId is neither a string nor null"
	}
	return ""
}

// piSeq is one pass over a session's records: the header's version, and each entry's id,
// with the parent and a hash of the bytes of its last record (pi keeps the last of an id).
type piSeq struct {
	id      string // the file name's uuid ("" when the name is not pi's)
	n       int
	version int64
	ents    map[string]piEnt
	order   []string // the ids, in the order they first appear
	dups    int      // entries that repeat an id with other bytes
	headers int      // session headers after line 1 (a duplicated line 1): pi ignores them
	seed    maphash.Seed
	arena   jsonv.Arena // each record's tree, dropped once judged
}

type piEnt struct {
	parent string
	root   bool // parentId is null
	hash   uint64
}

func newPiSeq(path string) *piSeq {
	s := &piSeq{ents: map[string]piEnt{}, seed: maphash.MakeSeed()}
	if m := piFileRe.FindStringSubmatch(filepath.Base(path)); m != nil {
		s.id = m[5]
	}
	return s
}

// ChecksRecords: Record applies RecordProblem's checks too (add's first ones), on its one
// build of the record.
func (*piSeq) ChecksRecords() {}

// piFields: what add reads of a record (a message's text is never decoded, no other member
// of an entry built).
var piFields = &jsonv.Fields{Members: map[string]*jsonv.Fields{
	"type": nil, "id": nil, "version": nil, "timestamp": nil, "parentId": nil,
	"message": {Members: map[string]*jsonv.Fields{
		"content": {Opaque: true, Items: &jsonv.Fields{Members: map[string]*jsonv.Fields{
			"type": nil, "text": {Opaque: true},
		}}},
	}},
}}

// RecordValid is Record of a record that passed jsonv.Valid (not checked again), built in
// the pass's arena to the members add reads.
func (s *piSeq) RecordValid(rec []byte) string {
	return s.add(s.arena.ParseFieldsValid(rec, nodeDialect, piFields), rec)
}

// Record is add of a record's bytes.
func (s *piSeq) Record(rec []byte) string {
	if err := jsonv.Valid(rec, nodeDialect); err != nil {
		return err.Error() // as RecordProblem says it
	}
	return s.RecordValid(rec)
}

// add checks the next record (raw, its bytes) and remembers it.
func (s *piSeq) add(v *jsonv.Value, raw []byte) string {
	s.n++
	if s.n == 1 {
		if p := piHeaderProblem(v); p != "" {
			return p
		}
		if id := v.Get("id").Str; s.id != "" && id != s.id {
			return fmt.Sprintf("header id %q is not the file name's %s: pi replaced the session", id, s.id)
		}
		s.version, _ = piVersion(v)
		return ""
	}
	if p := piEntryTypeProblem(v); p != "" {
		return p
	}
	if strOf(v.Get("type")) == "session" {
		// pi indexes no header but the first: a duplicated line 1 resumes whole (campaign
		// case pi-196, with the oracle).
		s.headers++
		return ""
	}
	if s.version < 2 {
		return ""
	}
	if p := piEntryProblem(v); p != "" {
		return p
	}
	e := piEnt{hash: maphash.Bytes(s.seed, raw)}
	switch p := v.Get("parentId"); p.Type {
	case jsonv.Null:
		e.root = true
	default:
		if _, ok := s.ents[p.Str]; !ok {
			return fmt.Sprintf("history gap: parentId %q names no earlier entry (pi drops everything before it)", p.Str)
		}
		e.parent = p.Str
	}
	id := v.Get("id").Str
	if old, ok := s.ents[id]; !ok {
		s.order = append(s.order, id)
	} else if old.hash != e.hash {
		s.dups++
	}
	s.ents[id] = e
	return ""
}

// End: the parents, as pi indexes them (the last entry of an id winning), form no loop. Each
// entry's parent was an earlier one when it was read, so only an id repeated later can close
// one; pi's walk to the root would never end on it.

// Held: each id's entry (its key and its parent's string, pi's ids of under 40 bytes, and a
// map slot's share) and place in order, and the arena (format.HeldSequence). Told without
// a walk of the entries: it is asked at every append.
func (s *piSeq) Held() int {
	return 128 + s.arena.Held() + cap(s.order)*16 + len(s.ents)*144
}

func (s *piSeq) End() string {
	if s.dups == 0 && len(s.ents) == s.n-1-s.headers {
		return ""
	}
	state := map[string]int8{} // 1: on the current walk, 2: reaches a root
	for _, id := range s.order {
		var walk []string
		cur := id
		for state[cur] == 0 {
			state[cur] = 1
			walk = append(walk, cur)
			e := s.ents[cur]
			if e.root {
				break
			}
			cur = e.parent
		}
		if state[cur] == 1 && !s.ents[cur].root {
			return fmt.Sprintf("the parentId chain through %q loops (a repeated id): pi's walk to the root never ends", cur)
		}
		for _, w := range walk {
			state[w] = 2
		}
	}
	return ""
}

// Warnings: what pi drops without a word.
func (s *piSeq) Warnings() []string {
	var out []string
	if s.version == 1 || s.version == 2 {
		out = append(out, fmt.Sprintf("session version %d: pi migrates it on load and rewrites the file in place", s.version))
	}
	if s.headers > 0 {
		out = append(out, fmt.Sprintf("%d session header(s) after line 1: pi ignores them", s.headers))
	}
	if s.dups > 0 {
		out = append(out, fmt.Sprintf("%d entry line(s) repeat an earlier entry's id with other content: pi keeps only the last", s.dups))
	}
	return out
}
