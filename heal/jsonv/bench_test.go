package jsonv

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"strings"
	"sync"
	"testing"

	"github.com/go-json-experiment/json/jsontext"
)

var (
	english = strings.Fields(`the a to of and is in that it for you this with on be are as not
		we can file session config value error result function return should will if when
		then use run test check need let me look at your code now here update fix change line
		path message agent tool call output input data time user model first next also make`)
	unicode = []string{"café", "naïve", "résumé", "Zürich", "→", "≥", "✅", "😀", "🚀", "—", "“quoted”"}
	cjk     = []string{"日本語の", "テキスト", "中文字符", "会话文件", "已保存", "안녕하세요", "Привет", "мир"}
	code    = []string{
		"func main() {", "\tfmt.Println(\"hello, world\")", "}", "if err != nil {",
		"\t\treturn fmt.Errorf(\"open %s: %w\", path, err)", "// Load reads C:\\Users\\bob\\config.json",
		"x := map[string]int{\"a\": 1, \"b\": 2}", "for i := 0; i < len(items); i++ {",
		"<div class=\"note\">Saved &amp; restored</div>", "    def load(self, path: str) -> dict:",
		"        return json.loads(Path(path).read_text())", "SELECT id, role FROM messages WHERE id = 42;",
	}
)

func prose(r *rand.Rand, n int) string {
	var sb strings.Builder
	for k := 0; k < n; k++ {
		switch {
		case k == 0:
		case r.IntN(12) == 0:
			sb.WriteString(". ")
		case r.IntN(40) == 0:
			sb.WriteString(".\n\n")
		default:
			sb.WriteByte(' ')
		}
		if r.IntN(25) == 0 {
			sb.WriteString(unicode[r.IntN(len(unicode))])
		} else {
			sb.WriteString(english[r.IntN(len(english))])
		}
	}
	return sb.String()
}

func proseCJK(r *rand.Rand, n int) string {
	var sb strings.Builder
	for k := 0; k < n; k++ {
		sb.WriteString(cjk[r.IntN(len(cjk))])
		if r.IntN(6) == 0 {
			sb.WriteString("。")
		}
	}
	return sb.String()
}

func codeBlock(r *rand.Rand, n int) string {
	lines := make([]string, n)
	for k := range lines {
		lines[k] = code[r.IntN(len(code))]
	}
	return strings.Join(lines, "\n")
}

// content makes realistic message text: English prose with some unicode and newlines, some
// messages in CJK, code blocks in assistant replies, source files in tool results.
func content(r *rand.Rand, role string) string {
	switch role {
	case "user":
		if r.IntN(10) == 0 {
			return proseCJK(r, 5+r.IntN(40))
		}
		return prose(r, 5+r.IntN(60))
	case "assistant":
		s := prose(r, 20+r.IntN(200))
		if r.IntN(2) == 0 {
			s += "\n\n```go\n" + codeBlock(r, 3+r.IntN(20)) + "\n```\n"
		}
		return s
	}
	return codeBlock(r, 5+r.IntN(60))
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

func genMessage(r *rand.Rand, k int) message {
	role := []string{"user", "assistant", "tool"}[k%3]
	m := message{
		ID:        fmt.Sprintf("msg_%016x", r.Uint64()),
		Role:      role,
		Timestamp: fmt.Sprintf("2025-11-%02dT%02d:%02d:%02d.%03dZ", 1+r.IntN(28), r.IntN(24), r.IntN(60), r.IntN(60), r.IntN(1000)),
		Content:   content(r, role),
		Usage: map[string]any{
			"input_tokens":  r.IntN(100000),
			"output_tokens": r.IntN(4000),
			"cost_usd":      r.Float64() / 100,
		},
		Metadata: map[string]any{"model": "model-large-2", "temperature": 0.7, "stop": nil, "cached": r.IntN(2) == 0},
	}
	if m.Role == "assistant" && r.IntN(2) == 0 {
		args, _ := json.Marshal(map[string]any{"path": "/home/user/project/main.go", "line": r.IntN(500), "query": prose(r, 4)})
		m.ToolCalls = []toolCall{{ID: fmt.Sprintf("call_%08x", r.Uint32()), Name: "read_file", Arguments: string(args)}}
	}
	return m
}

var benchData = sync.OnceValues(func() (doc, jsonl []byte) {
	const size = 8 << 20
	r := rand.New(rand.NewPCG(1, 2))
	var msgs []message
	for n := 0; n < size; {
		m := genMessage(r, len(msgs))
		line, err := json.Marshal(m)
		if err != nil {
			panic(err)
		}
		jsonl = append(append(jsonl, line...), '\n')
		n += len(line) + 1
		msgs = append(msgs, m)
	}
	doc, err := json.MarshalIndent(map[string]any{"version": 2, "session_id": "bench", "messages": msgs}, "", "  ")
	if err != nil {
		panic(err)
	}
	return doc, jsonl
})

type validator struct {
	name string
	fn   func([]byte) bool
}

var validators = []validator{
	{"jsonv", func(b []byte) bool { return Valid(b, Dialect{}) == nil }},
	{"encoding-json", json.Valid},
	{"jsontext", func(b []byte) bool { return jsontext.Value(b).IsValid(strictOpts...) }},
}

// BenchmarkValid compares the validators on an indented JSON document and on JSONL checked
// line by line, both about 8 MiB of chat messages.
func BenchmarkValid(b *testing.B) {
	doc, jsonl := benchData()
	for _, v := range validators {
		b.Run("json/"+v.name, func(b *testing.B) {
			b.SetBytes(int64(len(doc)))
			for b.Loop() {
				if !v.fn(doc) {
					b.Fatal("invalid")
				}
			}
		})
	}
	for _, v := range validators {
		b.Run("jsonl/"+v.name, func(b *testing.B) {
			b.SetBytes(int64(len(jsonl)))
			for b.Loop() {
				Lines(jsonl, func(_ int, line []byte, _ bool) bool {
					if !v.fn(line) {
						b.Fatal("invalid")
					}
					return true
				})
			}
		})
	}
}

func BenchmarkParse(b *testing.B) {
	doc, _ := benchData()
	doc = doc[:1<<20]
	end := strings.LastIndex(string(doc), "\n    },")
	doc = append(doc[:end:end], "}]}"...)
	if err := Valid(doc, Dialect{}); err != nil {
		b.Fatal(err)
	}
	b.SetBytes(int64(len(doc)))
	b.ReportAllocs()
	for b.Loop() {
		if _, err := Parse(doc, Dialect{}); err != nil {
			b.Fatal(err)
		}
	}
}
