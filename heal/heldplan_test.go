package heal

import (
	"bytes"
	"io"
	"testing"

	"github.com/sessionmedic/sessionmedic/heal/apps"
	"github.com/sessionmedic/sessionmedic/heal/format"
	"github.com/sessionmedic/sessionmedic/heal/fsio"
	"github.com/sessionmedic/sessionmedic/policy"
)

// The planner on bytes held whole: the reference the one planner, which plans every damaged
// file from the file (bigplan.go), is held to by the tests (Engine.heldPlans). It is never
// reached by sessionmedic itself.

func init() { heldPlanner = makePlans }

// planState is what one strategy's plan leaves for the next ones: the salvaged bytes (the
// last-good strategy's union with them), plans made on the side, and why the strategy just
// asked yielded nothing (a constant phrase of tried.go; none: "not applicable").
type planState struct {
	salvaged []byte
	salvFig  *format.KeepFigures // what the salvage keeps and loses, when it measured it
	extra    []*plan
	why      string
}

// base is what a strategy that edits the file's records starts from: the salvage, when an
// earlier strategy made one, else the file's own bytes.
func (st *planState) base(in *inspection) []byte {
	if st.salvaged != nil {
		return st.salvaged
	}
	return in.data
}

// A planner is one strategy: the repaired bytes of the inspected file, or nil when the
// strategy does not apply to it (then st.why, when it knows more than "not applicable").
type planner func(rule *policy.Rule, in *inspection, st *planState) []byte

// planners implements every strategy a policy may name but clean-temp, which acts on app
// temp files (see cleanTemp), never on a session file. It is never written to.
var planners = map[policy.Strategy]planner{
	policy.Salvage: func(_ *policy.Rule, in *inspection, st *planState) []byte {
		// (A missing file's salvage is of the copies its app set aside: missing.go.)
		st.salvaged, st.salvFig = format.SalvageFigures(in.ctx.typ, in.ctx.path, in.data)
		if st.salvaged == nil {
			st.why = noSalvage(&in.ctx, false)
		}
		return st.salvaged
	},
	policy.Backup: func(rule *policy.Rule, in *inspection, st *planState) []byte {
		var data []byte
		data, st.why = fromBackup(rule, &in.ctx)
		return data
	},
	policy.LastGoodCopy: func(rule *policy.Rule, in *inspection, st *planState) []byte {
		lg := in.ctx.lastGood
		if lg == nil {
			st.why = whyNoLastGood
			return nil
		}
		if !candidateOK(&in.ctx, lg) {
			st.why = whyLastGoodFails
			return nil
		}
		if u := format.Union(in.ctx.typ, lg, st.salvaged); u != nil && !bytes.Equal(u, lg) {
			if p, _ := newPlan(rule, in, "salvage+last-good", u, nil); p != nil {
				st.extra = append(st.extra, p)
			}
		}
		return lg
	},
	policy.Reconcile: func(_ *policy.Rule, in *inspection, st *planState) []byte {
		st.why = whyNoReconcile
		return reconcile(&in.ctx, in.data, in.missing, in.verdict.Kind)
	},
	policy.DropInvalidEntries: func(_ *policy.Rule, in *inspection, st *planState) []byte {
		if d, ok := in.ctx.typ.(format.EntryDropper); ok && !in.missing {
			st.why = whyNothingToDrop
			return d.DropInvalid(in.data)
		}
		return nil
	},
	policy.RestoreFields: func(_ *policy.Rule, in *inspection, st *planState) []byte {
		if r, ok := in.ctx.typ.(format.FieldRestorer); ok && !in.missing {
			if in.ctx.lastGood == nil {
				st.why = whyNoLastGood
				return nil
			}
			return r.RestoreFields(in.ctx.path, in.data, in.ctx.lastGood)
		}
		return nil
	},
	policy.AddOrdinals: func(_ *policy.Rule, in *inspection, st *planState) []byte {
		if a, ok := in.ctx.typ.(format.OrdinalAdder); ok && !in.missing {
			return format.SpliceBytes(st.base(in), func(r io.ReaderAt, n int64) (*format.Splice, error) {
				return a.AddOrdinals(in.ctx.path, r, n)
			})
		}
		return nil
	},
	policy.RebuildHeader: func(_ *policy.Rule, in *inspection, st *planState) []byte {
		if r, ok := in.ctx.typ.(format.HeaderRebuilder); ok && !in.missing {
			st.why = whyValueMissing
			return format.SpliceBytes(st.base(in), func(rd io.ReaderAt, n int64) (*format.Splice, error) {
				return r.RebuildHeader(in.ctx.path, rd, n)
			})
		}
		return nil
	},
	policy.Normalize: func(_ *policy.Rule, in *inspection, st *planState) []byte {
		if !bytes.HasPrefix(in.data, format.BOM) {
			st.why = whyNoBOM
			return nil
		}
		return in.data[3:] // newPlan checks it
	},
}

// makePlans asks each strategy the rule allows, in policy order, for a repair; tries says,
// in the same order, what each came to.
func makePlans(rule *policy.Rule, in *inspection) (out []*plan, tries []try) {
	var st planState
	// A file whose own content is sound and newest, and only disagrees with its neighbours,
	// is repaired in place, never replaced by an older copy.
	crossFile := in.verdict.Kind == format.KindDanglingReference || in.verdict.Kind == format.KindStaleLiveRecords || in.verdict.Kind == format.KindMetadataLag
	for _, s := range rule.Strategies {
		if crossFile && (s == policy.Backup || s == policy.LastGoodCopy) {
			tries = append(tries, try{strategy: s, why: whyCrossFile})
			continue
		}
		pl := planners[s]
		if pl == nil {
			continue // clean-temp, or a SQLite store's (sqlite.go)
		}
		st.why = ""
		data := pl(rule, in, &st)
		extra := st.extra
		out = append(out, extra...)
		st.extra = nil
		switch {
		case data == nil:
			tries = append(tries, try{strategy: s, why: st.why})
		case !in.missing && bytes.Equal(data, in.data):
			why := whyUnchanged
			if s == policy.Salvage {
				why = whyNothingToDrop
			}
			tries = append(tries, try{strategy: s, why: why})
		default:
			var fig *format.KeepFigures
			if s == policy.Salvage {
				fig = st.salvFig
			}
			p, tr := newPlan(rule, in, s, data, fig)
			if p != nil {
				out = append(out, p)
			}
			tries = append(tries, tr)
		}
		for _, p := range extra {
			tries = append(tries, try{strategy: p.strategy, plan: p})
		}
	}
	return out, tries
}

// newPlan is the plan that writes data, or nil when data is no repair: tr says which. fig,
// when set, is what data keeps and loses as the salvage that made it measured it (each
// damaged line against its own repair); else [format.Loss] measures it.
func newPlan(rule *policy.Rule, in *inspection, strategy policy.Strategy, data []byte, fig *format.KeepFigures) (_ *plan, tr try) {
	tr.strategy = strategy
	if v := candidate(&in.ctx, data); v.Status != Healthy {
		tr.why, tr.fails = whyFails, &v
		return nil, tr
	}
	if !keepsPrefix(&in.ctx, in.data, data) {
		tr.why = whyForkPrefix
		return nil, tr
	}
	p := &plan{strategy: strategy, edits: []edit{{path: in.ctx.path, old: in.data, oldID: in.id, missing: in.missing, data: data}}}
	if fig != nil {
		p.keep, p.total, p.lostRecords, p.lostBytes = fig.Keep, fig.Total, fig.Lost, fig.LostBytes
	} else {
		p.keep = format.Records(in.ctx.typ, data)
		p.total, p.lostRecords, p.lostBytes = format.Loss(in.ctx.typ, in.ctx.path, in.data, data, p.keep)
	}
	if strategy == policy.Normalize {
		p.lostRecords, p.lostBytes = 0, 0 // a byte order mark is no history
	}
	if strategy == policy.AddOrdinals && insertsOnly(in.data, data) {
		p.lostRecords, p.lostBytes = 0, 0 // every record kept, with its number added
	}
	if l, ok := in.ctx.typ.(format.LinkedEditor); ok {
		if o, ok := l.LinkedEdit(in.ctx.path, format.Records(in.ctx.typ, data)); ok {
			p.edits = append(p.edits, edit{path: o.Path, old: o.Old, oldID: o.OldID, data: o.Data})
		}
	}
	tr.plan = p
	return p, tr
}

// insertsOnly: data is old with bytes inserted, none dropped or changed.
func insertsOnly(old, data []byte) bool {
	i := 0
	for j := 0; j < len(data) && i < len(old); j++ {
		if data[j] == old[i] {
			i++
		}
	}
	return i == len(old)
}

// keepsPrefix: data leaves alone the bytes of old that other files point into.
func keepsPrefix(c *fileCtx, old, data []byte) bool {
	k, ok := c.typ.(format.PrefixKeeper)
	if !ok {
		return true
	}
	n := k.KeptPrefix(c.path)
	return n <= 0 || (int64(len(old)) >= n && int64(len(data)) >= n && bytes.Equal(old[:n], data[:n]))
}

// fromBackup returns the newest backup that passes the file's full checklist, or why there is
// none.
func fromBackup(rule *policy.Rule, c *fileCtx) ([]byte, string) {
	cands := backupPaths(rule, c)
	for _, p := range cands {
		data, _, err := fsio.ReadStable(p, c.maxSize)
		if err == nil && candidateOK(c, data) {
			return data, ""
		}
	}
	if len(cands) == 0 {
		return nil, whyNoBackup
	}
	return nil, whyBackupsFail
}

// reconcile performs the cross-file repairs of DESIGN §6.
func reconcile(c *fileCtx, data []byte, missing bool, kind string) []byte {
	if missing {
		return nil
	}
	if r, ok := c.typ.(format.Reconciler); ok {
		return r.Reconcile(c.path, data, kind)
	}
	return nil
}

// rewriteWhy says of a file with no bytes to rewrite (missing, or a document that does not
// parse) what each rewrite's planner on held bytes says of it.
func TestRewriteWhyIsThePlannersWhy(t *testing.T) {
	rule := &policy.Rule{}
	n := 0
	for _, typ := range apps.Registry().Profiles() {
		for _, s := range []policy.Strategy{policy.Reconcile, policy.DropInvalidEntries, policy.RestoreFields, policy.AddOrdinals, policy.RebuildHeader, policy.Normalize} {
			for _, missing := range []bool{false, true} {
				for _, lg := range [][]byte{nil, []byte(`{"a":1}`)} {
					in := &inspection{ctx: fileCtx{path: "/x/s.json", typ: typ, lastGood: lg}, missing: missing}
					var st planState
					planners[s](rule, in, &st)
					if got := rewriteWhy(s, &in.ctx, missing); got != st.why {
						t.Errorf("%T %s (missing %v, copy %v): %q, the planner says %q", typ, s, missing, lg != nil, got, st.why)
					}
					n++
				}
			}
		}
	}
	t.Logf("%d cases", n)
}
