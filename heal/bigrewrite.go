package heal

import (
	"errors"
	"io"
	"os"

	"github.com/sessionmedic/sessionmedic/heal/format"
	"github.com/sessionmedic/sessionmedic/heal/fsio"
	"github.com/sessionmedic/sessionmedic/policy"
)

// lineRewrite is one of a JSONL app log's line rewrites (rebuild-header, add-ordinals,
// drop-invalid-entries) planned streaming: a splice of the file — of its salvage where the
// rule salvages first, as the reference on held bytes rewrites the salvage — judged and
// hashed in one read, its records counted, and measured by the survey (cand); or why not.
type lineRewrite struct {
	sp          *format.Splice
	sum         string
	ok          bool // sp passes the checklist and keeps the prefix others point into
	records     int
	cand        *format.SurveyCand
	why         string
	fails       *Verdict
	notStreamed bool // not planned: a line no streaming reader takes
}

// lineRewrites plans the line rewrites rule asks of the app log f holds (keep: its salvage,
// nil for none; unfinished: the salvage the app's finish would change, not planned here).
func lineRewrites(rule *policy.Rule, in *inspection, f *os.File, keep *format.Splice, unfinished bool) (map[policy.Strategy]*lineRewrite, error) {
	c, size := &in.ctx, in.id.Size
	out := map[policy.Strategy]*lineRewrite{}
	for _, s := range rule.Strategies {
		lr := &lineRewrite{why: rewriteWhy(s, c, in.missing)} // why, should it make no repair
		onSalvage := before(rule.Strategies, policy.Salvage, s)
		var rw func(r io.ReaderAt, n int64) (*format.Splice, error)
		switch s {
		case policy.AddOrdinals:
			if a, ok := c.typ.(format.OrdinalAdder); ok && !in.missing {
				rw = func(r io.ReaderAt, n int64) (*format.Splice, error) { return a.AddOrdinals(c.path, r, n) }
			}
		case policy.RebuildHeader:
			if h, ok := c.typ.(format.HeaderRebuilder); ok && !in.missing {
				rw = func(r io.ReaderAt, n int64) (*format.Splice, error) { return h.RebuildHeader(c.path, r, n) }
			}
		case policy.Reconcile:
			onSalvage = false // the file's own records, as the reference on held bytes reconciles them
			if r, ok := c.typ.(format.SpliceReconciler); ok && !in.missing {
				kind := in.verdict.Kind
				rw = func(rd io.ReaderAt, n int64) (*format.Splice, error) { return r.ReconcileSplice(c.path, rd, n, kind) }
			}
		case policy.DropInvalidEntries:
			onSalvage = false // the file's own entries, as the reference on held bytes drops them
			if d, ok := c.typ.(format.SpliceDropper); ok && !in.missing {
				rw = d.DropInvalidSplice
			}
		default:
			continue
		}
		out[s] = lr
		if rw == nil {
			continue
		}
		if onSalvage && unfinished {
			lr.notStreamed = true
			continue
		}
		var base io.ReaderAt = f
		bsize, inner := size, (*format.Splice)(nil)
		if onSalvage && keep != nil {
			base, bsize, inner = keep.At(f), keep.Size(), keep
		}
		sp, err := rw(base, bsize)
		if errors.Is(err, format.ErrNoStream) {
			lr.notStreamed = true // a line over MaxLine
			continue
		}
		if err != nil {
			return nil, err
		}
		if sp == nil {
			continue
		}
		lr.why, lr.sp = "", sp.Through(inner)
		res := lr.sp.At(f)
		v, sum, err := format.InspectSum(c.typ, c.path, res, lr.sp.Size())
		if err != nil {
			return nil, err
		}
		lr.sum = sum
		switch {
		case v.Status != Healthy:
			lr.why, lr.fails = whyFails, &v
			continue
		case !keepsPrefixAt(c, lr.sp):
			lr.why = whyForkPrefix
			continue
		}
		if lr.records, err = format.RecordsAt(c.typ, res, lr.sp.Size()); err != nil {
			return nil, err
		}
		lr.ok, lr.cand = true, &format.SurveyCand{File: res, Size: lr.sp.Size()}
		if s == policy.AddOrdinals {
			// Every record kept, with its number added: nothing lost (as newPlan says).
			only, err := insertsOnlyAt(f, size, res, lr.sp.Size())
			if err != nil {
				return nil, err
			}
			if only {
				lr.cand = nil
			}
		}
	}
	return out, nil
}

// plan is the rewrite's plan, measured by the survey sv, or the try that says why none.
func (lr *lineRewrite) plan(s policy.Strategy, size int64, sv format.SurveyResult,
	bigPlan func(policy.Strategy, fsio.Content, string, int64, bool) *plan) (*plan, try) {
	switch {
	case lr.sp != nil && lr.sp.Size() == size && lr.sum == sv.OldSHA:
		return nil, try{strategy: s, why: whyUnchanged}
	case !lr.ok:
		return nil, try{strategy: s, why: lr.why, fails: lr.fails}
	}
	p := bigPlan(s, lr.sp, lr.sum, lr.sp.Size(), lr.sp.Prefix())
	p.keep, p.total = lr.records, sv.Total
	if lr.cand != nil {
		p.lostRecords, p.lostBytes = lr.cand.Lost, lr.cand.LostBytes
	}
	return p, try{strategy: s, plan: p}
}

// insertsOnlyAt is insertsOnly of old (osize bytes) and data (dsize bytes), read streaming:
// data is old with bytes inserted, none dropped or changed.
func insertsOnlyAt(old io.ReaderAt, osize int64, data io.ReaderAt, dsize int64) (bool, error) {
	if dsize < osize {
		return false, nil
	}
	o, d := format.SizedReader(old, osize), format.SizedReader(data, dsize)
	want, err := o.ReadByte()
	for err == nil {
		b, derr := d.ReadByte()
		if derr == io.EOF {
			return false, nil
		}
		if derr != nil {
			return false, derr
		}
		if b == want {
			want, err = o.ReadByte()
		}
	}
	if err == io.EOF {
		return true, nil
	}
	return false, err
}
