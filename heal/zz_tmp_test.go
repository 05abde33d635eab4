package heal

import (
	"testing"
)

func TestTmpGeminiEngine(t *testing.T) {
	root := "/tmp/big/gem/home/.gemini/tmp"
	p := root + "/proj/chats/session-2026-11-22T21-40-7759d9fe.jsonl"
	e, _ := bigEngine(t, 0)
	e.oneShot = true
	in := e.inspect(Target{Path: p, Rule: appRule(t, "gemini-cli", root)})
	t.Log(in.verdict)
}
