package heal

import (
	"errors"
	"io"
	"os"

	"github.com/sessionmedic/sessionmedic/heal/format"
	"github.com/sessionmedic/sessionmedic/heal/fsio"
	"github.com/sessionmedic/sessionmedic/policy"
)

// missingPlans plans the restore of a file whose absence is its damage (in.missing) from the
// files that stand in for it: the copies its app set aside (salvage), its backups (backup),
// its last-good copy (last-good). Each is judged from its own file and copied from it
// (fsio.FileAt: the whole file, or its salvage, a range or a splice of it), never held
// whole, whatever its size: the plans, and what each strategy came to, are the ones the
// planner of held bytes made of the same files (every missing file of the samples heals as
// it did: TestSamples), but for the salvage+last-good union, which no missing file is
// offered (a union is of JSONL records, and no JSONL format tells a missing file by a copy
// its app set aside).
func (e *Engine) missingPlans(rule *policy.Rule, in *inspection) ([]*plan, []try, error) {
	c := &in.ctx
	e.step("missing-from-files", c.path)
	var out []*plan
	var tries []try
	for _, s := range rule.Strategies {
		var sc *standIn
		var why string
		switch s {
		case policy.CleanTemp, policy.Reindex, policy.RestoreSnapshot:
			continue
		case policy.Salvage:
			sc, why = e.setAsideStandIn(c)
		case policy.Backup:
			sc, why = e.backupStandIn(rule, c)
		case policy.LastGoodCopy:
			sc, why = e.lastGoodStandIn(c)
		default:
			// A strategy that rewrites the file's own bytes: a missing file has none.
			tries = append(tries, try{strategy: s, why: rewriteWhy(s, c, true)})
			continue
		}
		if sc == nil {
			tries = append(tries, try{strategy: s, why: why})
			continue
		}
		p, tr := missingPlan(c, s, sc)
		if p != nil {
			out = append(out, p)
		}
		tries = append(tries, tr)
	}
	return out, tries, nil
}

// standIn is a file that stands in for a missing one, or the part of it that does (a
// damaged copy's salvage), judged from the file: its verdict as the missing file, its
// records, and, when it is healthy, its bytes' sha256.
type standIn struct {
	src     fsio.FileAt
	size    int64 // of the bytes that stand in
	verdict Verdict
	records int
	sum     string
}

// openStandIn opens the candidate at p, a regular file of at most limit bytes (when limit is
// over 0): nil when it is not one, as fsio.ReadStable refuses it.
func openStandIn(p string, limit int64) (*os.File, Identity) {
	f, id, err := fsio.OpenRegular(p)
	if err != nil {
		return nil, id
	}
	if limit > 0 && id.Size > limit {
		f.Close()
		return nil, id
	}
	return f, id
}

// heldCand reads the candidate f holds (version id) whole: data when it was read as that
// version (read), and passes the checklist of c's file held (nil when it does not).
func heldCand(c *fileCtx, f *os.File, id Identity) (data []byte, read bool) {
	data = make([]byte, id.Size)
	if _, err := f.ReadAt(data, 0); (err != nil && err != io.EOF) || !fsio.StillSame(f, id) {
		return nil, false
	}
	if !candidateOK(c, data) {
		return nil, true
	}
	return data, true
}

// judgeStandIn judges the size bytes of f (the file at p, version id) from the start, as
// the missing file at c's path, and counts its records; the sum is taken of a healthy one.
// part, when set, is the part of f that stands in (a salvage).
func judgeStandIn(c *fileCtx, f *os.File, p string, id Identity, part fsio.Content, r io.ReaderAt, size int64) (*standIn, error) {
	cc := *c
	cc.lastGood = nil
	v, n, err := judgeStreamedDoc(&cc, r, 0, size)
	if err != nil {
		return nil, err
	}
	sc := &standIn{src: fsio.FileAt{Path: p, ID: id, Part: part}, size: size, verdict: v, records: n}
	if v.Status != Healthy {
		return sc, nil
	}
	if !format.IsDocument(c.typ) {
		if c.typ.JSONL() {
			if sc.records, err = format.RecordsAt(c.typ, r, size); err != nil {
				return nil, err
			}
		} else if sc.records, err = plainRecords(r, size); err != nil {
			return nil, err
		}
	}
	if sc.sum, err = sc.src.WriteOut(io.Discard, nil); err != nil {
		return nil, err
	}
	if !fsio.StillSame(f, id) {
		return nil, fsio.ErrChanged
	}
	return sc, nil
}

// setAsideStandIn is salvage's stand-in for c's missing file, as salvage(c, nil, true)
// finds it held: the first copy the app set aside that has a salvage (its first value, its
// valid lines: judged, and planned even when that fails the checklist) or is healthy as it is.
func (e *Engine) setAsideStandIn(c *fileCtx) (*standIn, string) {
	d, ok := c.typ.(format.MissingDetector)
	if !ok {
		return nil, noSalvage(c, true)
	}
	for _, p := range d.MissingSources(c.path) {
		f, id := openStandIn(p, c.maxSize)
		if f == nil {
			continue
		}
		sc, err := setAsideOne(c, f, p, id)
		f.Close()
		if err == nil && sc != nil {
			return sc, ""
		}
	}
	return nil, noSalvage(c, true)
}

// setAsideOne is setAsideStandIn of one copy: nil when it has no salvage and is damaged.
func setAsideOne(c *fileCtx, f *os.File, p string, id Identity) (*standIn, error) {
	if format.IsDocument(c.typ) || !c.typ.JSONL() {
		// A document's salvage is its first complete value, when bytes follow it.
		cc := *c
		cc.lastGood = nil
		v, end, err := judgeFirst(&cc, f, id.Size)
		if err != nil {
			return nil, err
		}
		if end > 0 {
			return judgeStandIn(c, f, p, id, fsio.Range{Off: 0, N: end}, f, end)
		}
		if v.Status == Healthy {
			return judgeStandIn(c, f, p, id, nil, f, id.Size)
		}
		return nil, nil
	}
	if _, fin := c.typ.(format.SalvageFinisher); fin {
		return nil, nil // a salvage the app's load finishes: made held only
	}
	keep, _, err := format.PlanKeep(c.typ, c.path, f, id.Size)
	if err != nil || keep == nil {
		return nil, err
	}
	if keep.Prefix() && keep.Size() == id.Size {
		return judgeStandIn(c, f, p, id, nil, f, id.Size) // every line kept: the copy itself
	}
	return judgeStandIn(c, f, p, id, keep, keep.At(f), keep.Size())
}

// judgeFirst is the verdict on the document f holds and, when a complete first value is
// followed by other bytes, where that value ends (else 0).
func judgeFirst(c *fileCtx, f *os.File, size int64) (Verdict, int64, error) {
	if c.typ.Plain() {
		v, end, err := format.StreamVerdict(f, 0, size, c.typ)
		if v.Kind != format.KindTrailingGarbage {
			end = 0
		}
		return v, max(end, 0), err
	}
	v, j, err := format.JudgeDocAt(c.typ, c.path, f, size)
	return v, max(j.FirstEnd, 0), err
}

// backupStandIn is backup's stand-in: the newest backup that is healthy (fromBackup).
func (e *Engine) backupStandIn(rule *policy.Rule, c *fileCtx) (*standIn, string) {
	cands := backupPaths(rule, c)
	if len(cands) == 0 {
		return nil, whyNoBackup
	}
	for _, p := range cands {
		f, id := openStandIn(p, c.maxSize)
		if f == nil {
			continue
		}
		sc, err := judgeStandIn(c, f, p, id, nil, f, id.Size)
		f.Close()
		if err == nil && sc.verdict.Status == Healthy {
			return sc, ""
		}
	}
	return nil, whyBackupsFail
}

// lastGoodStandIn is last-good's stand-in: the copy, when it is healthy.
func (e *Engine) lastGoodStandIn(c *fileCtx) (*standIn, string) {
	f, sc, why := e.lastGoodFileStandIn(c)
	if f != nil {
		f.Close()
	}
	return sc, why
}

// lastGoodFileStandIn is lastGoodStandIn with the copy left open (f), for a caller that
// measures it from its file: f and sc are nil when why says why not.
func (e *Engine) lastGoodFileStandIn(c *fileCtx) (f *os.File, sc *standIn, why string) {
	p := e.LastGood.Path(c.path)
	f, id := openStandIn(p, 0)
	if p == "" || f == nil {
		return nil, nil, whyNoLastGood
	}
	sc, err := judgeStandIn(c, f, p, id, nil, f, id.Size)
	switch {
	case err != nil && !errors.Is(err, fsio.ErrChanged):
		why = whyNoLastGood
	case err != nil || sc.verdict.Status != Healthy:
		why = whyLastGoodFails
	default:
		return f, sc, ""
	}
	f.Close()
	return nil, nil, why
}

// missingPlan is strategy s's plan that writes sc's bytes as c's missing file, or why not,
// as newPlan decides it of those bytes held.
func missingPlan(c *fileCtx, s policy.Strategy, sc *standIn) (*plan, try) {
	tr := try{strategy: s}
	if v := sc.verdict; v.Status != Healthy {
		tr.why, tr.fails = whyFails, &v
		return nil, tr
	}
	if k, ok := c.typ.(format.PrefixKeeper); ok && k.KeptPrefix(c.path) > 0 {
		tr.why = whyForkPrefix // as keepsPrefix says of a file that has none of those bytes
		return nil, tr
	}
	p := &plan{strategy: s, keep: sc.records, edits: []edit{{path: c.path, missing: true,
		big: &bigEdit{src: sc.src, newSHA: sc.sum, newSize: sc.size}}}}
	if l, ok := c.typ.(format.LinkedEditor); ok {
		if o, ok := l.LinkedEdit(c.path, sc.records); ok {
			p.edits = append(p.edits, edit{path: o.Path, old: o.Old, oldID: o.OldID, data: o.Data})
		}
	}
	tr.plan = p
	return p, tr
}

// plainRecords is format.Records of the valid plain JSON document r holds (size bytes): one
// when its value is an object, else none. It reads up to the value's first byte.
func plainRecords(r io.ReaderAt, size int64) (int, error) {
	buf := make([]byte, 4096)
	for off := int64(0); off < size; {
		n, err := r.ReadAt(buf[:min(int64(len(buf)), size-off)], off)
		for _, c := range buf[:n] {
			switch c {
			case ' ', '\t', '\n', '\r':
				continue
			case '{':
				return 1, nil
			default:
				return 0, nil
			}
		}
		if off += int64(n); err != nil && (err != io.EOF || off < size) {
			return 0, err
		}
	}
	return 0, nil
}
