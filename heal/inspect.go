package heal

import (
	"bytes"
	"errors"
	"os"
	"time"

	"github.com/sessionmedic/sessionmedic/heal/format"
	"github.com/sessionmedic/sessionmedic/heal/fsio"
	"github.com/sessionmedic/sessionmedic/policy"
)

// inspect reads and judges a target.
func (e *Engine) inspect(t Target) *inspection { return e.inspectAs(t, false) }

// inspectAs is inspect; for a heal (heal), a big app log whose last line is torn is judged
// and its cut planned in one pass (format.InspectTorn), which the planner takes as it is.
func (e *Engine) inspectAs(t Target, heal bool) *inspection {
	in := e.inspectOnce(t, heal)
	if in.at.IsZero() {
		in.at = time.Now()
	}
	return in
}

func (e *Engine) inspectOnce(t Target, heal bool) *inspection {
	in := &inspection{ctx: fileCtx{path: t.Path, typ: e.profile(t.Rule.Format, t.Path), maxSize: t.Rule.Limits.MaxFileSize}}
	if id, ok := e.inc.TryIncremental(t.Path, in.ctx.typ, t.Rule.Limits.MaxFileSize); ok {
		in.id, in.incremental, in.verdict = id, true, format.OK()
		return in
	}
	// A big log the daemon judged, a torn line appended to it since: its cut is planned from
	// what the daemon knows of the bytes before (format.AppendCache.TryTorn), not a pass.
	if heal && !e.oneShot && !e.twoPassTorn && appStreamed(in.ctx.typ) {
		began := time.Now()
		if id, v, tc, ok := e.inc.TryTorn(t.Path, in.ctx.typ, t.Rule.Limits.MaxFileSize); ok && id.Size > e.appBigAbove() {
			e.step("torn-cut-incremental", t.Path)
			e.inc.Drop(t.Path)
			in.id, in.verdict, in.big, in.bigEnd, in.tornCut, in.at = id, v, true, -1, &tc, began
			return in
		}
		// Damage appended to it (another writer's record glued to one, or its stub before
		// one): salvaged from what the daemon knows and the appended bytes (TrySalvage).
		began = time.Now()
		if id, v, tc, ok := e.inc.TrySalvage(t.Path, in.ctx.typ, t.Rule.Limits.MaxFileSize); ok && id.Size > e.appBigAbove() {
			e.step("salvage-incremental", t.Path)
			e.inc.Drop(t.Path)
			in.id, in.verdict, in.big, in.bigEnd, in.tornCut, in.at = id, v, true, -1, &tc, began
			return in
		}
	}
	// Files up to the streaming size (append-only logs) or the planning size (the rest) are
	// read whole; larger ones are streamed, and read whole only to plan a repair they need.
	// Plain JSON and JSONL are read whole only as far as a healthy one needs its bytes (the
	// last-good copy, the line-aligned prefix check); beyond, and for any damaged one over
	// the big-file size, they are judged and planned streaming (inspectBig).
	big := int64(planLimit)
	// A log whose checklist runs record by record is judged streaming over the streaming
	// size, whether its app appends to it or rewrites it whole (nanobot).
	streamed := in.ctx.typ.AppendOnly() || (in.ctx.typ.JSONL() && !in.ctx.typ.Plain() && format.StreamJudged(in.ctx.typ))
	if streamed {
		big = e.holdAbove()
	}
	if in.ctx.typ.Plain() {
		big = min(big, e.wholeLimit())
	}
	doc := format.IsDocument(in.ctx.typ)
	if doc {
		big = e.bigAbove()
	}
	var buf []byte      // a pooled buffer the bytes were read into (readbuf.go)
	began := time.Now() // when the read of data began (the wall clock, as a file's ctime)
	data, id, err := fsio.ReadStableInto(t.Path, t.Rule.Limits.MaxFileSize, big, func(n int) []byte { buf = readBuf(n); return buf })
	if err != nil && buf != nil {
		releaseRead(buf)
		buf = nil
	}
	if errors.Is(err, fsio.ErrBig) && in.ctx.typ.Plain() && e.inspectBig(t, in, e.bigAbove()) {
		return in
	}
	if errors.Is(err, fsio.ErrBig) && doc {
		if e.inspectDoc(t, in, heal) {
			return in
		}
		began = time.Now()
		data, id, err = fsio.ReadStable(t.Path, t.Rule.Limits.MaxFileSize)
	}
	if errors.Is(err, fsio.ErrBig) {
		if streamed && heal && !e.twoPassTorn && appStreamed(in.ctx.typ) && id.Size > e.appBigAbove() {
			// The app's finish of the bytes a cut keeps (Gemini CLI's replay) runs beside
			// the judge of the cut, where it would follow it.
			ef := startEarlyFinish(t.Path, in.ctx.typ, id)
			began = time.Now()
			if v, sid, tc, ok, err := inspectTorn(t.Path, in.ctx.typ); err == nil && ok {
				if in.ctx.typ.AppendOnly() && sid.Size <= streamThreshold {
					e.inc.Full.Add(1)
				}
				e.inc.Drop(t.Path)
				in.id, in.verdict, in.big, in.bigEnd, in.tornCut, in.finish, in.at = sid, v, true, -1, &tc, ef, began
				return in
			}
		}
		if streamed {
			began = time.Now()
			v, sid, fr, serr := format.StreamInspectFront(t.Path, in.ctx.typ)
			in.at = began // (a read whole below begins anew)
			// A log sound in its own bytes that is a strict line-aligned prefix of its
			// last-good copy (a lost write) is told from the two files, neither held.
			if serr == nil && v.Status == Healthy && in.ctx.typ.JSONL() && e.copyLonger(t.Path, sid.Size) && e.prefixFromFiles(t.Path, in, sid, &v) {
				return in
			}
			switch {
			case errors.Is(serr, fsio.ErrChanged):
				in.verdict = format.Wait("file changed while it was read")
				return in
			case serr == nil && v.Status == Skipped:
				// Not judged streaming (a record too large to judge within the memory
				// bounds): said, never read whole instead.
				e.inc.Drop(t.Path)
				in.id, in.verdict = sid, v
				return in
			case serr == nil && v.Status == Healthy && !in.ctx.typ.AppendOnly():
				// Rewritten whole by its app: its last-good copy is copied from the file.
				in.id, in.verdict, in.copyFrom = sid, v, true
				return in
			case serr == nil && v.Status == Healthy && sid.Size <= streamThreshold:
				// Its last-good copy is copied from the file, as it would be from its bytes
				// held whole.
				in.id, in.verdict, in.copyFrom = sid, v, true
				e.inc.Full.Add(1)
				e.remember(t.Path, in.ctx.typ, sid, fr)
				return in
			case serr == nil && v.Status == Damaged && sid.Size <= streamThreshold && !e.appPlanStreamed(in.ctx.typ, sid.Size):
				// Read whole below, and planned as such.
			case serr == nil && v.Status == Healthy:
				in.id, in.verdict = sid, v
				e.inc.Full.Add(1)
				e.remember(t.Path, in.ctx.typ, sid, fr)
				in.incremental = true // no bytes held: no last-good copy of a file this large
				return in
			case serr == nil && v.Status == Damaged && appStreamed(in.ctx.typ):
				// Planned streaming (bigplan.go), never read whole: not even up to the
				// streaming size, where its bytes would be held beside its last-good copy
				// only to be let go before the plan.
				if in.ctx.typ.AppendOnly() && sid.Size <= streamThreshold {
					e.inc.Full.Add(1) // as the pass over its bytes held whole counted it
				}
				e.inc.Drop(t.Path)
				in.id, in.verdict, in.big, in.bigEnd, in.front = sid, v, true, -1, fr
				return in // its last-good copy is read when a plan needs it (bigplan.go)
			case serr == nil && sid.Size > planLimit:
				in.id, in.verdict, in.tooLarge = sid, v, true
				e.inc.Drop(t.Path)
				return in
			}
		} else if v, lid, lerr := format.LargeVerdict(t.Path, planLimit); lerr == nil {
			in.id, in.verdict, in.tooLarge = lid, v, true
			return in
		}
		began = time.Now()
		data, id, err = fsio.ReadStable(t.Path, t.Rule.Limits.MaxFileSize)
	}
	switch {
	case err == nil:
		in.data, in.id, in.buf, in.at = data, id, buf, began
		in.verdict = format.Inspect(in.ctx.typ, in.ctx.fileRead(id, began), data)
		if in.verdict.Status == Healthy && in.ctx.typ.JSONL() {
			// A strict line-aligned prefix of its last-good copy, told from the copy's file,
			// never loaded (format.Inspect tells it of a copy held: the planner's).
			if n, pre, warning, err := e.prefixOfCopy(t.Path, in.ctx.typ, bytes.NewReader(data), id.Size); err == nil && pre {
				in.verdict = format.LostWrite(id.Size, n)
			} else if warning != "" {
				in.verdict.Warnings = append(in.verdict.Warnings, warning)
			}
		}
		// A damaged plain file or app document is planned from the file at every size
		// (bigplan.go): judged again from it, the bytes read let go.
		switch {
		case in.verdict.Status != Damaged || id.Size == 0:
		case in.ctx.typ.Plain() && (!e.heldPlans || id.Size > e.bigAbove()):
			if fromFile(in, func() bool { return e.inspectBig(t, in, 0) }) {
				return in
			}
		case doc && !e.heldPlans:
			if fromFile(in, func() bool { return e.inspectDoc(t, in, heal) }) {
				return in
			}
		}
		if in.ctx.typ.AppendOnly() {
			e.inc.Full.Add(1)
			if in.verdict.Status == Healthy && !e.oneShot {
				e.inc.Remember(t.Path, in.ctx.typ, id, data)
			} else {
				e.inc.Drop(t.Path)
			}
		}
		if in.verdict.Status == Damaged && (!e.heldPlans || e.appPlanStreamed(in.ctx.typ, id.Size) && id.Size > 0) {
			// Planned from the file (bigplan.go), as every damaged file is: the bytes read
			// are let go. (An empty one; a plain file or document its streamed judge could
			// not take up, gone or changed since: the planner finds it so.)
			in.data, in.big, in.bigEnd = nil, true, -1
		}
	case errors.Is(err, os.ErrNotExist) && t.Missing:
		in.missing = true
		if reason := missingSkip(&in.ctx); reason != "" {
			in.verdict = format.Skip("%s", reason)
		} else {
			in.verdict = format.Damage(format.KindMissing, -1, "file is missing but %s", missingEvidence(&in.ctx))
		}
	case errors.Is(err, os.ErrNotExist):
		in.verdict = format.Skip("file no longer exists")
	case errors.Is(err, fsio.ErrNotRegular):
		in.verdict = format.Skip("not a regular file")
	case errors.Is(err, fsio.ErrTooLarge):
		in.verdict = format.Unjudged("larger than max_file_size (%d bytes)", t.Rule.Limits.MaxFileSize)
	case errors.Is(err, fsio.ErrChanged):
		in.verdict = format.Wait("file changed while it was read")
	default:
		in.verdict = format.Unjudged("unreadable: %v", err)
	}
	return in
}

// fromFile has judge judge in's file from the file itself, the bytes in holds let go: true
// when it did. Else in is as it was, judged whole after all (a healthy stream the whole-file
// checks may yet call damaged, such as a strict line-aligned prefix of the last-good copy; a
// document that cannot be judged streaming).
func fromFile(in *inspection, judge func() bool) bool {
	held := *in
	*in = inspection{ctx: held.ctx}
	in.ctx.lastGood = nil
	if judge() {
		releaseRead(held.buf)
		return true
	}
	*in = held
	return false
}

// copyLonger: path's last-good copy is longer than size bytes.
func (e *Engine) copyLonger(path string, size int64) bool {
	n, ok := e.LastGood.Size(path)
	return ok && n > size
}

// release gives the buffer the file was read into back to the pool: call it once nothing
// reads the inspection's bytes any more (a verdict holds none of them).
func (in *inspection) release() {
	if in.buf != nil {
		releaseRead(in.buf)
		in.buf, in.data = nil, nil
	}
}

// inspectDoc judges an app's JSON document over the big-file size streaming (its checklist
// runs in one pass, element by element: format.DocChecker). A healthy one is not held (its
// last-good copy is copied from the file); a damaged one is planned from the file
// (bigplan.go). done is false when the caller is to read the file whole: one that cannot be
// judged streaming (a token longer than the stream's window) and is not over planLimit.
func (e *Engine) inspectDoc(t Target, in *inspection, heal bool) (done bool) {
	maxSize := t.Rule.Limits.MaxFileSize
	began := time.Now() // the version read was id from its open on (inspection.at)
	f, id, err := fsio.OpenRegular(t.Path)
	if err != nil {
		return false
	}
	defer f.Close()
	if maxSize > 0 && id.Size > maxSize {
		return false
	}
	// For a heal, a document with trailing bytes has its first value (the salvage) judged
	// in the same pass, and the sums its plan needs taken beside the rest of it: the
	// original's, and the value's on the way (a descriptor of their own).
	var v Verdict
	var j format.DocJudgement
	var sums *format.AsideHash
	if heal && t.Rule.Mode != policy.ModeObserve && !e.docTwoPass {
		v, j, err = format.JudgeDocFirstAt(in.ctx.typ, t.Path, f, id.Size, func(end int64) {
			if hf, err := fsio.Dup(f); err == nil {
				sums = format.HashAsideFileMark(hf, id.Size, end)
			}
		})
	} else {
		v, j, err = format.JudgeDocAt(in.ctx.typ, t.Path, f, id.Size)
	}
	keep := false
	defer func() {
		if sums != nil && !keep {
			sums.Stop()
		}
	}()
	if err != nil && id.Size <= planLimit {
		return false // judged whole
	}
	if err != nil {
		in.id, in.verdict, in.at = id, format.Unjudged("%d bytes: not judged streaming (%v), and too large to judge in memory", id.Size, err), began
		return true
	}
	if !fsio.StillSame(f, id) {
		in.verdict = format.Wait("file changed while it was read")
		return true
	}
	in.id, in.verdict, in.at = id, v, began
	switch v.Status {
	case Healthy:
		in.copyFrom = true
	case Damaged:
		in.big, in.bigEnd, in.docRecords = true, j.FirstEnd, j.Records
		if j.First != nil && j.FirstEnd > 0 {
			in.docFirst, in.docSums, keep = j.First, sums, sums != nil
		}
	}
	return true
}

// appStreamed: a damaged file of typ over the big-file size is planned streaming
// (bigplan.go) though its app has a checklist — its verdict is reached record by record,
// and its salvage needs nothing but its lines (no finisher, no archive, no linked file).
func appStreamed(typ format.Profile) bool {
	if typ.Plain() || !format.StreamJudged(typ) {
		return false
	}
	_, fin := typ.(format.SalvageFinisher)
	if _, ok := typ.(format.StreamFinisher); ok {
		fin = false // finished streaming, or on the file held whole when it changes the salvage
	}
	return !fin
}

// missingSkip: a missing file its profile would not judge anyway (another era of the app).
func missingSkip(c *fileCtx) string {
	if s, ok := c.typ.(format.Skipper); ok {
		return s.SkipReason(c.path, nil)
	}
	return ""
}

func missingEvidence(c *fileCtx) string {
	if d, ok := c.typ.(format.MissingDetector); ok {
		return d.MissingEvidence()
	}
	if _, ok := c.typ.(format.Resurrectable); ok {
		return "it was seen healthy and its app deletes sessions it cannot list"
	}
	return "backups show it existed"
}

// inspectTorn is format.InspectTorn of the file at path, the version it judged (sid).
func inspectTorn(path string, typ format.Profile) (v Verdict, sid Identity, tc format.TornCut, ok bool, err error) {
	f, sid, err := fsio.OpenRegular(path)
	if err != nil {
		return v, sid, tc, false, err
	}
	defer f.Close()
	if v, tc, ok, err = format.InspectTorn(typ, path, f, sid.Size); err != nil || !ok {
		return v, sid, tc, false, err
	}
	if !fsio.StillSame(f, sid) {
		return v, sid, tc, false, nil // judged the usual way, which says it changed
	}
	return v, sid, tc, true, nil
}

// remember records a big append-only log judged healthy in full (sid) in the daemon's
// incremental cache; one its app wrote lately, with what a torn line appended later is cut
// from (format.AppendCache.RememberTail: a pass over it for its sha256), and the state its
// judge's pass left at its end (end), which the judge of a salvage of damage appended later
// goes on from.
func (e *Engine) remember(path string, typ format.Profile, sid Identity, end *format.Front) {
	switch {
	case e.oneShot:
	case appStreamed(typ) && sid.Size > e.appBigAbove() && time.Since(sid.Mtime) <= coldAfter:
		e.inc.RememberTail(path, typ, sid, end)
	default:
		e.inc.RememberFile(path, typ, sid)
	}
}
