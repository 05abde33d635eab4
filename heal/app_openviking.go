package heal

import (
	"bytes"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"

	"github.com/sessionmedic/sessionmedic/heal/fsio"
	"github.com/sessionmedic/sessionmedic/heal/jsonv"
)

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
	ents, err := os.ReadDir(filepath.Join(sid, "history"))
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
		_, err1 := os.Lstat(filepath.Join(dir, ".done"))
		_, err2 := os.Lstat(filepath.Join(dir, ".failed.json"))
		a.done, a.failed = err1 == nil, err2 == nil
		if data, _, err := fsio.ReadStable(filepath.Join(dir, ".meta.json"), 16<<20); err == nil {
			if v, err := jsonv.Parse(data, ftOVMeta.dialect()); err == nil {
				p := v.Get("phase1")
				if st := p.Get("status"); isStr(st) && st.Str == "ready" {
					a.ready = true
				}
				if r := p.Get("retained_message_ids"); isArr(r) {
					a.retained = len(r.Items)
				}
			}
		}
		if data, _, err := fsio.ReadStable(filepath.Join(dir, "messages.jsonl"), 1<<30); err == nil {
			for _, l := range splitJSONL(data, ftOVMessages) {
				if id := l.Val.Get("id"); l.Val != nil && isStr(id) {
					a.ids[id.Str] = true
				}
			}
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
	v, err := jsonv.Parse(data, ftOVMeta.dialect())
	if err != nil {
		return 0, false
	}
	n := v.Get("message_count")
	if n == nil || n.Type != jsonv.Number || !n.IsInt {
		return 0, false
	}
	return n.Int, true
}

func ovEmptyMessages(c *fileCtx) Verdict {
	sid := filepath.Dir(c.path)
	n, ok := ovMetaCount(sid)
	if !ok || n == 0 {
		return healthy()
	}
	arch := ovArchives(sid)
	for i := len(arch) - 1; i >= 0; i-- {
		if arch[i].ready {
			if arch[i].retained == 0 {
				return healthy()
			}
			break
		}
	}
	return damaged(KindEmpty, 0, "messages.jsonl is empty while .meta.json says message_count %d and no commit explains it", n)
}

func checkOVMessages(c *fileCtx, lines []jsonlLine) Verdict {
	seen := map[string]bool{}
	for i, l := range lines {
		if l.Blank {
			continue
		}
		id := l.Val.Get("id")
		if !isStr(id) {
			return damaged(KindSchema, int64(l.Start), "line %d: message has no string id", i+1)
		}
		if r := l.Val.Get("role"); !isStr(r) || (r.Str != "user" && r.Str != "assistant") {
			return damaged(KindSchema, int64(l.Start), "line %d: role is not user or assistant", i+1)
		}
		if !isArr(l.Val.Get("parts")) && l.Val.Get("content") == nil {
			return damaged(KindSchema, int64(l.Start), "line %d: message has neither parts nor content", i+1)
		}
		if seen[id.Str] {
			return damaged(KindSchema, int64(l.Start), "line %d: duplicate message id %s", i+1, id.Str)
		}
		seen[id.Str] = true
	}
	archived := ovArchivedIDs(filepath.Dir(c.path))
	stale := 0
	first := -1
	for _, l := range lines {
		if l.Val != nil && archived[strOf(l.Val.Get("id"))] {
			stale++
			if first < 0 {
				first = l.Start
			}
		}
	}
	if stale > 0 {
		return damaged(KindStaleLiveRecords, int64(first), "%d live messages are already archived in a finished commit", stale)
	}
	return healthy()
}

// ovLive counts the live lines of a session's messages.jsonl and whether any is archived;
// ok is false when the file is missing or not valid.
func ovLive(sid string) (live int, overlap bool, ok bool) {
	data, _, err := fsio.ReadStable(filepath.Join(sid, "messages.jsonl"), 1<<30)
	if err != nil {
		return 0, false, false
	}
	archived := ovArchivedIDs(sid)
	for _, l := range splitJSONL(data, ftOVMessages) {
		if l.Blank {
			continue
		}
		if l.Val == nil || !l.Terminated {
			return 0, false, false
		}
		live++
		if id := l.Val.Get("id"); isStr(id) && archived[id.Str] {
			overlap = true
		}
	}
	return live, overlap, true
}

func checkOVMeta(c *fileCtx, data []byte, root *jsonv.Value) Verdict {
	if root.Type != jsonv.Object {
		return damaged(KindNotObject, int64(root.Start), "top-level value is not an object")
	}
	n := root.Get("message_count")
	if n == nil || n.Type != jsonv.Number || !n.IsInt {
		return damaged(KindSchema, int64(root.Start), "message_count is not an integer")
	}
	v := healthy()
	live, overlap, ok := ovLive(filepath.Dir(c.path))
	if ok && !overlap && int64(live) > n.Int {
		return damaged(KindMetadataLag, int64(n.Start), "message_count %d lags %d live messages", n.Int, live)
	}
	if ok && int64(live) < n.Int {
		v.Warnings = append(v.Warnings, "message_count exceeds the live messages")
	}
	return v
}

// ovSetCount changes only the number after "message_count" in .meta.json's own bytes.
func ovSetCount(meta []byte, count int) ([]byte, bool) {
	root, err := jsonv.Parse(meta, ftOVMeta.dialect())
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
