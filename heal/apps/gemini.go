package apps

import (
	"context"
	"time"

	"github.com/sessionmedic/sessionmedic/heal/format"
	"github.com/sessionmedic/sessionmedic/heal/jsonv"
	"github.com/sessionmedic/sessionmedic/policy"
)

// gemini-cli (gemini-cli.md). Placeholder profile: generic JSONL rules until the app's checklist lands.

func addGeminiCLI(r *format.Registry) {
	r.Add("gemini-cli", func(string) format.Profile { return geminiLog{} }, geminiLog{})
	r.AddLock(string(policy.LockGeminiCLI), lockGeminiCLI)
}

type geminiLog struct{ format.Log }

func (geminiLog) Name() string           { return "gemini-cli" }
func (geminiLog) Dialect() jsonv.Dialect { return jsonv.Dialect{} }
func (geminiLog) EmptyIsDamage() bool    { return true }
func (geminiLog) AppendOnly() bool       { return true }
func (geminiLog) CheckLines(format.File, []format.Line) format.Verdict {
	return format.OK()
}

func lockGeminiCLI(context.Context, string, format.Profile, time.Duration, time.Duration) (format.Lock, error) {
	return format.Unlocked{}, nil
}
