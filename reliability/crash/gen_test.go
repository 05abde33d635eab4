package crash

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io/fs"
	"math/rand/v2"
	"path/filepath"
	"strings"
)

// Generated inputs: a tree with a json/ and a jsonl/ directory (each covered by a rule of
// that format), holding healthy files and files damaged the usual ways: a JSON document
// followed by garbage (an older version's tail, a second document, NULs, random bytes);
// JSONL with garbage lines in the middle and a torn last line. The expected heal is known
// from the construction: the document's bytes; every complete valid line, byte for byte.

type generated struct {
	files  map[string]fileState
	expect map[string][][]byte // damaged files: their correct heals (one, or two when whitespace came before the garbage)
}

var strPieces = []string{"a", "hello", " ", "session", "é", "日本語", "🙂", "\"", "\\", "\n", "\t", "/", "\u2028", "\x01", "<&>", "0", "null", "}", "{", "]", "\u00ff"}

func randString(r *rand.Rand) string {
	var b strings.Builder
	for range r.IntN(8) {
		b.WriteString(strPieces[r.IntN(len(strPieces))])
	}
	return b.String()
}

func randValue(r *rand.Rand, depth int) any {
	k := r.IntN(10)
	if depth >= 3 {
		k = r.IntN(6)
	}
	switch k {
	case 0:
		return nil
	case 1:
		return r.IntN(2) == 0
	case 2:
		return r.Int64N(1<<53) - 1<<52
	case 3:
		return r.NormFloat64() * 1e6
	case 4, 5:
		return randString(r)
	case 6, 7:
		a := make([]any, r.IntN(5))
		for i := range a {
			a[i] = randValue(r, depth+1)
		}
		return a
	default:
		return randObject(r, depth+1, 0)
	}
}

func randObject(r *rand.Rand, depth, minKeys int) map[string]any {
	o := map[string]any{}
	for range minKeys + r.IntN(5) {
		o[randString(r)+fmt.Sprint(r.IntN(100))] = randValue(r, depth)
	}
	return o
}

// randDoc is a JSON document (an object, sometimes an array), compact or indented.
func randDoc(r *rand.Rand) []byte {
	var v any = randObject(r, 0, 1)
	if r.IntN(5) == 0 {
		v = []any{randValue(r, 1), randObject(r, 1, 0)}
	}
	m := map[string]any{"session_id": fmt.Sprintf("s-%d", r.IntN(1e6)), "messages": []any{randRecord(r), randRecord(r)}, "x": v}
	var b []byte
	if r.IntN(2) == 0 {
		b, _ = json.MarshalIndent(m, "", "  ")
	} else {
		b, _ = json.Marshal(m)
	}
	return b
}

func randRecord(r *rand.Rand) map[string]any {
	roles := []string{"user", "assistant", "tool", "system"}
	rec := map[string]any{"role": roles[r.IntN(len(roles))], "content": randString(r), "ts": r.Int64N(1 << 40)}
	if r.IntN(3) == 0 {
		rec["meta"] = randObject(r, 1, 0)
	}
	return rec
}

func randLine(r *rand.Rand) []byte {
	b, _ := json.Marshal(randRecord(r))
	return append(b, '\n')
}

// strictPrefix is a non-empty prefix of b (a compact JSON object) shorter than b: never valid.
func strictPrefix(r *rand.Rand, b []byte) []byte {
	b = bytes.TrimSuffix(b, []byte("\n"))
	return append([]byte(nil), b[:1+r.IntN(len(b)-1)]...)
}

// jsonGarbage is what follows a complete document: it makes the file invalid.
func jsonGarbage(r *rand.Rand) []byte {
	switch r.IntN(6) {
	case 0: // the tail of an older, longer version (the two-writer race)
		other := randDoc(r)
		tail := bytes.TrimLeft(other[1+r.IntN(len(other)-1):], " \t\r\n")
		if len(tail) == 0 {
			tail = []byte("}")
		}
		return tail
	case 1: // a second complete document
		return randDoc(r)
	case 2:
		return []byte("\n  }\n}")
	case 3: // NUL-filled tail (a crash after the size grew)
		return bytes.Repeat([]byte{0}, 1+r.IntN(64))
	case 4: // invalid UTF-8 and control bytes
		g := []byte{"}\xff\x00,"[r.IntN(4)]}
		for range r.IntN(32) {
			g = append(g, byte(r.IntN(256)))
		}
		return g
	default:
		return []byte("garbage" + randString(r))
	}
}

// jsonlGarbage is a line no JSON reader accepts.
func jsonlGarbage(r *rand.Rand) []byte {
	switch r.IntN(5) {
	case 0:
		return append(strictPrefix(r, randLine(r)), '\n')
	case 1:
		return []byte("#not json " + strings.ReplaceAll(randString(r), "\n", " ") + "\n")
	case 2:
		return []byte("{\"role\": \"user\", \"content\": \"\xff\xfe\"}\n")
	case 3:
		return []byte("\x00\x00\x00\x00\n")
	default:
		a, b := randLine(r), randLine(r)
		return append(a[:len(a)-1], b...) // two objects on one line
	}
}

func genTree(seed uint64) generated {
	r := rand.New(rand.NewPCG(seed, 0x6a736f6e))
	g := generated{files: map[string]fileState{}, expect: map[string][][]byte{}}
	perm := func() fs.FileMode { return []fs.FileMode{0o600, 0o644, 0o640}[r.IntN(3)] }
	// JSON: one healthy, two or three damaged.
	g.files[filepath.Join("json", "healthy.json")] = fileState{data: randDoc(r), perm: perm()}
	for i := range 2 + r.IntN(2) {
		doc := randDoc(r)
		name := filepath.Join("json", fmt.Sprintf("s%d.json", i))
		if i == 1 {
			name = filepath.Join("json", "nested", "deeper", fmt.Sprintf("s%d.json", i))
		}
		var junk []byte
		if r.IntN(3) == 0 {
			junk = []byte("\n")
		}
		garbage := jsonGarbage(r)
		g.files[name] = fileState{data: append(append(append([]byte(nil), doc...), junk...), garbage...), perm: perm()}
		// The value's bytes; or, where whitespace separates it from the garbage, the value and
		// that whitespace (both are "the bytes of the prefix").
		ws := len(garbage) - len(bytes.TrimLeft(garbage, " \t\r\n"))
		g.expect[name] = [][]byte{doc}
		if tail := append(append([]byte(nil), junk...), garbage[:ws]...); len(tail) > 0 {
			g.expect[name] = append(g.expect[name], append(append([]byte(nil), doc...), tail...))
		}
	}
	// JSONL: one healthy, two damaged.
	var healthy []byte
	for range 3 + r.IntN(4) {
		healthy = append(healthy, randLine(r)...)
	}
	g.files[filepath.Join("jsonl", "healthy.jsonl")] = fileState{data: healthy, perm: perm()}
	for i := range 2 {
		n := 4 + r.IntN(7)
		var data, keep []byte
		bad := 0
		for j := range n {
			if j > 0 && bad < n/4+1 && r.IntN(4) == 0 {
				data = append(data, jsonlGarbage(r)...)
				bad++
			}
			l := randLine(r)
			data = append(data, l...)
			keep = append(keep, l...)
		}
		if bad == 0 || r.IntN(2) == 0 {
			data = append(data, strictPrefix(r, randLine(r))...) // torn last line, no newline
		}
		name := filepath.Join("jsonl", fmt.Sprintf("t%d.jsonl", i))
		g.files[name] = fileState{data: data, perm: perm()}
		g.expect[name] = [][]byte{keep}
	}
	return g
}

// genPolicyRules are the rules of a generated tree rooted at caseDir.
func genPolicyRules(caseDir, settle string) string {
	return fmt.Sprintf("  - {name: gen-json, paths: [%s], format: json, settle: %s, max_wait: 1s}\n"+
		"  - {name: gen-jsonl, paths: [%s], format: jsonl, settle: %s, max_wait: 1s}\n",
		filepath.Join(caseDir, "json"), settle, filepath.Join(caseDir, "jsonl"), settle)
}
