package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"unicode/utf8"
)

// The workload generators: chat sessions as agent apps keep them, with English prose,
// unicode, CJK, code blocks (quotes, backslashes, tabs, newlines: escapes), numbers, nulls
// and booleans. Everything is deterministic for a seed.

var (
	words = strings.Fields(`the a to of and is in that it for you this with on be are as not
		we can file session config value error result function return should will if when
		then use run test check need let me look at your code now here update fix change line
		path message agent tool call output input data time user model first next also make`)
	uniWords  = []string{"café", "naïve", "résumé", "Zürich", "→", "≥", "✅", "😀", "🚀", "—", "“quoted”"}
	cjkWords  = []string{"日本語の", "テキスト", "中文字符", "会话文件", "已保存", "안녕하세요", "Привет", "мир"}
	codeLines = []string{
		"func main() {", "\tfmt.Println(\"hello, world\")", "}", "if err != nil {",
		"\t\treturn fmt.Errorf(\"open %s: %w\", path, err)", "// Load reads C:\\Users\\bob\\config.json",
		"x := map[string]int{\"a\": 1, \"b\": 2}", "for i := 0; i < len(items); i++ {",
		"<div class=\"note\">Saved &amp; restored</div>", "    def load(self, path: str) -> dict:",
		"        return json.loads(Path(path).read_text())", "SELECT id, role FROM messages WHERE id = 42;",
	}
)

type gen struct{ r *rand.Rand }

func newGen(seed uint64) *gen { return &gen{r: rand.New(rand.NewPCG(seed, 0x5e551011))} }

func (g *gen) prose(n int) string {
	var sb strings.Builder
	for k := 0; k < n; k++ {
		switch {
		case k == 0:
		case g.r.IntN(12) == 0:
			sb.WriteString(". ")
		case g.r.IntN(40) == 0:
			sb.WriteString(".\n\n")
		default:
			sb.WriteByte(' ')
		}
		if g.r.IntN(25) == 0 {
			sb.WriteString(uniWords[g.r.IntN(len(uniWords))])
		} else {
			sb.WriteString(words[g.r.IntN(len(words))])
		}
	}
	return sb.String()
}

func (g *gen) proseCJK(n int) string {
	var sb strings.Builder
	for k := 0; k < n; k++ {
		sb.WriteString(cjkWords[g.r.IntN(len(cjkWords))])
		if g.r.IntN(6) == 0 {
			sb.WriteString("。")
		}
	}
	return sb.String()
}

func (g *gen) code(n int) string {
	lines := make([]string, n)
	for k := range lines {
		lines[k] = codeLines[g.r.IntN(len(codeLines))]
	}
	return strings.Join(lines, "\n")
}

// content is message text of about scale words: prose, some CJK, code in replies, files in
// tool results.
func (g *gen) content(role string, scale int) string {
	scale = max(scale, 4)
	switch role {
	case "user":
		if g.r.IntN(10) == 0 {
			return g.proseCJK(2 + g.r.IntN(scale/2+1))
		}
		return g.prose(3 + g.r.IntN(scale))
	case "assistant":
		s := g.prose(scale/2 + g.r.IntN(scale*3))
		if g.r.IntN(2) == 0 {
			s += "\n\n```go\n" + g.code(2+g.r.IntN(scale/3+1)) + "\n```\n"
		}
		return s
	}
	return g.code(2 + g.r.IntN(scale))
}

type toolCall struct {
	ID        string `json:"id"`
	Name      string `json:"name"`
	Arguments string `json:"arguments"`
}

type message struct {
	ID        string         `json:"id"`
	Role      string         `json:"role"`
	Timestamp string         `json:"timestamp"`
	Content   string         `json:"content"`
	Usage     map[string]any `json:"usage"`
	ToolCalls []toolCall     `json:"tool_calls,omitempty"`
	Metadata  map[string]any `json:"metadata"`
}

func (g *gen) timestamp() string {
	return fmt.Sprintf("2025-11-%02dT%02d:%02d:%02d.%03dZ", 1+g.r.IntN(28), g.r.IntN(24), g.r.IntN(60), g.r.IntN(60), g.r.IntN(1000))
}

// message is the k-th message of a chat with about scale words per text.
func (g *gen) message(k, scale int) message {
	role := []string{"user", "assistant", "tool"}[k%3]
	m := message{
		ID:        fmt.Sprintf("msg_%016x", g.r.Uint64()),
		Role:      role,
		Timestamp: g.timestamp(),
		Content:   g.content(role, scale),
		Usage: map[string]any{
			"input_tokens":  g.r.IntN(100000),
			"output_tokens": g.r.IntN(4000),
			"cost_usd":      g.r.Float64() / 100,
		},
		Metadata: map[string]any{"model": "model-large-2", "temperature": 0.7, "stop": nil, "cached": g.r.IntN(2) == 0},
	}
	if role == "assistant" && g.r.IntN(2) == 0 {
		args, _ := json.Marshal(map[string]any{"path": "/home/user/project/main.go", "line": g.r.IntN(500), "query": g.prose(4)})
		m.ToolCalls = []toolCall{{ID: fmt.Sprintf("call_%08x", g.r.Uint32()), Name: "read_file", Arguments: string(args)}}
	}
	return m
}

func mustMarshal(v any) []byte {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err)
	}
	return b
}

// escapeNonASCII rewrites every non-ASCII character of valid JSON as a \uXXXX escape (a
// surrogate pair above U+FFFF), as Python's json.dump does by default. Outside strings JSON
// is ASCII, so the result is the same value.
func escapeNonASCII(b []byte) []byte {
	out := make([]byte, 0, len(b)+len(b)/4)
	for i := 0; i < len(b); {
		c := b[i]
		if c < utf8.RuneSelf {
			out = append(out, c)
			i++
			continue
		}
		r, n := utf8.DecodeRune(b[i:])
		i += n
		if r > 0xFFFF {
			r -= 0x10000
			out = fmt.Appendf(out, `\u%04x\u%04x`, 0xD800+(r>>10), 0xDC00+(r&0x3FF))
			continue
		}
		out = fmt.Appendf(out, `\u%04x`, r)
	}
	return out
}

// sessionLine is one JSONL record: a message, a third of them written Python style.
func (g *gen) sessionLine(k, scale int) []byte {
	b := mustMarshal(g.message(k, scale))
	if g.r.IntN(3) == 0 {
		b = escapeNonASCII(b)
	}
	return b
}

// genJSONL returns at least size bytes of JSONL chat records (each line ends in '\n').
func genJSONL(size int, seed uint64) []byte {
	g := newGen(seed)
	out := make([]byte, 0, size+64<<10)
	for k := 0; len(out) < size; k++ {
		out = append(append(out, g.sessionLine(k, 60)...), '\n')
	}
	return out
}

// genJSONDoc returns an indented chat session document of at least size bytes.
func genJSONDoc(size int, seed uint64) []byte {
	g := newGen(seed)
	var buf bytes.Buffer
	buf.Grow(size + 64<<10)
	fmt.Fprintf(&buf, "{\n  \"version\": 2,\n  \"session_id\": \"%016x\",\n  \"title\": %s,\n  \"created_at\": %q,\n  \"pinned\": false,\n  \"parent\": null,\n  \"messages\": [",
		g.r.Uint64(), mustMarshal(g.prose(6)), g.timestamp())
	for k := 0; buf.Len() < size; k++ {
		if k > 0 {
			buf.WriteByte(',')
		}
		buf.WriteString("\n    ")
		b, err := json.MarshalIndent(g.message(k, 60), "    ", "  ")
		if err != nil {
			panic(err)
		}
		buf.Write(b)
	}
	buf.WriteString("\n  ]\n}\n")
	return buf.Bytes()
}

// exactLine returns one JSONL record of exactly n bytes including its '\n' (n >= 128).
func (g *gen) exactLine(n int) []byte {
	head := fmt.Sprintf(`{"id":"msg_%016x","role":"user","timestamp":"%s","content":"`, g.r.Uint64(), g.timestamp())
	const tail = "\"}\n"
	fill := n - len(head) - len(tail)
	if fill < 0 {
		panic("exactLine: n too small")
	}
	var sb strings.Builder
	sb.Grow(n)
	sb.WriteString(head)
	for sb.Len() < len(head)+fill {
		w := words[g.r.IntN(len(words))]
		if left := len(head) + fill - sb.Len(); len(w)+1 > left {
			sb.WriteString(strings.Repeat("x", left))
			break
		}
		sb.WriteString(w)
		sb.WriteByte(' ')
	}
	sb.WriteString(tail)
	return []byte(sb.String())
}

// genChunk returns exactly size bytes of complete JSONL records (size >= 4 KiB): messages,
// and a last record padded to fill the chunk.
func genChunk(size int, seed uint64) []byte {
	g := newGen(seed)
	out := make([]byte, 0, size)
	for k := 0; ; k++ {
		line := g.sessionLine(k, 60)
		if len(out)+len(line)+1 > size-2048 {
			break
		}
		out = append(append(out, line...), '\n')
	}
	return append(out, g.exactLine(size-len(out))...)
}

// Small session files of several apps' shapes, for the scan tree.

// smallFile returns a session file's base name and content: kind 0-2 are JSON documents,
// 3-5 JSONL logs. Sizes run from a few hundred bytes to a few KiB.
func (g *gen) smallFile(kind, seq int) (string, []byte) {
	n := 1 + g.r.IntN(6)
	switch kind {
	case 0: // a chat store: id, title, messages with role and content
		msgs := make([]map[string]any, n)
		for k := range msgs {
			role := []string{"user", "assistant"}[k%2]
			msgs[k] = map[string]any{"role": role, "content": g.content(role, 12), "ts": g.r.Int64N(1 << 41)}
		}
		b, _ := json.MarshalIndent(map[string]any{"id": fmt.Sprintf("%016x", g.r.Uint64()), "title": g.prose(4), "messages": msgs, "archived": false}, "", "  ")
		return fmt.Sprintf("session-%05d.json", seq), b
	case 1: // an agent session: chat history, state, links
		hist := make([]map[string]any, n)
		for k := range hist {
			role := []string{"user", "assistant"}[k%2]
			hist[k] = map[string]any{"role": role, "content": g.content(role, 10), "timestamp": float64(g.r.Int64N(1<<31)) + g.r.Float64()}
		}
		b := mustMarshal(map[string]any{"session_id": fmt.Sprintf("s-%08x", g.r.Uint32()), "chat_history": hist,
			"state": map[string]any{"turns": n, "temperature": 0.2}, "parent_id": nil, "children_ids": []string{}})
		if g.r.IntN(2) == 0 {
			b = escapeNonASCII(b)
		}
		return fmt.Sprintf("chat-%05d.json", seq), b
	case 2: // an index of sessions (a store keyed by session)
		idx := map[string]any{}
		for k := 0; k < n; k++ {
			idx[fmt.Sprintf("agent:main:%08x", g.r.Uint32())] = map[string]any{
				"sessionId": fmt.Sprintf("%016x", g.r.Uint64()), "updatedAt": g.r.Int64N(1 << 41),
				"label": g.prose(3), "model": "model-large-2", "tokens": g.r.IntN(200000)}
		}
		b, _ := json.MarshalIndent(idx, "", "  ")
		return fmt.Sprintf("sessions-%05d.json", seq), b
	case 3: // a transcript: a session header, then typed records
		var buf bytes.Buffer
		buf.Write(mustMarshal(map[string]any{"type": "session", "version": 3, "id": fmt.Sprintf("%016x", g.r.Uint64()), "timestamp": g.timestamp(), "cwd": "/home/user/project"}))
		buf.WriteByte('\n')
		for k := 0; k < n; k++ {
			role := []string{"user", "assistant"}[k%2]
			buf.Write(mustMarshal(map[string]any{"type": "message", "id": fmt.Sprintf("%08x", g.r.Uint32()), "timestamp": g.timestamp(),
				"message": map[string]any{"role": role, "content": []any{map[string]any{"type": "text", "text": g.content(role, 10)}}}}))
			buf.WriteByte('\n')
		}
		return fmt.Sprintf("%016x.jsonl", g.r.Uint64()), buf.Bytes()
	case 4: // a log: a metadata line, then messages (Python style escapes)
		var buf bytes.Buffer
		buf.Write(mustMarshal(map[string]any{"_type": "metadata", "created_at": g.timestamp(), "updated_at": g.timestamp(), "metadata": map[string]any{}, "last_consolidated": 0}))
		buf.WriteByte('\n')
		for k := 0; k < n; k++ {
			role := []string{"user", "assistant"}[k%2]
			buf.Write(escapeNonASCII(mustMarshal(map[string]any{"role": role, "content": g.content(role, 10), "timestamp": g.timestamp()})))
			buf.WriteByte('\n')
		}
		return fmt.Sprintf("cli_%05d.jsonl", seq), buf.Bytes()
	default: // generic chat records
		var buf bytes.Buffer
		for k := 0; k < n; k++ {
			buf.Write(g.sessionLine(k, 8))
			buf.WriteByte('\n')
		}
		return fmt.Sprintf("messages-%05d.jsonl", seq), buf.Bytes()
	}
}

// treeSpec is a scan tree: top directories × leaf directories per top × files per leaf.
type treeSpec struct{ Top, Leaves, Files int }

func (s treeSpec) files() int { return s.Top * s.Leaves * s.Files }
func (s treeSpec) dirs() int  { return s.Top * s.Leaves }

// treeStats describes a generated tree.
type treeStats struct {
	Files, JSON, JSONL, Dirs int
	Bytes                    int64
}

// genTree writes a scan tree under root: half JSON, half JSONL files, the top directories in
// parallel. The content depends only on seed and spec.
func genTree(root string, spec treeSpec, seed uint64) (treeStats, error) {
	st := treeStats{Dirs: 1 + spec.Top + spec.dirs()}
	var mu sync.Mutex
	var firstErr error
	tops := make(chan int)
	var wg sync.WaitGroup
	for w := 0; w < 4; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for t := range tops {
				part, err := genTop(root, spec, seed, t)
				mu.Lock()
				if err != nil && firstErr == nil {
					firstErr = err
				}
				st.Files += part.Files
				st.JSON += part.JSON
				st.JSONL += part.JSONL
				st.Bytes += part.Bytes
				mu.Unlock()
			}
		}()
	}
	for t := 0; t < spec.Top; t++ {
		tops <- t
	}
	close(tops)
	wg.Wait()
	return st, firstErr
}

// topDir is the name of the t-th top directory of a tree.
func topDir(t int) string { return fmt.Sprintf("ws%03d", t) }

func genTop(root string, spec treeSpec, seed uint64, t int) (treeStats, error) {
	var st treeStats
	g := newGen(seed + uint64(t)*7919)
	seq := t * spec.Leaves * spec.Files
	for l := 0; l < spec.Leaves; l++ {
		dir := filepath.Join(root, topDir(t), fmt.Sprintf("agent-%04d", l))
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return st, err
		}
		for f := 0; f < spec.Files; f++ {
			kind := seq%2*3 + seq/2%3 // even: JSON, odd: JSONL
			name, data := g.smallFile(kind, seq)
			seq++
			if err := os.WriteFile(filepath.Join(dir, name), data, 0o644); err != nil {
				return st, err
			}
			st.Files++
			st.Bytes += int64(len(data))
			if kind < 3 {
				st.JSON++
			} else {
				st.JSONL++
			}
		}
	}
	return st, nil
}
