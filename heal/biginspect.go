package heal

import (
	"github.com/sessionmedic/sessionmedic/heal/format"
	"github.com/sessionmedic/sessionmedic/heal/fsio"
	"github.com/sessionmedic/sessionmedic/policy"
)

// Big files (DESIGN §10: memory stays bounded whatever the file's size). A damaged generic JSON
// or JSONL file larger than bigFile is judged, planned and healed from the file itself, never
// held in memory: its salvage is described as the bytes of the original it keeps (a JSON
// document's first value, a JSONL file's valid lines, the bytes after a byte order mark), and
// every step of the heal protocol that needs those bytes — the quarantine copy, the hashes of
// the journal, the temp file, the put-back of an app's late write, the verification — streams
// them from the original's descriptor. The result is byte for byte what the in-memory plan
// would write. Candidates from elsewhere (a backup, the last-good copy, itself bounded by
// last_good.max_file_bytes) stay in memory; the salvage+last-good union is not planned for a
// big file (it would index every record of the file).
//
// So is an app's transcript whose checklist runs record by record (appStreamed: Claude Code,
// Codex, pi, Qwen Code, Copilot CLI, OpenClaw): its salvage (records split out of glued
// lines, rejoined, repeats dropped) is a splice of the original (format.PlanKeep: only the
// damaged lines are held, a run at a time), judged streaming (format.InspectAt). The
// strategies that rewrite records (rebuild-header, drop-invalid-entries, add-ordinals,
// restore-fields, reconcile) and the union are planned on the file held whole, up to
// planLimit, when streaming finds no repair or when both salvage and the last-good copy apply.
const bigFile = 8 << 20

// A damaged app transcript judged record by record (appStreamed), and a damaged app
// document, is planned from the file at every size: its streamed plan is the one made on
// its bytes held whole (TestAppBigPathMatchesInMemory, TestAppDocumentsJudgedStreaming),
// which only planWhole still makes. appBigFile is the size above which such a log's torn
// tail is cut in place (a smaller one is replaced whole, its whole original quarantined, as
// a document up to bigFile is), its last-good copy copied from the file, and the daemon
// keeps the state a torn tail is cut from (AppendCache.RememberTail).
const appBigFile = 1 << 20

// appPlanStreamed: a damaged app log of typ and size bytes is planned from the file.
func (e *Engine) appPlanStreamed(typ format.Profile, size int64) bool {
	return appStreamed(typ) && (!e.heldPlans || size > e.appBigAbove())
}

// bigAbove is the size above which a file is planned streaming.
func (e *Engine) bigAbove() int64 {
	if e.bigThreshold > 0 {
		return e.bigThreshold
	}
	return bigFile
}

// appBigAbove is bigAbove for an app transcript judged record by record (appStreamed).
func (e *Engine) appBigAbove() int64 {
	if e.bigThreshold > 0 {
		return e.bigThreshold
	}
	return appBigFile
}

// holdAbove is the size above which a log judged record by record is judged streaming.
func (e *Engine) holdAbove() int64 {
	if e.holdThreshold > 0 {
		return e.holdThreshold
	}
	return holdLimit
}

// wholeLimit is the largest plain JSON or JSONL file read whole: a healthy one needs its
// bytes up to there (JSONL: the line-aligned prefix check against last-good; JSON: its
// last-good copy), and a larger one is judged streaming.
func (e *Engine) wholeLimit(r *policy.Rule, typ format.Profile) int64 {
	if typ.JSONL() {
		return streamThreshold
	}
	if lg := e.LastGood.MaxFileBytes; r.KeepLastGood && r.Mode != policy.ModeObserve {
		if lg == 0 {
			return planLimit
		}
		return min(lg, planLimit)
	}
	return e.bigAbove()
}

// inspectBig judges a big-eligible file over the big size streaming. done is false when the
// caller is to go on with its own reading: the file is small, not there, not regular, over
// max_file_size, cannot be judged streaming, or is healthy and wanted whole (for its last-good
// copy, or for the JSONL checks against that copy).
func (e *Engine) inspectBig(t Target, in *inspection) (done bool) {
	maxSize := t.Rule.Limits.MaxFileSize
	f, id, err := fsio.OpenRegular(t.Path)
	if err != nil {
		return false
	}
	defer f.Close()
	if id.Size <= e.bigAbove() || (maxSize > 0 && id.Size > maxSize) {
		return false
	}
	v, firstEnd, err := format.StreamVerdict(f, 0, id.Size, in.ctx.typ)
	if err != nil {
		return false
	}
	if !fsio.StillSame(f, id) {
		in.verdict = format.Wait("file changed while it was read")
		return true
	}
	if v.Status == Healthy {
		if in.ctx.typ.JSONL() {
			if id.Size <= streamThreshold {
				return false // read whole: the line-aligned prefix check against last-good
			}
			if !e.oneShot {
				e.inc.RememberFile(t.Path, in.ctx.typ, id)
			}
		} else if lg := e.LastGood.MaxFileBytes; t.Rule.KeepLastGood && t.Rule.Mode != policy.ModeObserve && (lg == 0 || id.Size <= lg) && id.Size <= planLimit {
			return false // read whole for the last-good copy
		}
		in.id, in.verdict, in.incremental = id, v, true // no bytes held
		if in.ctx.typ.AppendOnly() {
			e.inc.Full.Add(1)
		}
		return true
	}
	if in.ctx.typ.AppendOnly() {
		e.inc.Full.Add(1)
	}
	e.inc.Drop(t.Path)
	in.id, in.verdict, in.big, in.bigEnd = id, v, true, firstEnd
	return true
}
