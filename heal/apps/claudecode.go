package apps

import (
	"context"
	"time"

	"github.com/sessionmedic/sessionmedic/heal/format"
	"github.com/sessionmedic/sessionmedic/heal/jsonv"
	"github.com/sessionmedic/sessionmedic/policy"
)

// claude-code (claude-code.md). Placeholder profile: generic JSONL rules until the app's checklist lands.

func addClaudeCode(r *format.Registry) {
	r.Add("claude-code", func(string) format.Profile { return claudeCodeLog{} }, claudeCodeLog{})
	r.AddLock(string(policy.LockClaudeCode), lockClaudeCode)
}

type claudeCodeLog struct{ format.Log }

func (claudeCodeLog) Name() string           { return "claude-code" }
func (claudeCodeLog) Dialect() jsonv.Dialect { return jsonv.Dialect{} }
func (claudeCodeLog) EmptyIsDamage() bool    { return true }
func (claudeCodeLog) AppendOnly() bool       { return true }
func (claudeCodeLog) CheckLines(format.File, []format.Line) format.Verdict {
	return format.OK()
}

func lockClaudeCode(context.Context, string, format.Profile, time.Duration, time.Duration) (format.Lock, error) {
	return format.Unlocked{}, nil
}
