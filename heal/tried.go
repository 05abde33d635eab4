package heal

import (
	"fmt"
	"strings"

	"github.com/sessionmedic/sessionmedic/policy"
)

// Why a strategy yielded no plan. They are constants, so the planners record them for free;
// the text of a refusal is built only when a heal is refused (see [tried]).
const (
	whyNotApplicable = "not applicable"
	whyUnchanged     = "changes nothing"
	whyNothingToDrop = "nothing to drop"
	whyNoRecord      = "no valid record to keep"
	whyNoValue       = "no complete value to cut the file back to"
	whyNoSetAside    = "no copy the app set aside"
	whyNoLastGood    = "no copy kept"
	whyLastGoodFails = "the copy fails the checklist"
	whyLastGoodKept  = "the salvage keeps the whole copy"
	whyLastGoodFewer = "the salvage keeps as many records as the copy and their union"
	whyNoBackup      = "no backup found"
	whyBackupsFail   = "no backup passes the checklist"
	whyNoReconcile   = "nothing to reconcile"
	whyValueMissing  = "a value is missing"
	whyNoBOM         = "no byte order mark"
	whyFails         = "the result fails the checklist"
	whyForkPrefix    = "would change bytes a fork points into"
	whyCrossFile     = "not for damage between files"
	whyNotStreamed   = "a line of the file cannot be read streaming (a number, or a record's structure, over 64 MiB)"
)

// try is what one strategy of the rule came to: a plan, or why none (why, and the verdict of
// its result when that fails the checklist).
type try struct {
	strategy policy.Strategy
	plan     *plan
	why      string
	fails    *Verdict
}

// noSalvage says why salvage kept nothing of a file.
func noSalvage(c *fileCtx, missing bool) string {
	switch {
	case missing:
		return whyNoSetAside
	case c.typ.JSONL():
		return whyNoRecord
	default:
		return whyNoValue
	}
}

// text is one entry of [Report.Tried]: "strategy: why".
func (t try) text(maxLoss float64) string {
	var why string
	switch p := t.plan; {
	case p != nil && p.lossRatio() > maxLoss:
		why = fmt.Sprintf("over max_loss (drops %d of %d records)", p.lostRecords, p.total)
	case p != nil:
		why = fmt.Sprintf("drops %d of %d records", p.lostRecords, p.total)
	case t.fails != nil:
		why = fmt.Sprintf("%s: %s at %d: %s", t.why, t.fails.Kind, t.fails.Offset, t.fails.Detail)
	case t.why != "":
		why = t.why
	default:
		why = whyNotApplicable
	}
	return string(t.strategy) + ": " + why
}

// tried renders, in policy order, what each strategy of a refused heal came to.
func tried(tries []try, maxLoss float64) []string {
	out := make([]string, len(tries))
	for i, t := range tries {
		out[i] = t.text(maxLoss)
	}
	return out
}

// noPlanReason is the reason of a heal no strategy of the rule could make.
func noPlanReason(rule *policy.Rule, tried []string) string {
	r := "no strategy of the rule yields a valid file"
	if rule.Mode == policy.ModeObserve {
		r = "observe mode: " + r
	}
	if len(tried) == 0 {
		return r
	}
	return r + ": " + strings.Join(tried, "; ")
}
