package heal

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"sync"

	"github.com/sessionmedic/sessionmedic/heal/format"
	"github.com/sessionmedic/sessionmedic/heal/fsio"
	"github.com/sessionmedic/sessionmedic/heal/jsonv"
	"github.com/sessionmedic/sessionmedic/internal/panics"
	"github.com/sessionmedic/sessionmedic/policy"
)

// memCand is a candidate held in memory (a backup, the last-good copy).
type memCand struct {
	strategy policy.Strategy
	*format.SurveyCand
	file   *fileCand      // the candidate measured from its file (SurveyCand.File), not held
	splice *format.Splice // ... a union: a splice of that file (records file.records)
}

// makeBigPlans plans the repair of a damaged file from the file (every one but a missing
// file's restore): the strategies of the rule in its order, with the results the tests'
// reference on held bytes gives (heldplan_test.go), except that salvage+last-good is not
// offered where the salvaged records the copy lacks are over unionBudget.
func (e *Engine) makeBigPlans(rule *policy.Rule, in *inspection) ([]*plan, []try, error) {
	c := &in.ctx
	// The inspection's pass at its first damaged line: planned from once (its checklist's
	// state is let go with the plan).
	front := in.front
	in.front = nil
	// A document's first value judged in the inspection's pass, and the sums taken beside it
	// (stopped unless the plan takes them).
	docFirst, docSums := in.docFirst, in.docSums
	in.docFirst, in.docSums = nil, nil
	if docSums != nil {
		defer docSums.Stop()
	}
	crossFile := in.verdict.Kind == format.KindDanglingReference || in.verdict.Kind == format.KindStaleLiveRecords || in.verdict.Kind == format.KindMetadataLag
	var cands []memCand
	var surveyed []*format.SurveyCand
	var backupWhy, lastGoodWhy string
	doc := format.IsDocument(c.typ)
	var fileBackup, fileLastGood *fileCand
	// An app's log whose rule salvages before it falls back to the last-good copy: the copy
	// is looked at once the salvage is planned, for a copy the salvage keeps whole (see
	// keepsLastGood) is neither judged nor measured. Until then it is not held (Engine.Heal
	// leaves it on disk): loadLastGood reads it whole where a plan needs it so.
	appSalvage := !c.typ.Plain() && !doc && slices.Contains(rule.Strategies, policy.Salvage)
	lgAfterSalvage := appSalvage && !crossFile && before(rule.Strategies, policy.Salvage, policy.LastGoodCopy) &&
		(c.lastGood != nil || e.LastGood.Has(c.path))
	// A plain JSONL file's copy larger than a file held whole is judged, measured and copied
	// from its file, as is its union with the salvage.
	plainLog := c.typ.Plain() && c.typ.JSONL()
	plainJSON := c.typ.Plain() && !c.typ.JSONL() // a plain document's copies: as an app document's
	lgPlainFromFile := false
	loadLastGood := func() {
		if c.lastGood == nil && !doc {
			c.lastGood = e.LastGood.Load(c.path)
		}
	}
	for _, s := range rule.Strategies {
		if crossFile && (s == "backup" || s == "last-good") {
			continue
		}
		var data []byte
		switch s {
		case policy.Backup:
			if doc || plainJSON {
				// A big backup of a document is judged and copied from its file.
				data, fileBackup, backupWhy = e.docBackup(rule, c)
				break
			}
			// A big backup of a log is judged, measured and copied from its file.
			var bf *os.File
			var fc *fileCand
			if data, bf, fc, backupWhy = e.logBackup(rule, c); bf != nil {
				defer bf.Close()
				mc := memCand{strategy: s, SurveyCand: &format.SurveyCand{File: bf, Size: fc.id.Size}, file: fc}
				cands = append(cands, mc)
				surveyed = append(surveyed, mc.SurveyCand)
				e.step("backup-from-file", c.path)
			}
		case policy.LastGoodCopy:
			if (doc || plainJSON) && c.lastGood == nil {
				data, fileLastGood, lastGoodWhy = e.docLastGood(c)
				break
			}
			if lgAfterSalvage {
				break // judged once the salvage is planned (below)
			}
			if plainLog && c.lastGood == nil && e.bigCopy(c) {
				lgPlainFromFile = true
				break // judged and measured from its file once the file is open (below)
			}
			loadLastGood()
			switch lg := c.lastGood; {
			case lg == nil:
				lastGoodWhy = whyNoLastGood
			case !heldOK(c, lg):
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
	bomRecords := 0 // an app document's
	if in.verdict.Kind == format.KindBOM {
		v, n, err := judgeStreamedDoc(c, f, 3, size)
		if err != nil {
			return nil, nil, err
		}
		bomLess, bomLessV, bomRecords = v.Status == Healthy, v, n
	}
	// An app's salvage (its checklist's records split, rejoined, repeats dropped), planned
	// as a splice of the original.
	var keep *format.Splice
	var keepFig format.KeepFigures
	var keepSHA, keepWhy, oldSHA string
	keepOK := false     // keep is a plan: judged healthy (keepSHA its sum, unless taken later)
	unfinished := false // the app's finish could not be read streaming: the rewrites of the salvage are not streamed
	var keepFails *Verdict
	var finCand *format.SurveyCand // the salvage the app's finish changed, measured by the survey
	var oldSum *format.AsideHash   // the original's sum, taken beside the salvage's planning
	oldPending := false            // ... and beside the new file's write: the plans' (bigEdit.oldSum)
	if appSalvage {
		var err error
		// An app whose load finishes a salvage (format.StreamFinisher) has it replayed as the
		// app would, beside its judge: two passes over the salvage, on two CPUs where there
		// are two. A finish's done is closed once sp (the lines the finish drops, a splice
		// of the salvage; nil: none) and err are set; every finish started is waited for on
		// every return (f is closed only after it).
		fin, finishes := c.typ.(format.StreamFinisher)
		type finish = finishRun
		var started []*finish
		defer func() {
			for _, fi := range started {
				<-fi.done
			}
			for _, fi := range started {
				fi.caught.Rethrow()
			}
		}()
		startFinish := func(k *format.Splice) *finish {
			fi := &finish{done: make(chan struct{})}
			started = append(started, fi)
			go func() {
				defer close(fi.done)
				defer fi.caught.Capture()
				fi.sp, fi.err = fin.FinishSplice(c.path, f, size, k.At(f), k.Size())
			}()
			return fi
		}
		// A torn last line is cut from the file planned and judged in one pass
		// (format.PlanTornCut), and replayed beside it: a cut it plans keeps exactly the
		// bytes before the torn line. Other damage is planned, the original hashed in the
		// same read (the journal's and the quarantine's sum), and the result judged after.
		var tc format.TornCut
		var fi *finish
		cut := false
		x := in.verdict.Offset // the torn line's start
		if in.verdict.Kind == format.KindTruncated && x > 0 {
			if fi = in.finish.adopt(in.id, x); fi != nil {
				started = append(started, fi) // begun beside the inspection's judge
				e.step("finish-adopted", c.path)
			} else if finishes {
				pre := &format.Splice{}
				pre.AddRange(0, x)
				fi = startFinish(pre)
			}
			if in.tornCut != nil {
				tc, cut = *in.tornCut, true // planned as it was judged
				e.step("torn-cut-judged", c.path)
			} else if tc, cut, err = format.PlanTornCut(c.typ, c.path, f, size, x); err != nil {
				return nil, nil, err
			}
			keep, keepFig, oldSHA = tc.Keep, tc.Fig, tc.OldSHA
		} else if in.tornCut != nil {
			// Damage appended to a log the daemon knows, salvaged from what it knows
			// (format.AppendCache.TrySalvage): planned and hashed as it was judged.
			tc, cut = *in.tornCut, true
			keep, keepFig, oldSHA = tc.Keep, tc.Fig, tc.OldSHA
		}
		if cut && tc.Verdict.Status == "" {
			// A salvage planned from what the daemon knows (TrySalvage; its first refused
			// line may be a torn last one): its result judged here, its sum known — from
			// the end of the bytes the daemon remembers where it kept its checklist's state
			// there; what the judge reaches at the result's end is kept for the appends to
			// the healed file.
			step := "salvage-judged"
			if in.tornCut.Resumed() {
				step = "salvage-judged-from-state"
			}
			if tc.Verdict, err = in.tornCut.JudgeResult(c.typ, c.path, f); err != nil {
				return nil, nil, err
			}
			e.step(step, c.path)
		}
		if !cut {
			// The original is hashed beside the planning rather than in its read: the
			// salvage's walk, then the judge of its result (with its own sum), take a core;
			// the original's sum the other, through both, and, for a replace, through the
			// new file's write (see below). It reads a descriptor of its own.
			hf, err := fsio.Dup(f)
			if err != nil {
				return nil, nil, err
			}
			oldSum = format.HashAsideFile(hf, size)
			defer func() {
				if !oldPending {
					oldSum.Stop()
				}
			}()
			if keep, keepFig, err = format.PlanKeepAfter(front, c.typ, c.path, f, size); err != nil {
				return nil, nil, err
			}
			// The replay started beside the cut is this salvage's when it is the same
			// bytes, the ones before the torn line.
			if fi != nil && (keep == nil || !keep.Prefix() || keep.Size() != x) {
				fi = nil
			}
			if finishes && keep != nil && fi == nil {
				fi = startFinish(keep)
			}
		}
		v, sum := tc.Verdict, tc.KeepSHA
		switch {
		case keep == nil || cut:
		case !keep.Prefix() && keep.Size() > e.bigFor(c.typ):
			// A big replace: judged here, hashed beside the kernel's copy of it into the new
			// file, where the write leaves a CPU idle; the journal is told the sum before the
			// rename.
			if v, err = format.InspectAfter(front, c.typ, c.path, f, keep); err != nil {
				return nil, nil, err
			}
		default:
			// Judged, and hashed for the journal (and a cut's quarantine entry), in one read.
			if v, sum, err = format.InspectSumAfter(front, c.typ, c.path, f, keep); err != nil {
				return nil, nil, err
			}
		}
		judged := func(v Verdict, sum string) {
			switch {
			case keep == nil:
				keepWhy = noSalvage(c, false)
			case keep.Prefix() && keep.Size() == size:
				keepWhy = whyNothingToDrop // the file itself, as the reference on held bytes says
			case v.Status != Healthy:
				keepWhy, keepFails = whyFails, &v
			case !keepsPrefixAt(c, keep):
				keepWhy = whyForkPrefix
			default:
				keepSHA, keepOK = sum, true
			}
		}
		judged(v, sum)
		if fi != nil {
			<-fi.done
			fi.caught.Rethrow()
			switch {
			case errors.Is(fi.err, format.ErrNoStream):
				// A line no streaming reader takes: the salvage the app's finish would
				// change is not planned (nor the rewrites of it).
				keep, keepSHA, keepOK, keepWhy, keepFails = nil, "", false, whyNotStreamed, nil
				unfinished = true
			case fi.err != nil:
				return nil, nil, fi.err
			case fi.sp != nil:
				// The salvage the app's finish changes (lines dropped): judged, hashed and
				// counted again, and measured by the survey, as the reference on held bytes
				// measures a finished salvage (format.Loss).
				e.step("finish-streamed", c.path)
				keep, keepSHA, keepOK, keepWhy, keepFails = fi.sp.Through(keep), "", false, "", nil
				if v, sum, err = format.InspectSum(c.typ, c.path, keep.At(f), keep.Size()); err != nil {
					return nil, nil, err
				}
				judged(v, sum)
				if keepOK {
					if keepFig.Keep, err = format.RecordsAt(c.typ, keep.At(f), keep.Size()); err != nil {
						return nil, nil, err
					}
					finCand = &format.SurveyCand{File: keep.At(f), Size: keep.Size()}
					surveyed = append(surveyed, finCand)
				}
			}
		}
	}
	// The union of the copy and the salvage (the in-memory last-good planner's extra plan),
	// held as a candidate beside the copy: the copy and the salvaged records it lacks, up to
	// unionBudget of them.
	var union *memCand
	var lgFile *os.File // the copy, measured from its file
	if lgAfterSalvage {
		dominated, err := e.keepsLastGood(f, keep, keepOK, c)
		outkept := false
		var uc countedCopy
		if err == nil && !dominated {
			outkept, uc, err = e.outkeepsLastGood(f, keep, keepOK, keepFig.Keep, c)
		}
		// A copy the counts measured is judged and measured from its file, never held, and
		// its union with the salvage is a splice of that file and the records it adds.
		if err == nil && !dominated && !outkept && c.lastGood == nil && appStreamed(c.typ) && uc.Exact {
			var fc *fileCand
			var why string
			if lgFile, fc, why = e.lastGoodFile(c, uc.Copy, uc.id); lgFile != nil {
				defer lgFile.Close()
				mc := memCand{strategy: policy.LastGoodCopy, SurveyCand: &format.SurveyCand{File: lgFile, Size: fc.id.Size}, file: fc}
				cands = append(cands, mc)
				surveyed = append(surveyed, mc.SurveyCand)
				e.step("last-good-from-file", c.path)
				if uc.Made && !uc.Same {
					if union, err = fileUnion(c, lgFile, fc, keep.At(f), keep.Size(), uc.Union); err != nil {
						return nil, nil, err
					}
					if union != nil {
						surveyed = append(surveyed, union.SurveyCand)
						e.step("union-from-file", c.path)
					}
				}
			}
			lastGoodWhy = why
		}
		if err == nil && !dominated && !outkept && lgFile == nil && lastGoodWhy == "" {
			loadLastGood()
		}
		switch lg := c.lastGood; {
		case err != nil:
			return nil, nil, err
		case dominated:
			lastGoodWhy = whyLastGoodKept
		case outkept:
			lastGoodWhy = whyLastGoodFewer
			e.step("last-good-outkept", c.path)
		case lgFile != nil || lastGoodWhy != "":
			// measured from its file, or said why not
		case lg == nil:
			lastGoodWhy = whyNoLastGood
		case !heldOK(c, lg):
			lastGoodWhy = whyLastGoodFails
		default:
			mc := memCand{strategy: policy.LastGoodCopy, SurveyCand: &format.SurveyCand{Data: lg}}
			cands = append(cands, mc)
			surveyed = append(surveyed, mc.SurveyCand)
			if keep == nil || uc.Exact && (!uc.Made || uc.Same) {
				break // no union, or the copy itself: not built
			}
			if union, err = heldUnion(c, lg, keep.At(f), keep.Size()); err != nil {
				return nil, nil, err
			}
			if union != nil {
				surveyed = append(surveyed, union.SurveyCand)
			}
		}
	}
	if lgPlainFromFile {
		var fc *fileCand
		var cf *os.File
		var sc *standIn
		if cf, sc, lastGoodWhy = e.lastGoodFileStandIn(c); cf != nil {
			defer cf.Close()
			fc = &fileCand{path: sc.src.Path, id: sc.src.ID, records: sc.records, sum: sc.sum}
			var err error
			if before(rule.Strategies, policy.Salvage, policy.LastGoodCopy) {
				var sp *format.Splice
				if sp, err = format.ValidLinesSplice(c.typ, f, size); err != nil {
					return nil, nil, err
				}
				if sp.Size() > 0 { // a salvage that keeps nothing is none: no union with it
					union, err = fileUnion(c, cf, fc, sp.At(f), sp.Size(), -1)
				}
			}
			switch {
			case errors.Is(err, format.ErrHoldCandidate):
				// A line of the copy over the line window: the copy is held, as it was, and
				// so is its union (below).
				union = nil
				if loadLastGood(); c.lastGood == nil {
					return nil, nil, busyErr("the last-good copy of %s changed while it was measured", in.ctx.path)
				}
				mc := memCand{strategy: policy.LastGoodCopy, SurveyCand: &format.SurveyCand{Data: c.lastGood}}
				cands = append(cands, mc)
				surveyed = append(surveyed, mc.SurveyCand)
			case err != nil:
				return nil, nil, err
			default:
				lgFile = cf
				mc := memCand{strategy: policy.LastGoodCopy, SurveyCand: &format.SurveyCand{File: lgFile, Size: fc.id.Size}, file: fc}
				cands = append(cands, mc)
				surveyed = append(surveyed, mc.SurveyCand)
				e.step("last-good-from-file", c.path)
				if union != nil {
					surveyed = append(surveyed, union.SurveyCand)
					e.step("union-from-file", c.path)
				}
			}
		}
	}
	// A plain JSONL file's union of the copy and its salvage (its valid lines), as the
	// in-memory last-good planner offers it: the copy and the salvaged records it lacks, up
	// to unionBudget of them.
	if plainLog && before(rule.Strategies, policy.Salvage, policy.LastGoodCopy) {
		if lg := c.lastGood; lg != nil && heldOK(c, lg) {
			sp, err := format.ValidLinesSplice(c.typ, f, size)
			if err != nil {
				return nil, nil, err
			}
			// A salvage that keeps nothing is none: no union with it (as in memory).
			if sp.Size() > 0 {
				if union, err = heldUnion(c, lg, sp.At(f), sp.Size()); err != nil {
					return nil, nil, err
				}
			}
			if union != nil {
				surveyed = append(surveyed, union.SurveyCand)
			}
		}
	}
	// An app document's salvage is its first value (the bytes before trailing garbage), as a
	// plain document's, when its checklist passes it: judged beside the survey's pass below
	// (each reads the file, on a core of its own).
	var valueV *Verdict
	valueRecords := 0
	valueJudged := func() error { return nil }
	if doc && in.bigEnd > 0 && docFirst != nil {
		valueV, valueRecords = &docFirst.Verdict, docFirst.Records
		e.step("value-judged-in-pass", c.path)
	} else if doc && in.bigEnd > 0 && slices.Contains(rule.Strategies, policy.Salvage) {
		judged := make(chan error, 1)
		var caught panics.Slot // the judge's panic, raised again where it is waited for
		go func() {
			var err error
			defer func() { judged <- err }()
			defer caught.Capture()
			// The value is one a syntax pass found valid (the inspection's): its checklist
			// walks it alone.
			var v Verdict
			var j format.DocJudgement
			v, j, err = format.JudgeValidDocAt(c.typ, c.path, io.NewSectionReader(f, 0, in.bigEnd), in.bigEnd)
			valueV, valueRecords = &v, j.Records
		}()
		valueJudged = sync.OnceValue(func() error {
			err := <-judged
			caught.Rethrow()
			return err
		})
		defer valueJudged()
	}
	// A JSONL app log's line rewrites, planned as splices of it and measured by the survey.
	var rewrites map[policy.Strategy]*lineRewrite
	if !doc && !c.typ.Plain() {
		if rewrites, err = lineRewrites(rule, in, f, keep, unfinished); err != nil {
			return nil, nil, err
		}
		for _, lr := range rewrites {
			if lr.cand != nil {
				surveyed = append(surveyed, lr.cand)
			}
		}
	}
	// One pass over the original measures what the plans need, unless an app's salvage
	// pass already hashed it and nothing else needs measuring.
	var sv format.SurveyResult
	var gone func(*jsonv.Value) bool // a log's records kept elsewhere: a candidate lacking them loses nothing
	if s, ok := c.typ.(format.Superseder); ok && !doc && len(surveyed) > 0 {
		gone = s.Superseded(c.path)
	}
	if oldSum != nil {
		if keepOK && keepSHA == "" && len(surveyed) == 0 && !bomLess {
			// A replace, nothing else to measure: the original's sum is waited for only
			// once the new file is written, before its quarantine and its rename (apply).
			oldPending = true
		} else {
			if oldSHA, err = oldSum.Wait(); err != nil {
				return nil, nil, err
			}
			// A replace's sum, taken as it is written, goes on from the original's as far
			// as the result starts with it.
			if keepOK && keepSHA == "" {
				keep.ResumeSum(oldSum.StateBefore(keep.FirstKept()))
			}
		}
	}
	if (oldSHA != "" || oldPending) && len(surveyed) == 0 && !bomLess {
		sv.OldSHA, sv.Total = oldSHA, keepFig.Total
		if !fsio.StillSame(f, in.id) {
			err = fsio.ErrChanged
		}
	} else if doc && docSums != nil && len(surveyed) == 0 && !bomLess {
		// A document's first value, nothing else to measure: its sum and the original's
		// were taken beside the inspection's pass.
		if sv.OldSHA, err = docSums.Wait(); err == nil {
			sv.ValueSHA = docSums.MarkSum()
			if !fsio.StillSame(f, in.id) {
				err = fsio.ErrChanged
			}
		}
	} else {
		survey := func() (format.SurveyResult, error) {
			return format.Survey(f, size, c.typ, format.SurveyOptions{
				FirstValueEnd: in.bigEnd,
				BOMLess:       bomLess,
				Unchanged:     func() bool { return fsio.StillSame(f, in.id) },
				OwnSalvage:    !c.typ.Plain() && !doc,
				Gone:          gone,
				OldSHA:        oldSHA,
			}, surveyed)
		}
		sv, err = survey()
		if errors.Is(err, format.ErrHoldCandidate) {
			// A copy its file could not measure (many searches of it) is measured held, as
			// it was before, and so is its union; so is a line rewrite.
			for _, lr := range rewrites {
				if lr.cand != nil {
					b, err := lr.sp.Bytes(f)
					if err != nil {
						return nil, nil, err
					}
					lr.cand.Data, lr.cand.File = b, nil
				}
			}
			if lgFile != nil {
				loadLastGood()
				if c.lastGood == nil {
					return nil, nil, busyErr("the last-good copy of %s changed while it was measured", in.ctx.path)
				}
			}
			for i := range cands {
				switch fc := cands[i].file; {
				case fc == nil:
				case cands[i].strategy == policy.Backup:
					b, id, err := fsio.ReadStable(fc.path, 0)
					if err != nil || !id.Same(fc.id) {
						return nil, nil, busyErr("the backup %s of %s changed while it was measured", fc.path, in.ctx.path)
					}
					cands[i].Data, cands[i].File, cands[i].file = b, nil, nil
				default:
					cands[i].Data, cands[i].File, cands[i].file = c.lastGood, nil, nil
				}
			}
			if union != nil && union.splice != nil {
				b, err := union.splice.Bytes(lgFile)
				if err != nil {
					return nil, nil, err
				}
				union.Data, union.File, union.file, union.splice = b, nil, nil, nil
			}
			sv, err = survey()
		}
	}
	if jerr := valueJudged(); jerr != nil {
		return nil, nil, jerr // as when it was judged before the survey
	}
	if errors.Is(err, format.ErrNoStream) {
		return nil, nil, fmt.Errorf("%s: %s: not repaired (its bytes are as they were)", in.ctx.path, whyNotStreamed)
	}
	if errors.Is(err, fsio.ErrChanged) {
		return nil, nil, busyErr("%s changed since it was read", in.ctx.path)
	}
	if err != nil {
		return nil, nil, err
	}
	small := size <= e.bigFor(c.typ)
	bigPlan := func(s policy.Strategy, src fsio.Content, newSHA string, newSize int64, prefix bool) *plan {
		var pending *format.AsideHash
		if oldPending {
			pending = oldSum
		}
		return &plan{strategy: s, edits: []edit{{path: c.path, oldID: in.id,
			big: &bigEdit{src: src, oldSHA: sv.OldSHA, oldSum: pending, newSHA: newSHA, newSize: newSize, prefix: prefix, small: small}}}}
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
		case policy.CleanTemp, policy.Reindex, policy.RestoreSnapshot:
			continue // a temp's, a SQLite store's (sqlite.go)
		case policy.Salvage:
			tr.why = noSalvage(c, false)
		case policy.Reconcile, policy.DropInvalidEntries, policy.RestoreFields, policy.AddOrdinals, policy.RebuildHeader:
			if doc && unparsed(in.verdict.Kind) {
				// They rewrite a document that parses: asked of one that does not, they say
				// why not.
				tr.why = rewriteWhy(s, c, false)
				break
			}
			if doc {
				// A document's rewrite is a splice of it (format.SpliceReconciler …).
				var err error
				if p, tr, err = e.docRewrite(in, f, s, bigPlan); err != nil {
					return nil, nil, err
				}
				break
			}
			lr := rewrites[s]
			switch {
			case lr == nil:
				tr.why = "" // not a rewrite of this format: not applicable
			case !lr.notStreamed:
				p, tr = lr.plan(s, size, sv, bigPlan)
			}
			// else a line no streaming reader takes: tr.why says so
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
			if !c.typ.Plain() && !doc {
				tr.why, tr.fails = keepWhy, keepFails
				if keepOK {
					p = bigPlan(s, keep, keepSHA, keep.Size(), keep.Prefix())
					p.edits[0].big.sumLater = keepSHA == ""
					p.keep, p.total, p.lostRecords, p.lostBytes = keepFig.Keep, keepFig.Total, keepFig.Lost, keepFig.LostBytes
					if finCand != nil {
						p.total, p.lostRecords, p.lostBytes = sv.Total, finCand.Lost, finCand.LostBytes
					}
				}
			} else if c.typ.JSONL() && sv.SalvKeep > 0 {
				p = bigPlan(s, format.ValidLines{Profile: c.typ, Size: size}, sv.SalvSHA, sv.SalvSize, sv.SalvPrefix)
				p.keep, p.total, p.lostRecords, p.lostBytes = sv.SalvKeep, sv.Total, sv.SalvLost, sv.SalvLostBytes
			} else if valueV != nil && valueV.Status != Healthy {
				tr.why, tr.fails = whyFails, valueV
			} else if sv.ValueSHA != "" {
				p = bigPlan(s, fsio.Range{Off: 0, N: in.bigEnd}, sv.ValueSHA, in.bigEnd, true)
				p.keep = format.JSONRecords(sv.ValueFirst)
				if doc {
					p.keep = valueRecords
				}
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
				} else if doc {
					p.keep = bomRecords
				} else {
					p.keep = format.JSONRecords(sv.NormFirst)
				}
			}
		case policy.Backup, policy.LastGoodCopy:
			fc := fileBackup
			if s == policy.LastGoodCopy {
				fc = fileLastGood
			}
			if fc != nil {
				var err error
				if p, err = fileCandPlan(in, f, s, fc, bigPlan); err != nil {
					return nil, nil, err
				}
			}
			for _, mc := range cands {
				if mc.strategy != s {
					continue
				}
				if mc.file != nil {
					// Measured from its file: written from it (hashed when it was judged).
					n := mc.file.id.Size
					p = bigPlan(s, fsio.FileAt{Path: mc.file.path, ID: mc.file.id}, mc.file.sum, n, mc.PrefixN == n)
					p.keep, p.total, p.lostRecords, p.lostBytes = mc.file.records, sv.Total, mc.Lost, mc.LostBytes
					continue
				}
				p = bigPlan(s, fsio.Bytes(mc.Data), sha(mc.Data), int64(len(mc.Data)), mc.PrefixN == int64(len(mc.Data)))
				p.edits[0].data = mc.Data
				p.keep = format.Records(c.typ, mc.Data)
				if c.typ.JSONL() {
					p.total, p.lostRecords, p.lostBytes = sv.Total, mc.Lost, mc.LostBytes
				} else {
					p.lostBytes = max(size-mc.PrefixN-mc.SuffixN, 0)
					// A damaged document that parses holds records the copy may lack (one
					// that does not parse holds none).
					if doc {
						p.total = in.docRecords
						p.lostRecords = max(p.total-p.keep, 0)
					}
				}
			}
		}
		if p != nil && p.edits[0].big.newSize == size && sv.OldSHA != "" && p.edits[0].big.newSHA == sv.OldSHA {
			// The file's own bytes (what it lacks is its damage: a lost write), as the
			// in-memory planner says.
			tr, p = try{strategy: s, why: whyUnchanged}, nil
			if s == policy.Salvage {
				tr.why = whyNothingToDrop
			}
		}
		var extra *plan
		if s == policy.LastGoodCopy && union != nil {
			if extra = unionPlan(c, union, sv.Total, bigPlan); extra != nil {
				out = append(out, extra) // before the copy's: ties go to it
			}
		}
		if p != nil {
			out = append(out, p)
			tr = try{strategy: s, plan: p}
		}
		tries = append(tries, tr)
		if extra != nil {
			tries = append(tries, try{strategy: extra.strategy, plan: extra})
		}
	}
	if l, ok := c.typ.(format.LinkedEditor); ok {
		// The other file a repair must match (a count of the records it keeps), as newPlan
		// adds it.
		for _, p := range out {
			if o, ok := l.LinkedEdit(c.path, p.keep); ok {
				p.edits = append(p.edits, edit{path: o.Path, old: o.Old, oldID: o.OldID, data: o.Data})
			}
		}
	}
	return out, tries, nil
}

// docRewrite plans strategy s, one of an app document's rewrites (reconcile,
// drop-invalid-entries, restore-fields), as a splice of the document f holds: judged, hashed
// and measured streaming, as the reference on held bytes judges and measures its bytes.
func (e *Engine) docRewrite(in *inspection, f *os.File, s policy.Strategy,
	bigPlan func(policy.Strategy, fsio.Content, string, int64, bool) *plan) (*plan, try, error) {
	c, size := &in.ctx, in.id.Size
	tr := try{strategy: s}
	var sp *format.Splice
	var err error
	switch s {
	case policy.Reconcile:
		tr.why = whyNoReconcile
		if r, ok := c.typ.(format.SpliceReconciler); ok && !in.missing {
			sp, err = r.ReconcileSplice(c.path, f, size, in.verdict.Kind)
		}
	case policy.DropInvalidEntries:
		if d, ok := c.typ.(format.SpliceDropper); ok && !in.missing {
			tr.why = whyNothingToDrop
			sp, err = d.DropInvalidSplice(f, size)
		}
	case policy.RestoreFields:
		if r, ok := c.typ.(format.SpliceRestorer); ok && !in.missing {
			if c.lastGood == nil {
				c.lastGood = e.LastGood.Load(c.path) // the fields are read from it whole
			}
			if c.lastGood == nil {
				tr.why = whyNoLastGood
				break
			}
			sp, err = r.RestoreFieldsSplice(c.path, f, size, c.lastGood)
		}
	}
	if err != nil || sp == nil {
		return nil, tr, err
	}
	res := sp.At(f)
	v, keep, err := judgeStreamedDoc(c, res, 0, sp.Size())
	if err != nil {
		return nil, tr, err
	}
	if v.Status != Healthy {
		tr.why, tr.fails = whyFails, &v
		return nil, tr, nil
	}
	sum, err := sp.WriteOut(io.Discard, f)
	if err != nil {
		return nil, tr, err
	}
	lost, err := format.DocLostBytes(f, size, res, sp.Size())
	if err != nil {
		return nil, tr, err
	}
	if !fsio.StillSame(f, in.id) {
		return nil, tr, busyErr("%s changed since it was read", c.path)
	}
	p := bigPlan(s, sp, sum, sp.Size(), sp.Prefix())
	p.keep, p.total, p.lostBytes = keep, in.docRecords, lost
	p.lostRecords = max(p.total-p.keep, 0)
	return p, try{strategy: s, plan: p}, nil
}

// fileCand is a candidate judged and read from its own file (a big backup or last-good
// copy of an app document).
type fileCand struct {
	path    string
	id      Identity
	records int
	sum     string // the hex sha256 of its bytes, where its judge read them (a last-good copy's)
}

// docCand reads the candidate at p (a backup, the last-good copy) of an app document: whole
// when it is small (data), else judged streaming from its file (fc), never held. found is
// false when it cannot be read (or is over limit, when limit is over 0); neither data nor fc
// when it fails the checklist (or cannot be judged).
func (e *Engine) docCand(c *fileCtx, p string, limit int64) (data []byte, fc *fileCand, found bool) {
	f, id, err := fsio.OpenRegular(p)
	if err != nil {
		return nil, nil, false
	}
	defer f.Close()
	if limit > 0 && id.Size > limit {
		return nil, nil, false
	}
	if id.Size <= e.bigAbove() {
		data, read := heldCand(c, f, id)
		return data, nil, read
	}
	e.step("candidate-from-file", c.path)
	v, j, err := format.JudgeDocAt(c.typ, c.path, f, id.Size)
	if err != nil || !fsio.StillSame(f, id) || v.Status != Healthy {
		return nil, nil, true
	}
	if c.typ.Plain() {
		// A plain document's records are as format.Records counts them: one object.
		if j.Records, err = plainRecords(f, id.Size); err != nil {
			return nil, nil, true
		}
	}
	return nil, &fileCand{path: p, id: id, records: j.Records}, true
}

// docBackup is fromBackup for an app document: the newest backup that passes the checklist
// (docCand).
func (e *Engine) docBackup(rule *policy.Rule, c *fileCtx) (data []byte, fc *fileCand, why string) {
	cands := backupPaths(rule, c)
	if len(cands) == 0 {
		return nil, nil, whyNoBackup
	}
	for _, p := range cands {
		if data, fc, _ := e.docCand(c, p, c.maxSize); data != nil || fc != nil {
			return data, fc, ""
		}
	}
	return nil, nil, whyBackupsFail
}

// bigCopy: c's last-good copy is larger than a file of its format held whole.
func (e *Engine) bigCopy(c *fileCtx) bool {
	n, ok := e.LastGood.Size(c.path)
	return ok && n > e.bigFor(c.typ)
}

// logBackup is fromBackup for a log or a plain file: the newest backup that passes the
// file's checklist. A JSONL one larger than a file of its format held whole is judged from
// its file (judgeStandIn), which is returned open for the survey to measure it from (bf,
// fc), never held; any other is read whole, as fromBackup reads it (data).
func (e *Engine) logBackup(rule *policy.Rule, c *fileCtx) (data []byte, bf *os.File, fc *fileCand, why string) {
	cands := backupPaths(rule, c)
	if len(cands) == 0 {
		return nil, nil, nil, whyNoBackup
	}
	for _, p := range cands {
		f, id := openStandIn(p, c.maxSize)
		if f == nil {
			continue
		}
		if !c.typ.JSONL() || id.Size <= e.bigFor(c.typ) {
			data, _ := heldCand(c, f, id)
			f.Close()
			if data != nil {
				return data, nil, nil, ""
			}
			continue
		}
		sc, err := judgeStandIn(c, f, p, id, nil, f, id.Size)
		if err == nil && sc.verdict.Status == Healthy {
			return nil, f, &fileCand{path: p, id: id, records: sc.records, sum: sc.sum}, ""
		}
		f.Close()
	}
	return nil, nil, nil, whyBackupsFail
}

// docLastGood is the last-good candidate of an app document (docCand of its copy).
func (e *Engine) docLastGood(c *fileCtx) (data []byte, fc *fileCand, why string) {
	p := e.LastGood.Path(c.path)
	if p == "" {
		return nil, nil, whyNoLastGood
	}
	data, fc, found := e.docCand(c, p, 0) // a copy of any size, as the planner held whole reads it
	switch {
	case !found:
		return nil, nil, whyNoLastGood
	case data == nil && fc == nil:
		return nil, nil, whyLastGoodFails
	}
	c.lastGood = data // a small copy is held, as the other planners hold it
	return data, fc, ""
}

// fileCandPlan is strategy s's plan that copies fc's file (a backup, the last-good copy)
// over the document f holds, measured against it streaming as the reference on held bytes
// measures the candidate's bytes.
func fileCandPlan(in *inspection, f *os.File, s policy.Strategy, fc *fileCand,
	bigPlan func(policy.Strategy, fsio.Content, string, int64, bool) *plan) (*plan, error) {
	bf, err := fsio.OpenStable(fc.path, fc.id)
	if err != nil {
		return nil, nil // gone or changed since it was judged: no plan
	}
	defer bf.Close()
	src := fsio.FileAt{Path: fc.path, ID: fc.id}
	sum, err := src.WriteOut(io.Discard, nil)
	if err != nil {
		return nil, nil
	}
	size := in.id.Size
	pre, suf, err := format.CommonEnds(f, size, bf, fc.id.Size)
	if err != nil {
		return nil, err
	}
	p := bigPlan(s, src, sum, fc.id.Size, pre == fc.id.Size)
	p.keep, p.lostBytes = fc.records, max(size-pre-suf, 0)
	p.total = in.docRecords // none when it does not parse
	p.lostRecords = max(p.total-p.keep, 0)
	return p, nil
}

// unparsed: a document with damage of kind does not parse.
func unparsed(kind string) bool {
	switch kind {
	case format.KindTruncated, format.KindTrailingGarbage, format.KindSyntax, format.KindInvalidUTF8, format.KindBOM, format.KindNULFilled, format.KindEmpty:
		return true
	}
	return false
}

// lastGoodFile opens c's last-good copy (an app log's: appStreamed) to be measured from its
// file: judged streaming (as heldOK judges it held) and hashed, of records records (counted by format.UnionCounts from its version
// counted). why says why not (no copy, or one that fails the checklist), f is nil then; f
// and why are both empty for a copy not the version counted.
func (e *Engine) lastGoodFile(c *fileCtx, records int, counted Identity) (f *os.File, fc *fileCand, why string) {
	p := e.LastGood.Path(c.path)
	if p == "" {
		return nil, nil, whyNoLastGood
	}
	f, id, err := fsio.OpenRegular(p)
	if err != nil {
		return nil, nil, whyNoLastGood
	}
	if !id.Same(counted) {
		f.Close()
		return nil, nil, "" // another copy than the one counted: held, as before
	}
	// Judged as heldOK judges an app log's copy (format.InspectAt), and hashed in the same
	// read.
	v, sum, err := format.InspectSum(c.typ, c.path, f, id.Size)
	if err != nil || !fsio.StillSame(f, id) || v.Status != Healthy {
		f.Close()
		return nil, nil, whyLastGoodFails
	}
	return f, &fileCand{path: p, id: id, records: records, sum: sum}, ""
}

// keepsLastGood reports whether the salvage keep (a plan: ok) keeps c's last-good
// copy whole, in place: the copy is whole lines, and the file's first bytes, which keep
// keeps. Neither the copy nor its union with the salvage can then keep a record more than
// the salvage does (the union is the copy's records and the salvaged records it lacks, no
// more than the salvage's own), and the salvage, first in the rule, wins every tie: the
// copy is neither judged nor measured, nor the union built — and a copy not held yet is
// compared from its file, a block at a time, never held.
func (e *Engine) keepsLastGood(f *os.File, keep *format.Splice, ok bool, c *fileCtx) (bool, error) {
	if keep == nil || !ok {
		return false, nil
	}
	lg, n, done := e.lastGoodAt(c)
	if lg == nil {
		return false, nil // none after all: loaded (and missed) as any other
	}
	defer done()
	if n == 0 || !keep.KeepsFirst(n) || n > keep.Size() {
		return false, nil
	}
	const block = 1 << 20
	a, b := make([]byte, min(n, block)), make([]byte, min(n, block))
	for off := int64(0); off < n; {
		m := min(int64(len(a)), n-off)
		if _, err := f.ReadAt(a[:m], off); err != nil {
			return false, err
		}
		if _, err := lg.ReadAt(b[:m], off); err != nil {
			return false, nil // the copy changed under us: judged the usual way
		}
		if !bytes.Equal(a[:m], b[:m]) {
			return false, nil
		}
		off += m
		if off == n && b[m-1] != '\n' {
			return false, nil // the copy ends inside a line
		}
	}
	return true, nil
}

// outkeepsLastGood reports whether the salvage keep (a plan of keepN records: ok)
// keeps as many records as c's last-good copy and as their union (format.UnionCounts, both
// counted from the files, neither held): the salvage, first in the rule, then wins (the plan
// kept is the one that keeps the most records, ties going to the rule's order), and the copy
// is neither held, judged nor measured, nor the union built. A copy it cannot count as the
// held bytes would be counted is looked at the usual way. A salvage that is no plan (the
// file itself: nothing to drop) outkeeps nothing, but the copy is counted all the same.
//
// uc is what was counted (not Exact when nothing was): whether a union is made, and whether
// it is the copy's bytes, which it then need not be built to tell.
func (e *Engine) outkeepsLastGood(f *os.File, keep *format.Splice, ok bool, keepN int, c *fileCtx) (bool, countedCopy, error) {
	if keep == nil {
		return false, countedCopy{}, nil
	}
	lg, n, done := e.lastGoodAt(c)
	if lg == nil {
		return false, countedCopy{}, nil
	}
	defer done()
	uc, err := format.UnionCounts(c.typ, lg, n, keep.At(f), keep.Size(), unionBudget)
	if err != nil || !uc.Exact {
		return false, countedCopy{}, nil // looked at the usual way, which meets the same bytes
	}
	cc := countedCopy{UnionCount: uc}
	if cf, ok := lg.(*os.File); ok {
		if fi, err := cf.Stat(); err == nil {
			cc.id = fsio.IdentityOf(fi)
		}
	}
	return ok && uc.Copy <= keepN && (!uc.Made || uc.Union <= keepN), cc, nil
}

// countedCopy is what outkeepsLastGood counted of the copy, and the version of its file it
// counted (zero when it was held).
type countedCopy struct {
	format.UnionCount
	id Identity
}

// lastGoodAt is c's last-good copy to read: held, or its file (done closes it); nil when
// there is none.
func (e *Engine) lastGoodAt(c *fileCtx) (lg io.ReaderAt, n int64, done func()) {
	if c.lastGood != nil {
		return bytes.NewReader(c.lastGood), int64(len(c.lastGood)), func() {}
	}
	cf, err := os.Open(e.LastGood.Path(c.path))
	if err != nil {
		return nil, 0, nil
	}
	fi, err := cf.Stat()
	if err != nil || !fi.Mode().IsRegular() {
		cf.Close()
		return nil, 0, nil
	}
	return cf, fi.Size(), func() { cf.Close() }
}

// unionBudget is the most bytes of salvaged records a union adds to the last-good copy it
// holds; a union that would add more is not offered for a big file.
const unionBudget = 16 << 20

// unionPlan is the plan that writes the union u, of a file of total records (nil when the
// checklist refuses it, or it changes bytes a fork points into), as the reference on held bytes
// makes it.
func unionPlan(c *fileCtx, u *memCand, total int, bigPlan func(policy.Strategy, fsio.Content, string, int64, bool) *plan) *plan {
	if u.splice != nil {
		return fileUnionPlan(c, u, total, bigPlan)
	}
	if !heldOK(c, u.Data) {
		return nil
	}
	if k, ok := c.typ.(format.PrefixKeeper); ok {
		if n := k.KeptPrefix(c.path); n > 0 && (int64(len(u.Data)) < n || u.PrefixN < n) {
			return nil
		}
	}
	p := bigPlan(u.strategy, fsio.Bytes(u.Data), sha(u.Data), int64(len(u.Data)), u.PrefixN == int64(len(u.Data)))
	p.edits[0].data = u.Data
	p.keep, p.total = format.Records(c.typ, u.Data), total
	p.lostRecords, p.lostBytes = u.Lost, u.LostBytes
	return p
}

// heldUnion is the union of the copy lg, held, with the salvage (size bytes of salv), held as
// a candidate: nil when it is the copy's bytes (as no union is offered then) or refused over
// its budget.
func heldUnion(c *fileCtx, lg []byte, salv io.ReaderAt, size int64) (*memCand, error) {
	u, err := format.UnionFrom(c.typ, lg, salv, size, unionBudget)
	switch {
	case errors.Is(err, format.ErrUnionTooLarge):
		return nil, nil
	case err != nil:
		return nil, err
	case u == nil || bytes.Equal(u, lg):
		return nil, nil
	}
	return &memCand{strategy: "salvage+last-good", SurveyCand: &format.SurveyCand{Data: u}}, nil
}

// fileUnion is the union of the copy lg (fc, counted to hold records records in a union;
// counted here when records is negative) with the salvage (size bytes of salv) as a splice
// of lg, measured from it: nil when it is the copy's bytes (as no union is offered then) or
// refused over its budget.
func fileUnion(c *fileCtx, lg *os.File, fc *fileCand, salv io.ReaderAt, size int64, records int) (*memCand, error) {
	sp, err := format.UnionSplice(c.typ, lg, fc.id.Size, salv, size, unionBudget)
	switch {
	case errors.Is(err, format.ErrUnionTooLarge):
		return nil, nil
	case err != nil:
		return nil, err
	case sp == nil:
		return nil, nil
	}
	if sp.Size() == fc.id.Size {
		same, err := fsio.SameBytes(sp.At(lg), lg, sp.Size())
		if err != nil {
			return nil, err
		}
		if same {
			return nil, nil
		}
	}
	if records < 0 {
		if records, err = format.RecordsAt(c.typ, sp.At(lg), sp.Size()); err != nil {
			return nil, err
		}
	}
	u := &fileCand{path: fc.path, id: fc.id, records: records}
	return &memCand{strategy: "salvage+last-good", SurveyCand: &format.SurveyCand{File: sp.At(lg), Size: sp.Size()}, file: u, splice: sp}, nil
}

// fileUnionPlan is unionPlan of a union measured from the copy's file (fileUnion): judged
// and written from there.
func fileUnionPlan(c *fileCtx, u *memCand, total int, bigPlan func(policy.Strategy, fsio.Content, string, int64, bool) *plan) *plan {
	lg, err := fsio.OpenStable(u.file.path, u.file.id)
	if err != nil {
		return nil // changed since it was judged: no plan
	}
	defer lg.Close()
	// Judged as heldOK judges an app log's union (format.InspectAt), and hashed in the
	// same read.
	n := u.splice.Size()
	v, sum, err := format.InspectSum(c.typ, c.path, u.splice.At(lg), n)
	if err != nil || v.Status != Healthy || !fsio.StillSame(lg, u.file.id) {
		return nil
	}
	if k, ok := c.typ.(format.PrefixKeeper); ok {
		if kp := k.KeptPrefix(c.path); kp > 0 && (n < kp || u.PrefixN < kp) {
			return nil
		}
	}
	src := copySplice{s: u.splice, path: u.file.path, id: u.file.id}
	p := bigPlan(u.strategy, src, sum, n, u.PrefixN == n)
	p.keep, p.total = u.file.records, total
	p.lostRecords, p.lostBytes = u.Lost, u.LostBytes
	return p
}

// copySplice is a splice of a last-good copy (path, of identity id) as the content of a
// heal: written from the copy, which must still be that version.
type copySplice struct {
	s    *format.Splice
	path string
	id   Identity
}

func (c copySplice) WriteOut(w io.Writer, _ io.ReaderAt) (string, error) {
	f, err := fsio.OpenStable(c.path, c.id)
	if err != nil {
		return "", err
	}
	defer f.Close()
	sum, err := c.s.WriteOut(w, f)
	if err != nil {
		return "", err
	}
	if !fsio.StillSame(f, c.id) {
		return "", fsio.ErrChanged
	}
	return sum, nil
}

// before: strategy a comes before b in the rule's list (both in it).
func before(list []policy.Strategy, a, b policy.Strategy) bool {
	i, j := slices.Index(list, a), slices.Index(list, b)
	return i >= 0 && j >= 0 && i < j
}

// heldOK is candidateOK of bytes held in memory (a last-good copy, a union), judged as a
// big file is: an app log planned streaming, block by block from the bytes (no line table of
// them beside them); anything else as candidateOK judges it.
func heldOK(c *fileCtx, data []byte) bool {
	if !appStreamed(c.typ) {
		return candidateOK(c, data)
	}
	cc := *c
	cc.lastGood = nil
	v, err := judgeStreamed(&cc, bytes.NewReader(data), 0, int64(len(data)))
	return err == nil && v.Status == Healthy
}

// judgeStreamed is the verdict on bytes [off, size) of r as the file at c's path, read in
// blocks: a plain profile's syntax, an app's checklist record by record.
func judgeStreamed(c *fileCtx, r io.ReaderAt, off, size int64) (Verdict, error) {
	v, _, err := judgeStreamedDoc(c, r, off, size)
	return v, err
}

// judgeStreamedDoc is judgeStreamed, with the records of a healthy app document.
func judgeStreamedDoc(c *fileCtx, r io.ReaderAt, off, size int64) (Verdict, int, error) {
	if format.IsDocument(c.typ) {
		v, j, err := format.JudgeDocAt(c.typ, c.path, io.NewSectionReader(r, off, size-off), size-off)
		return v, j.Records, err
	}
	v, err := judgeStreamedLog(c, r, off, size)
	return v, 0, err
}

func judgeStreamedLog(c *fileCtx, r io.ReaderAt, off, size int64) (Verdict, error) {
	if c.typ.Plain() {
		v, _, err := format.StreamVerdict(r, off, size, c.typ)
		return v, err
	}
	return format.InspectAt(c.typ, c.path, io.NewSectionReader(r, off, size-off), size-off)
}

// keepsPrefixAt is keepsPrefix of a streamed salvage.
func keepsPrefixAt(c *fileCtx, keep *format.Splice) bool {
	k, ok := c.typ.(format.PrefixKeeper)
	return !ok || keep.KeepsFirst(k.KeptPrefix(c.path))
}

// plans asks the rule's strategies for a repair, from the bytes read or, for a big file, from
// the file itself.
func (e *Engine) plans(rule *policy.Rule, in *inspection) ([]*plan, []try, error) {
	if in.big {
		return e.makeBigPlans(rule, in)
	}
	if in.missing {
		return e.missingPlans(rule, in)
	}
	if !e.heldPlans || heldPlanner == nil {
		// Every damaged file is planned from the file (inspect); never reached.
		return nil, nil, fmt.Errorf("internal error: %s was not planned from the file", in.ctx.path)
	}
	plans, tries := heldPlanner(rule, in)
	return plans, tries, nil
}

// heldPlanner plans a repair on the bytes of the file held whole: the tests' reference
// (heldplan_test.go), which the one planner, from the file, is held to. Nil in sessionmedic.
var heldPlanner func(rule *policy.Rule, in *inspection) ([]*plan, []try)

// rewriteWhy is why a rewrite of the file's own bytes (reconcile, drop-invalid-entries,
// restore-fields, add-ordinals, rebuild-header, normalize) makes no repair: of a file that
// has none to rewrite (a missing one, a document that does not parse), or of a log whose
// rewrite found nothing to do (lineRewrites). "" is "not applicable".
func rewriteWhy(s policy.Strategy, c *fileCtx, missing bool) string {
	switch s {
	case policy.Reconcile:
		return whyNoReconcile
	case policy.DropInvalidEntries:
		if _, ok := c.typ.(format.EntryDropper); ok && !missing {
			return whyNothingToDrop
		}
	case policy.RestoreFields:
		if _, ok := c.typ.(format.FieldRestorer); ok && !missing && c.lastGood == nil {
			return whyNoLastGood
		}
	case policy.RebuildHeader:
		if _, ok := c.typ.(format.HeaderRebuilder); ok && !missing {
			return whyValueMissing
		}
	case policy.Normalize:
		return whyNoBOM
	}
	return ""
}
