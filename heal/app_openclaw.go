package heal

import (
	"bytes"
	"math"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"

	"github.com/sessionmedic/sessionmedic/heal/fsio"
	"github.com/sessionmedic/sessionmedic/heal/jsonv"
)

var (
	openclawSessionIDRe = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._:@-]*$`)
	openclawBakRe       = regexp.MustCompile(`^sessions\.json\.bak\.(\d+)$`)
	openclawTempRe      = regexp.MustCompile(`(?i)^sessions\.json\.(?:\d+\.)?[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}\.tmp$`)
)

// openclawSQLiteEra returns why a file of a SQLite-era install must be left alone, or "".
func openclawSQLiteEra(path string) string {
	sessions := filepath.Dir(path)
	if filepath.Base(sessions) != "sessions" || filepath.Base(filepath.Dir(filepath.Dir(sessions))) != "agents" {
		// Not <state>/agents/<id>/sessions as written: a symlinked rule root; the layout is
		// where it points.
		sessions = resolved(sessions)
	}
	agentDir := filepath.Dir(sessions) // <state>/agents/<id>
	if _, err := os.Lstat(filepath.Join(agentDir, "agent", "openclaw-agent.sqlite")); err == nil {
		return "openclaw SQLite era: legacy file left for `openclaw doctor --fix` to import"
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

func checkOpenClawStore(c *fileCtx, data []byte, root *jsonv.Value) Verdict {
	if root.Type != jsonv.Object {
		return damaged(KindNotObject, int64(root.Start), "store is not an object")
	}
	for _, m := range root.Keys {
		if p := openclawEntryProblem(m.Val); p != "" {
			return damaged(KindSchema, int64(m.KeyStart), "%s: %s", m.Key, p)
		}
	}
	v := healthy()
	if filepath.Base(c.path) != "sessions.json" {
		return v
	}
	if len(root.Keys) == 0 {
		if bak := openclawWipeEvidence(c.path); bak != "" {
			return damaged(KindWipedPlaceholder, 0, "empty store, but %s holds entries whose transcripts are live and unreferenced", filepath.Base(bak))
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
		data, _, err := fsio.ReadStable(cand, 256<<20)
		if err != nil || jsonv.Valid(data, jsonv.Dialect{}) != nil {
			continue
		}
		v, err := jsonv.Parse(data, jsonv.Dialect{})
		if err != nil || !isObj(v) || len(v.Keys) == 0 {
			continue
		}
		live := 0
		for _, m := range v.Keys {
			if openclawEntryProblem(m.Val) != "" {
				live = -1
				break
			}
			if fi, err := os.Lstat(openclawTranscriptFor(dir, m.Val)); err == nil && fi.Mode().IsRegular() {
				live++
			}
		}
		if live > 0 {
			return cand
		}
		return ""
	}
	return ""
}

// openclawBackups lists the store's backup candidates, newest first: rotation backups by
// their epoch-ms suffix and complete temp files by mtime.
func openclawBackups(dir string) []string {
	ents, err := os.ReadDir(dir)
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

func checkOpenClawTranscript(c *fileCtx, lines []jsonlLine) Verdict {
	first := true
	for i, l := range lines {
		if l.Blank {
			continue
		}
		if first {
			first = false
			if t := l.Val.Get("type"); !isStr(t) || t.Str != "session" || !isStr(l.Val.Get("id")) {
				return damaged(KindSchema, int64(l.Start), "line 1 is not a session header")
			}
			continue
		}
		if !isStr(l.Val.Get("type")) {
			return damaged(KindSchema, int64(l.Start), "line %d: entry has no string type", i+1)
		}
	}
	if first {
		return damaged(KindEmpty, 0, "transcript has no header")
	}
	return healthy()
}

// openclawDropInvalid removes the entries that fail the per-entry checklist, keeping every
// other member's bytes as they are (the opt-in drop-invalid-entries extension).
func openclawDropInvalid(data []byte) []byte {
	root, err := jsonv.Parse(data, jsonv.Dialect{})
	if err != nil || !isObj(root) {
		return nil
	}
	var kept [][]byte
	for _, m := range root.Keys {
		if openclawEntryProblem(m.Val) == "" {
			kept = append(kept, data[m.KeyStart:m.Val.End])
		}
	}
	if len(kept) == len(root.Keys) {
		return nil
	}
	out := []byte("{}")
	if len(kept) > 0 {
		out = append([]byte("{\n  "), bytes.Join(kept, []byte(",\n  "))...)
		out = append(out, "\n}"...)
	}
	return append(out, data[root.End:]...) // the original's trailing newline, if any
}

// transcriptLineProblem applies the OpenClaw transcript checklist to one record.
func transcriptLineProblem(body []byte, first bool) string {
	v, err := jsonv.Parse(body, jsonv.Dialect{})
	if err != nil {
		return err.Error()
	}
	if first {
		if strOf(v.Get("type")) != "session" || !isStr(v.Get("id")) {
			return "line 1 is not a session header"
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
	v, err := jsonv.Parse(rec, jsonv.Dialect{})
	return err == nil && isStr(v.Get("type")) && strOf(v.Get("type")) != "session"
}
