package heal

import (
	"bytes"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"time"

	"github.com/sessionmedic/sessionmedic/heal/format"
	"github.com/sessionmedic/sessionmedic/heal/fsio"
	"github.com/sessionmedic/sessionmedic/policy"
)

// edit is one file a plan rewrites.
type edit struct {
	path    string
	old     []byte   // the bytes that were read; nil when the file was missing
	oldID   Identity // zero when missing
	missing bool
	data    []byte
	big     *bigEdit // a big file's edit (bigplan.go): old is nil, and data too unless held in memory
}

// plan is one strategy's proposed repair.
type plan struct {
	strategy    policy.Strategy
	edits       []edit // edits[0] is the inspected file
	lostBytes   int64
	lostRecords int
	total       int // records of the damaged file, the base of the loss ratio
	keep        int // records the result holds
}

func (p *plan) lossRatio() float64 {
	if p.total == 0 {
		return 0
	}
	return float64(p.lostRecords) / float64(p.total)
}

// inspection is what one read of a file established.
type inspection struct {
	ctx     fileCtx
	data    []byte
	buf     []byte // the pooled buffer data was read into, or nil (release)
	id      Identity
	missing bool
	verdict Verdict

	incremental bool            // validated without holding the bytes (incremental or streaming); data is nil
	copyFrom    bool            // healthy, judged streaming: its last-good copy is copied from the file
	tooLarge    bool            // damaged, and too large to plan a repair in memory
	big         bool            // damaged, judged streaming and planned from the file (bigplan.go); data is nil
	bigEnd      int64           // big JSON with trailing garbage: the end of its first value, else -1
	docRecords  int             // a big app document that parses: the records it holds (inspectDoc)
	tornCut     *format.TornCut // a big app log's torn last line, judged and its cut planned (inspectTorn)
	finish      *earlyFinish    // ... and its app's finish of the bytes kept, started beside that judge
	copyErr     error           // the state dir refused its last-good copy (see [copyFailed])
	at          time.Time       // when the inspection ended: the file was id from then on, as far as it knows
}

// candidateOK reports whether bytes would be a healthy file at c's path.
func candidateOK(c *fileCtx, data []byte) bool {
	return candidate(c, data).Status == Healthy
}

// candidate is the verdict bytes would get as the file at c's path.
func candidate(c *fileCtx, data []byte) Verdict {
	cc := *c
	cc.lastGood = nil
	return format.Inspect(cc.typ, cc.file(), data)
}

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

// best picks the plan that keeps the most history; ties go to policy order.
func best(plans []*plan) *plan {
	var b *plan
	for _, p := range plans {
		if b == nil || p.keep > b.keep {
			b = p
		}
	}
	return b
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

// backupPaths are the file's backups, newest first: its app's own, or the rule's templates'.
func backupPaths(rule *policy.Rule, c *fileCtx) []string {
	if b, ok := c.typ.(format.BackupFinder); ok {
		return b.Backups(c.path)
	}
	var cands []string
	for _, tmpl := range rule.Backups {
		m, _ := filepath.Glob(policy.ExpandTemplate(tmpl, c.path))
		sort.Slice(m, func(i, j int) bool { return modTime(m[i]) > modTime(m[j]) })
		cands = append(cands, m...)
	}
	return cands
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

func modTime(p string) int64 {
	fi, err := os.Lstat(p)
	if err != nil {
		return 0
	}
	return fi.ModTime().UnixNano()
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

func (p *plan) String() string {
	return fmt.Sprintf("%s (drops %d of %d records, %d bytes)", p.strategy, p.lostRecords, p.total, p.lostBytes)
}
