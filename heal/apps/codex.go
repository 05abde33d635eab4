package apps

import (
	"context"
	"time"

	"github.com/sessionmedic/sessionmedic/heal/format"
	"github.com/sessionmedic/sessionmedic/heal/jsonv"
	"github.com/sessionmedic/sessionmedic/policy"
)

// codex (codex.md). Placeholder profile: generic JSONL rules until the app's checklist lands.

func addCodex(r *format.Registry) {
	r.Add("codex", func(string) format.Profile { return codexLog{} }, codexLog{})
	r.AddLock(string(policy.LockCodex), lockCodex)
}

type codexLog struct{ format.Log }

func (codexLog) Name() string           { return "codex" }
func (codexLog) Dialect() jsonv.Dialect { return jsonv.Dialect{} }
func (codexLog) EmptyIsDamage() bool    { return true }
func (codexLog) AppendOnly() bool       { return true }
func (codexLog) CheckLines(format.File, []format.Line) format.Verdict {
	return format.OK()
}

func lockCodex(context.Context, string, format.Profile, time.Duration, time.Duration) (format.Lock, error) {
	return format.Unlocked{}, nil
}
