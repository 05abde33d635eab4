package heal

import (
	"errors"
	"io"
	"os"
	"time"

	"github.com/sessionmedic/sessionmedic/heal/format"
	"github.com/sessionmedic/sessionmedic/heal/fsio"
	"github.com/sessionmedic/sessionmedic/policy"
)

// Planned from the file (DESIGN §10: memory stays bounded whatever the file's size). A
// damaged file — an app transcript judged record by record (appStreamed), an app document,
// a plain JSON or JSONL file — is planned from the file itself at every size (bigplan.go):
// its salvage is said as the bytes of the original it keeps (a JSON document's first value,
// a JSONL file's valid lines, the bytes after a byte order mark; an app log's records split
// out of glued lines, rejoined, repeats dropped: format.PlanKeep, only the damaged lines held,
// a run at a time), its line rewrites as splices of it, each judged streaming; every step of
// the heal protocol that needs those bytes — the quarantine copy, the hashes of the journal,
// the temp file, the put-back of an app's late write, the verification — streams them from
// the original's descriptor. Candidates from elsewhere (a backup, the last-good copy, itself
// bounded by last_good.max_file_bytes) are held or measured from their files; the union of
// the salvage and the last-good copy adds at most unionBudget bytes of salvaged records.
// It is the one planner: every damaged file, of any size, is planned so (a missing one from
// the files that stand in for it: missing.go), and its plan is the one the tests' reference
// makes on the bytes held whole (heldplan_test.go; TestAppBigPathMatchesInMemory,
// TestAppDocumentsJudgedStreaming, TestBigPathMatchesInMemory, TestSamples). A line no
// streaming reader takes (a number or literal, or a record whose skeleton is, over
// format.MaxLine) makes the repairs that read it refused, at every size.
//
// bigFile is the size above which a document or plain file is judged streaming, never read
// whole; a damaged one up to it whose repair is a tail cut is replaced whole, its whole
// original quarantined (a larger one is cut in place).
const bigFile = 8 << 20

// appBigFile is the size above which an app log's torn tail is cut in place (a smaller one is
// replaced whole, its whole original quarantined), its last-good copy copied from the file,
// and the daemon keeps the state a torn tail is cut from (AppendCache.RememberTail).
const appBigFile = 1 << 20

// appPlanStreamed: a damaged app log of typ and size bytes is planned from the file.
func (e *Engine) appPlanStreamed(typ format.Profile, size int64) bool {
	return appStreamed(typ) && (!e.heldPlans || size > e.appBigAbove())
}

// bigAbove is bigFile, or the tests' threshold.
func (e *Engine) bigAbove() int64 {
	if e.bigThreshold > 0 {
		return e.bigThreshold
	}
	return bigFile
}

// bigFor is the size above which a file of typ is big: its tail cut made in place, its
// last-good copy copied from the file (appBigAbove for an app log judged record by record,
// bigAbove for any other).
func (e *Engine) bigFor(typ format.Profile) int64 {
	if appStreamed(typ) {
		return e.appBigAbove()
	}
	return e.bigAbove()
}

// appBigAbove is appBigFile, or the tests' threshold.
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

// wholeLimit is the largest plain JSON or JSONL file read whole; a larger one is judged
// streaming (inspectBig): a healthy one's last-good copy copied from the file, its
// line-aligned prefix check against that copy made from the two files.
func (e *Engine) wholeLimit() int64 { return e.bigAbove() }

// prefixOfCopy is format.LostWriteOf of the size bytes of r, the JSONL file at path (of
// profile typ), against its last-good copy (of n bytes), read from the copy's file.
func (e *Engine) prefixOfCopy(path string, typ format.Profile, r io.ReaderAt, size int64) (n int64, truncated bool, warning string, err error) {
	n, ok := e.LastGood.Size(path)
	if !ok || size == 0 || n <= size {
		return n, false, "", nil
	}
	cf, err := os.Open(e.LastGood.Path(path))
	if err != nil {
		return n, false, "", nil // none after all
	}
	defer cf.Close()
	if fi, err := cf.Stat(); err != nil || fi.Size() != n {
		return n, false, "", nil // replaced meanwhile: judged again when next seen
	}
	truncated, warning, err = format.LostWriteOf(typ, r, size, cf, n)
	return n, truncated, warning, err
}

// inspectBig judges a plain file over above bytes streaming (a damaged one is planned from
// the file). done is false when the caller is to go on with its own reading: the file is
// not over above, empty, not there, not regular, over max_file_size, cannot be judged
// streaming, or is healthy and wanted whole (for its last-good copy, or for the JSONL checks
// against that copy).
func (e *Engine) inspectBig(t Target, in *inspection, above int64) (done bool) {
	maxSize := t.Rule.Limits.MaxFileSize
	began := time.Now() // the version read was id from its open on (inspection.at)
	f, id, err := fsio.OpenRegular(t.Path)
	if err != nil {
		return false
	}
	defer f.Close()
	if id.Size <= above || id.Size == 0 || (maxSize > 0 && id.Size > maxSize) {
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
			// A strict line-aligned prefix of its last-good copy is a lost write, told from
			// the two files a block at a time (format.Inspect tells it of the bytes held).
			pre, err := e.copyPrefix(t.Path, in, f, id, &v)
			switch {
			case errors.Is(err, fsio.ErrChanged):
				in.verdict = format.Wait("file changed while it was read")
				return true
			case err != nil:
				return false
			case pre:
				in.at = began
				return true
			}
			if !e.oneShot {
				e.inc.RememberFile(t.Path, in.ctx.typ, id)
			}
		} else if lg := e.LastGood.MaxFileBytes; t.Rule.KeepLastGood && t.Rule.Mode != policy.ModeObserve && (lg == 0 || id.Size <= lg) && id.Size <= planLimit {
			// Its last-good copy is copied from the file, never held.
			in.id, in.verdict, in.copyFrom, in.at = id, v, true, began
			return true
		}
		in.id, in.verdict, in.incremental, in.at = id, v, true, began // no bytes held
		if in.ctx.typ.AppendOnly() {
			e.inc.Full.Add(1)
		}
		return true
	}
	if in.ctx.typ.AppendOnly() {
		e.inc.Full.Add(1)
	}
	e.inc.Drop(t.Path)
	in.id, in.verdict, in.big, in.bigEnd, in.at = id, v, true, firstEnd, began
	return true
}

// prefixFromFiles is copyPrefix of the JSONL file at path, healthy as version sid (v),
// opened here: true when it is a lost write (in says so); false leaves in as it was (not a
// prefix, or the file could not be compared: judged on).
func (e *Engine) prefixFromFiles(path string, in *inspection, sid Identity, v *Verdict) bool {
	f, err := fsio.OpenStable(path, sid)
	if err != nil {
		return false
	}
	defer f.Close()
	pre, err := e.copyPrefix(path, in, f, sid, v)
	return err == nil && pre
}

// copyPrefix judges f, the JSONL file at path healthy as version id (v), against its
// last-good copy (prefixOfCopy): a strict line-aligned prefix of it that makes it truncated
// is a lost write, then in says so (planned from the file) and pre is true; a prefix its app
// makes itself adds the app's warning to v. A file changed meanwhile is fsio.ErrChanged.
func (e *Engine) copyPrefix(path string, in *inspection, f *os.File, id Identity, v *Verdict) (pre bool, err error) {
	n, pre, warning, err := e.prefixOfCopy(path, in.ctx.typ, f, id.Size)
	if err == nil && !fsio.StillSame(f, id) {
		err = fsio.ErrChanged
	}
	if err != nil {
		return false, err
	}
	if warning != "" {
		v.Warnings = append(v.Warnings, warning)
	}
	if pre {
		e.inc.Full.Add(1)
		e.inc.Drop(path)
		in.id, in.big, in.bigEnd = id, true, -1
		in.verdict = format.LostWrite(id.Size, n)
	}
	return pre, nil
}
