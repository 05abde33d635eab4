package heal

import (
	"errors"
	"fmt"

	"github.com/sessionmedic/sessionmedic/heal/format"
	"github.com/sessionmedic/sessionmedic/heal/fsio"
	"github.com/sessionmedic/sessionmedic/policy"
)

// memCand is a candidate held in memory (a backup, the last-good copy).
type memCand struct {
	strategy policy.Strategy
	*format.SurveyCand
}

// makeBigPlans is makePlans for a big file: the same strategies in the same order, with the
// same results, except that salvage+last-good is not offered.
func (e *Engine) makeBigPlans(rule *policy.Rule, in *inspection) ([]*plan, []try, error) {
	c := &in.ctx
	crossFile := in.verdict.Kind == format.KindDanglingReference || in.verdict.Kind == format.KindStaleLiveRecords || in.verdict.Kind == format.KindMetadataLag
	var cands []memCand
	var surveyed []*format.SurveyCand
	var backupWhy, lastGoodWhy string
	for _, s := range rule.Strategies {
		if crossFile && (s == "backup" || s == "last-good") {
			continue
		}
		var data []byte
		switch s {
		case policy.Backup:
			data, backupWhy = fromBackup(rule, c)
		case policy.LastGoodCopy:
			switch lg := c.lastGood; {
			case lg == nil:
				lastGoodWhy = whyNoLastGood
			case !candidateOK(c, lg):
				lastGoodWhy = whyLastGoodFails
			default:
				data = lg
			}
		}
		if data != nil {
			mc := memCand{strategy: s, SurveyCand: &format.SurveyCand{Data: data}}
			cands = append(cands, mc)
			surveyed = append(surveyed, mc.SurveyCand)
		}
	}
	f, err := fsio.OpenStable(in.ctx.path, in.id)
	if err != nil {
		if errors.Is(err, fsio.ErrChanged) {
			return nil, nil, busyErr("%s changed since it was read", in.ctx.path)
		}
		return nil, nil, err
	}
	defer f.Close()
	size := in.id.Size
	// The BOM-less bytes, when the file starts with a byte order mark (normalize).
	var bomLess bool
	var bomLessV Verdict
	if in.verdict.Kind == format.KindBOM {
		v, _, err := format.StreamVerdict(f, 3, size, c.typ)
		if err != nil {
			return nil, nil, err
		}
		bomLess, bomLessV = v.Status == Healthy, v
	}
	// One pass over the original measures what the plans need.
	sv, err := format.Survey(f, size, c.typ, format.SurveyOptions{
		FirstValueEnd: in.bigEnd,
		BOMLess:       bomLess,
		Unchanged:     func() bool { return fsio.StillSame(f, in.id) },
	}, surveyed)
	if errors.Is(err, format.ErrNoStream) {
		return nil, nil, fmt.Errorf("%s: a number or literal is over %d bytes: not repaired streaming", in.ctx.path, maxLine)
	}
	if errors.Is(err, fsio.ErrChanged) {
		return nil, nil, busyErr("%s changed since it was read", in.ctx.path)
	}
	if err != nil {
		return nil, nil, err
	}
	bigPlan := func(s policy.Strategy, src fsio.Content, newSHA string, newSize int64, prefix bool) *plan {
		return &plan{strategy: s, edits: []edit{{path: c.path, oldID: in.id,
			big: &bigEdit{src: src, oldSHA: sv.OldSHA, newSHA: newSHA, newSize: newSize, prefix: prefix}}}}
	}
	var out []*plan
	var tries []try
	for _, s := range rule.Strategies {
		if crossFile && (s == "backup" || s == "last-good") {
			tries = append(tries, try{strategy: s, why: whyCrossFile})
			continue
		}
		var p *plan
		tr := try{strategy: s, why: whyNotStreamed}
		switch s {
		case policy.CleanTemp:
			continue
		case policy.Salvage:
			tr.why = noSalvage(c, false)
		case policy.Normalize:
			tr.why = whyNoBOM
			if in.verdict.Kind == format.KindBOM {
				tr.why, tr.fails = whyFails, &bomLessV
			}
		case policy.Backup:
			tr.why = backupWhy
		case policy.LastGoodCopy:
			tr.why = lastGoodWhy
		}
		switch s {
		case policy.Salvage:
			if c.typ.JSONL() && sv.SalvKeep > 0 {
				p = bigPlan(s, format.ValidLines{Profile: c.typ, Size: size}, sv.SalvSHA, sv.SalvSize, sv.SalvPrefix)
				p.keep, p.total, p.lostRecords, p.lostBytes = sv.SalvKeep, sv.Total, sv.SalvLost, sv.SalvLostBytes
			} else if sv.ValueSHA != "" {
				p = bigPlan(s, fsio.Range{Off: 0, N: in.bigEnd}, sv.ValueSHA, in.bigEnd, true)
				p.keep = format.JSONRecords(sv.ValueFirst)
				p.lostBytes = size - in.bigEnd
			}
		case policy.Normalize:
			if bomLess {
				p = bigPlan(s, fsio.Range{Off: 3, N: size - 3}, sv.NormSHA, size-3, false)
				// A byte order mark is no history: nothing is lost.
				if c.typ.JSONL() {
					p.total, p.keep = sv.Total, sv.Total-1
					if !sv.Line1Blank {
						p.keep++
					}
				} else {
					p.keep = format.JSONRecords(sv.NormFirst)
				}
			}
		case policy.Backup, policy.LastGoodCopy:
			for _, mc := range cands {
				if mc.strategy != s {
					continue
				}
				p = bigPlan(s, fsio.Bytes(mc.Data), sha(mc.Data), int64(len(mc.Data)), mc.PrefixN == int64(len(mc.Data)))
				p.edits[0].data = mc.Data
				p.keep = format.Records(c.typ, mc.Data)
				if c.typ.JSONL() {
					p.total, p.lostRecords, p.lostBytes = sv.Total, mc.Lost, mc.LostBytes
				} else {
					// The damaged document does not parse: it holds no record to lose.
					p.lostBytes = max(size-mc.PrefixN-mc.SuffixN, 0)
				}
			}
		}
		if p != nil {
			out = append(out, p)
			tr = try{strategy: s, plan: p}
		}
		tries = append(tries, tr)
	}
	return out, tries, nil
}

// plans asks the rule's strategies for a repair, from the bytes read or, for a big file, from
// the file itself.
func (e *Engine) plans(rule *policy.Rule, in *inspection) ([]*plan, []try, error) {
	if in.big {
		return e.makeBigPlans(rule, in)
	}
	plans, tries := makePlans(rule, in)
	return plans, tries, nil
}
