package main

import (
	"bytes"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"path/filepath"
	"strings"
	"time"
)

// Claude Code transcripts (claude-code.md): one JSONL file per session,
// <config>/projects/<slug>/<sessionId>.jsonl, records shaped like the app's (the healthy
// sample in heal/testdata/samples/claude-code): chain records (user, assistant) linked by
// parentUuid, and meta records (queue-operation, last-prompt, cost-state) that carry the
// sessionId but no uuid. Texts come from pools JSON-encoded once; a record is its template
// with fresh uuids and timestamps, so gigabytes are cheap to write.

const claudeVersion = "2.1.330"

// claudePools are the JSON-encoded strings records are made of, shared read-only by every
// writer of a run.
type claudePools struct {
	prompts [][]byte // user prompts: a few words to a paragraph
	replies [][]byte // assistant texts: prose and code
	outputs [][]byte // tool outputs: code listings of up to tens of KiB
	inputs  [][]byte // tool_use name and input: `"name":"Bash","input":{…}`
}

func newClaudePools(seed uint64) *claudePools {
	g := newGen(seed)
	enc := func(s string) []byte { return mustMarshal(s) }
	p := &claudePools{}
	for i := 0; i < 64; i++ {
		p.prompts = append(p.prompts, enc(g.content("user", 6+i%24)))
		p.replies = append(p.replies, enc(g.content("assistant", 10+i*3)))
		p.outputs = append(p.outputs, enc(g.code(4+(i%16)*(i%16)*4)))
	}
	for _, in := range []map[string]any{
		{"name": "Bash", "input": map[string]any{"command": "go test ./... 2>&1 | tail -n 40", "description": "Run the tests"}},
		{"name": "Read", "input": map[string]any{"file_path": "/home/user/src/app/internal/store/session.go"}},
		{"name": "Grep", "input": map[string]any{"pattern": "func \\(s \\*Store\\)", "path": "/home/user/src/app", "output_mode": "content"}},
		{"name": "Edit", "input": map[string]any{"file_path": "/home/user/src/app/main.go", "old_string": "return nil", "new_string": "return fmt.Errorf(\"load %s: %w\", path, err)"}},
	} {
		b := mustMarshal(in)
		p.inputs = append(p.inputs, b[1:len(b)-1])
	}
	return p
}

// claudeSession writes one transcript's records. It belongs to one goroutine.
type claudeSession struct {
	p       *claudePools
	r       *rand.Rand
	id      string // the session UUID: the file's stem and every record's sessionId
	cwdJSON []byte // the project directory, JSON-encoded
	last    string // uuid of the last chain record; "" before the first
	ts      time.Time
	turns   int
	pending [][]byte // records made but not yet taken (take)
}

func newClaudeSession(p *claudePools, seed uint64, cwd string) *claudeSession {
	s := &claudeSession{p: p, r: rand.New(rand.NewPCG(seed, 0xc1a0de)), cwdJSON: mustMarshal(cwd)}
	s.id = s.uuid()
	s.ts = time.Date(2026, 11, 1, 9, 0, 0, 0, time.UTC).Add(time.Duration(s.r.Int64N(int64(700 * time.Hour))))
	return s
}

// claudeSlug is the projects/ directory name Claude gives a working directory.
func claudeSlug(cwd string) string {
	return strings.Map(func(r rune) rune {
		if r < 128 && (r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9') {
			return r
		}
		return '-'
	}, cwd)
}

func (s *claudeSession) uuid() string {
	var u [16]byte
	for i := 0; i < 16; i += 8 {
		v := s.r.Uint64()
		for k := 0; k < 8; k++ {
			u[i+k] = byte(v >> (8 * k))
		}
	}
	u[6], u[8] = u[6]&0x0f|0x40, u[8]&0x3f|0x80
	h := hex.EncodeToString(u[:])
	return h[:8] + "-" + h[8:12] + "-" + h[12:16] + "-" + h[16:20] + "-" + h[20:]
}

func (s *claudeSession) pick(pool [][]byte) []byte { return pool[s.r.IntN(len(pool))] }

// stamp advances the clock and appends `"timestamp":"…"`.
func (s *claudeSession) stamp(b []byte) []byte {
	s.ts = s.ts.Add(time.Duration(1+s.r.IntN(3000)) * time.Millisecond)
	b = append(b, `"timestamp":"`...)
	b = s.ts.AppendFormat(b, "2006-01-02T15:04:05.000Z")
	return append(b, '"')
}

// chainHead appends the opening of a chain record: parentUuid and isSidechain.
func (s *claudeSession) chainHead(b []byte) []byte {
	if s.last == "" {
		return append(b, `{"parentUuid":null,"isSidechain":false,`...)
	}
	b = append(b, `{"parentUuid":"`...)
	b = append(b, s.last...)
	return append(b, `","isSidechain":false,`...)
}

// chainTail appends a chain record's uuid and context, closes it, and makes it the last.
func (s *claudeSession) chainTail(b []byte, extra string) []byte {
	u := s.uuid()
	b = append(b, `,"uuid":"`...)
	b = append(b, u...)
	b = append(b, `",`...)
	b = s.stamp(b)
	b = append(b, extra...)
	b = append(b, `,"userType":"external","entrypoint":"cli","cwd":`...)
	b = append(b, s.cwdJSON...)
	b = append(b, `,"sessionId":"`...)
	b = append(b, s.id...)
	b = append(b, `","version":"`+claudeVersion+`","gitBranch":"main"}`+"\n"...)
	s.last = u
	return b
}

func (s *claudeSession) meta(b []byte, head string, body ...[]byte) []byte {
	b = append(b, head...)
	for _, x := range body {
		b = append(b, x...)
	}
	b = append(b, `,"sessionId":"`...)
	b = append(b, s.id...)
	return append(b, "\"}\n"...)
}

// user appends a user record whose content is a JSON value (a string, or tool_result blocks).
func (s *claudeSession) user(b, content []byte, extra string) []byte {
	b = s.chainHead(b)
	b = append(b, `"promptId":"`...)
	b = append(b, s.uuid()...)
	b = append(b, `","type":"user","message":{"role":"user","content":`...)
	b = append(b, content...)
	b = append(b, '}')
	return s.chainTail(b, extra)
}

// assistant appends an assistant record with content blocks.
func (s *claudeSession) assistant(b, blocks []byte, stop string) []byte {
	b = s.chainHead(b)
	b = fmt.Appendf(b, `"message":{"id":"msg_%016x","type":"message","role":"assistant","model":"claude-opus-5-5","content":[`, s.r.Uint64())
	b = append(b, blocks...)
	b = fmt.Appendf(b, `],"stop_reason":%q,"stop_sequence":null,"usage":{"input_tokens":%d,"cache_creation_input_tokens":%d,"cache_read_input_tokens":%d,"output_tokens":%d,"service_tier":"standard"}},"requestRef":"%s","type":"assistant"`,
		stop, 1+s.r.IntN(40), s.r.IntN(9000), s.r.IntN(200000), 1+s.r.IntN(4000), s.uuid())
	return s.chainTail(b, `,"effort":"medium"`)
}

// turn appends one exchange: the prompt queued and taken, the user record, the assistant's
// answer (sometimes a tool call, its result and a final text), then last-prompt and, now
// and then, cost-state.
func (s *claudeSession) turn(b []byte) []byte {
	if s.turns == 0 {
		b = s.meta(b, `{"type":"atis-latch","atis":""`)
	}
	s.turns++
	prompt := s.pick(s.p.prompts)
	b = s.meta(b, `{"type":"queue-operation","operation":"enqueue",`, s.stamp(nil), []byte(`,"content":`), prompt)
	b = s.meta(b, `{"type":"queue-operation","operation":"dequeue",`, s.stamp(nil))
	b = s.user(b, prompt, fmt.Sprintf(`,"permissionMode":"default","promptSource":"cli","turnOrigin":"cli","turnPosition":{"promptIndex":0,"turnIndex":%d}`, s.turns))
	for calls := s.r.IntN(3); calls > 0; calls-- {
		tool := fmt.Sprintf("toolu_01%016x", s.r.Uint64())
		b = s.assistant(b, fmt.Appendf(nil, `{"type":"tool_use","id":%q,%s}`, tool, s.pick(s.p.inputs)), "tool_use")
		caller := s.last
		out := s.pick(s.p.outputs)
		block := fmt.Appendf(nil, `[{"tool_use_id":%q,"type":"tool_result","content":%s,"is_error":false}]`, tool, out)
		b = s.user(b, block, `,"toolUseResult":{"stdout":`+string(out)+`,"stderr":"","interrupted":false,"isImage":false},"sourceToolAssistantUUID":"`+caller+`"`)
	}
	b = s.assistant(b, append(append([]byte(`{"type":"text","text":`), s.pick(s.p.replies)...), '}'), "end_turn")
	b = s.meta(b, `{"type":"last-prompt","lastPrompt":`, prompt, []byte(`,"leafUuid":"`+s.last+`"`))
	if s.r.IntN(3) == 0 {
		b = s.meta(b, fmt.Sprintf(`{"type":"cost-state","totalCostUSD":%.6f,"totalAPIDuration":%d,"totalToolDuration":%d,"totalLinesAdded":%d,"totalLinesRemoved":%d`,
			s.r.Float64()*3, s.r.IntN(900000), s.r.IntN(90000), s.r.IntN(2000), s.r.IntN(800)))
	}
	return b
}

// fill appends turns until b holds at least n bytes.
func (s *claudeSession) fill(b []byte, n int) []byte {
	for len(b) < n {
		b = s.turn(b)
	}
	return b
}

// take returns the next k records (each ending in '\n'), made a turn at a time.
func (s *claudeSession) take(k int) []byte {
	var out []byte
	for ; k > 0; k-- {
		out = append(out, s.peek()...)
		s.pending = s.pending[1:]
	}
	return out
}

// peek is the next record take would return.
func (s *claudeSession) peek() []byte {
	if len(s.pending) == 0 {
		t := s.turn(nil)
		for len(t) > 0 {
			i := bytes.IndexByte(t, '\n') + 1
			s.pending = append(s.pending, t[:i:i])
			t = t[i:]
		}
	}
	return s.pending[0]
}

// exactBatch returns whole records of exactly n bytes (n >= 1024): a prompt queued and
// taken and its user record, the prompt padded to fill the batch. Records made but not yet
// taken stay pending.
func (s *claudeSession) exactBatch(n int) []byte {
	if n < 1024 {
		panic("exactBatch: n too small")
	}
	var b []byte
	b = s.meta(b, `{"type":"queue-operation","operation":"dequeue",`, s.stamp(nil))
	pad := func(k int) []byte {
		out := make([]byte, 0, k+2)
		out = append(out, '"')
		for len(out) < k+1 {
			w := words[s.r.IntN(len(words))]
			if left := k + 1 - len(out); len(w)+1 > left {
				out = append(out, strings.Repeat("x", left)...)
				break
			}
			out = append(append(out, w...), ' ')
		}
		return append(out, '"')
	}
	s.turns++
	save := *s
	probe := s.user(nil, pad(0), fmt.Sprintf(`,"permissionMode":"default","promptSource":"cli","turnOrigin":"cli","turnPosition":{"promptIndex":0,"turnIndex":%d}`, s.turns))
	*s = save // uuids and timestamps have fixed lengths: only the padding is left to size
	fill := n - len(b) - len(probe)
	if fill < 0 {
		panic("exactBatch: n too small")
	}
	b = s.user(b, pad(fill), fmt.Sprintf(`,"permissionMode":"default","promptSource":"cli","turnOrigin":"cli","turnPosition":{"promptIndex":0,"turnIndex":%d}`, s.turns))
	if len(b) != n {
		panic(fmt.Sprintf("exactBatch: %d bytes, want %d", len(b), n))
	}
	return b
}

// claudeSizes spreads total bytes over n transcripts as real config directories hold them:
// most a few KiB to a few hundred KiB, some MiB, a few tens of MiB, and the largest 6% of
// the total (120 MB of 2 GB). Sizes are shuffled; the result is deterministic for seed.
func claudeSizes(n int, total int64, seed uint64) []int64 {
	r := rand.New(rand.NewPCG(seed, 0x512e5))
	large := max(1, n/200)
	medium := n * 8 / 100
	small := n - 1 - large - medium
	if small < 1 {
		panic("claudeSizes: too few files")
	}
	out := []int64{int64(float64(total) * 0.06)}
	tier := func(count int, share, spread float64) {
		w := make([]float64, count)
		sum := 0.0
		for i := range w {
			w[i] = math.Exp(r.Float64() * math.Log(spread)) // log-uniform over [1, spread]
			sum += w[i]
		}
		for _, x := range w {
			out = append(out, max(2<<10, int64(float64(total)*share*x/sum)))
		}
	}
	tier(large, 0.35, 6)
	tier(medium, 0.30, 10)
	tier(small, 0.29, 100)
	r.Shuffle(len(out), func(i, j int) { out[i], out[j] = out[j], out[i] })
	return out
}

// claudeCheck verifies a transcript as the claude-code profile defines valid (claude-code.md,
// "What valid means"), for the file named stem.jsonl.
func claudeCheck(data []byte, path string) error {
	stem := strings.TrimSuffix(filepath.Base(path), ".jsonl")
	if len(data) == 0 || data[len(data)-1] != '\n' {
		return errors.New("empty or not ending in a newline")
	}
	seen := map[string]bool{}
	conv := 0
	for n, line := range bytes.Split(data[:len(data)-1], []byte("\n")) {
		var rec struct {
			Type       *string         `json:"type"`
			UUID       *string         `json:"uuid"`
			ParentUUID json.RawMessage `json:"parentUuid"`
			SessionID  *string         `json:"sessionId"`
			Message    json.RawMessage `json:"message"`
		}
		if bytes.IndexByte(line, 0) >= 0 || json.Unmarshal(line, &rec) != nil || rec.Type == nil || len(line) == 0 || line[0] != '{' {
			return fmt.Errorf("line %d: not a JSON object with a string type", n+1)
		}
		if rec.SessionID == nil || *rec.SessionID != stem {
			return fmt.Errorf("line %d: sessionId is not the file's stem %s", n+1, stem)
		}
		switch *rec.Type {
		case "user", "assistant", "attachment", "system":
		default:
			continue
		}
		if rec.UUID == nil || len(rec.Message) == 0 || rec.Message[0] != '{' {
			return fmt.Errorf("line %d: a chain record without uuid or message object", n+1)
		}
		var parent *string
		if json.Unmarshal(rec.ParentUUID, &parent) != nil || (parent != nil && !seen[*parent]) {
			return fmt.Errorf("line %d: parentUuid %s is neither null nor an earlier uuid", n+1, rec.ParentUUID)
		}
		seen[*rec.UUID] = true
		if *rec.Type == "user" || *rec.Type == "assistant" {
			conv++
		}
	}
	if conv == 0 {
		return errors.New("no user or assistant record")
	}
	return nil
}
