package heal

import (
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"path/filepath"
	"syscall"
	"time"
	"unicode/utf8"

	"github.com/sessionmedic/sessionmedic/heal/apps"
	"github.com/sessionmedic/sessionmedic/heal/format"
	"github.com/sessionmedic/sessionmedic/heal/fsio"
	"github.com/sessionmedic/sessionmedic/heal/state"
	"github.com/sessionmedic/sessionmedic/internal/panics"
	"github.com/sessionmedic/sessionmedic/internal/pathx"
	"github.com/sessionmedic/sessionmedic/policy"
)

// Engine inspects and heals files under one policy. It is safe for concurrent use on
// different paths; the caller must not heal the same path twice at once. Build it with
// [New]: every default is there, and the daemon and the CLI get the same ones.
type Engine struct {
	Policy     *policy.Config
	StateDir   string
	Now        func() time.Time
	Quarantine state.Quarantine
	Journal    state.Journal
	LastGood   state.LastGood

	handsOff state.HandsOff     // the files an operator restored
	reg      *format.Registry   // the profiles of the formats a rule may name (heal/apps)
	inc      format.AppendCache // append-only files last seen healthy
	fs       fsio.FS            // every write of the engine (and of its quarantine, journal and last-good)

	oneShot     bool
	quietCheck  time.Duration
	findWriters func(dev, ino uint64) []int
	openBy      func(ids []Identity) (pids []int, complete bool)
	onStep      func(step, path string)
	onWalk      func(root string) // tests: each tree Targets walks
	sqlite      sqliteState       // the SQLite stores judged healthy (sqlite.go)

	// bigThreshold, when set, replaces bigFile: files larger than it are planned and healed
	// streaming (tests lower it to run small files through that path).
	bigThreshold int64
	// holdThreshold, when set, replaces holdLimit: logs judged record by record that are
	// larger are judged streaming (tests set it to compare both ways).
	holdThreshold int64
	// twoPassTorn: a heal judges a big app log torn at its end, then plans its cut, in two
	// passes (tests compare it with the one pass of inspectTorn).
	twoPassTorn bool
	// docTwoPass: a heal judges a big document's first value, and takes the sums its plan
	// needs, in passes of their own after the inspection (tests compare it with the
	// inspection's pass, which judges and hashes them beside it).
	docTwoPass bool
	// heldPlans: a damaged app log up to appBigFile, or other file up to bigFile, is
	// planned on its bytes held whole by heldPlanner, the tests' reference for the one
	// planner, from the file (bigplan.go).
	heldPlans bool
}

// DefaultQuietCheck is the quiet check of files of apps without a lock (see
// [Options.QuietCheck]).
const DefaultQuietCheck = 20 * time.Millisecond

// Options tune an Engine; the zero value is what the daemon and the CLI both run with.
type Options struct {
	// OneShot: every file is inspected once (the CLI), so no incremental state is kept.
	OneShot bool

	// QuietCheck, for files of apps with no lock, is how long the file must stay unchanged
	// once more right before it is quarantined and replaced: a save that began after the
	// file settled (an app's open(w) caught between its truncate and its write) is seen.
	// 0 means DefaultQuietCheck; a negative value turns it off.
	QuietCheck time.Duration

	// OpenWriters finds other processes holding a file open for writing (nil: /proc).
	OpenWriters func(dev, ino uint64) []int

	// OpenBy finds other processes holding any of the files open, and says whether it could
	// see every process (nil: /proc; see fsio.OpenBy): a SQLite store is replaced as a file
	// only while it proves that none holds the store or a sidecar.
	OpenBy func(ids []Identity) (pids []int, complete bool)

	// Step, when set, is called at each step of the heal protocol ("judged" after a file's
	// inspection, also a check's; "planned", "path-busy", "locked", "journaled",
	// "quarantined", "temp-written", "renamed", "done"; "leased" where a big file's tail cut
	// holds its write lease); crash tests stop the process there.
	Step func(step, path string)

	// Now is the clock (nil: time.Now).
	Now func() time.Time

	// Faults, when set, is asked before each file operation of the engine's writes — the
	// heal's own and those of its quarantine, journal, last-good copies and hands-off marks —
	// with the operation ("create", "chown", "chmod", "write", "fsync", "close", "rename",
	// "link", "truncate", "fsync-dir", "mkdir") and the path; an error it returns becomes that
	// operation's error. It is the seam of the I/O-fault tests (see [fsio.FS]).
	Faults func(op, path string) error
}

// New returns an engine whose state lives under cfg.StateDir.
func New(cfg *policy.Config, o Options) *Engine {
	e := &Engine{Policy: cfg, StateDir: cfg.StateDir, Now: o.Now, oneShot: o.OneShot,
		quietCheck: o.QuietCheck, findWriters: o.OpenWriters, onStep: o.Step, fs: fsio.FS{Faults: o.Faults}, reg: apps.Registry()}
	if e.Now == nil {
		e.Now = time.Now
	}
	if e.quietCheck == 0 {
		e.quietCheck = DefaultQuietCheck
	}
	if e.findWriters == nil {
		e.findWriters = fsio.OpenWriters
	}
	if e.openBy = o.OpenBy; e.openBy == nil {
		e.openBy = fsio.OpenBy
	}
	// Every rule root is resolved now, once per policy load: below it, no symlink is
	// followed (DESIGN §4 "Trust"; fsio.Confine).
	for _, r := range cfg.Rules {
		for _, root := range r.Paths {
			fsio.Confine(root)
		}
	}
	e.Quarantine = state.NewQuarantine(filepath.Join(cfg.StateDir, "quarantine"), e.fs)
	e.Journal = state.NewJournal(filepath.Join(cfg.StateDir, "journal"), e.fs, e.Quarantine, policy.IsOwnTemp, fsio.SHAFile)
	e.LastGood = state.NewLastGood(filepath.Join(cfg.StateDir, "last-good"), cfg.LastGood.MaxFileBytes, e.fs, policy.IsOwnTemp)
	e.handsOff = state.NewHandsOff(filepath.Join(cfg.StateDir, "hands-off"), e.fs)
	return e
}

func (e *Engine) step(name, path string) {
	if e.onStep != nil {
		e.onStep(name, path)
	}
}

// Target is one file to inspect: a path and the rule that governs it. Missing marks a file
// whose absence is itself the damage (a store renamed away, a session the app quarantined).
type Target struct {
	Path    string
	Rule    *policy.Rule
	Missing bool
	Temp    bool   // an app temp file, a clean-temp candidate
	Skip    string // never read (not a session file, a directory that cannot be read): the reason; its report claims no format
	// Override: the operator named this file (or a tree above it) for a heal, so an
	// operator's earlier restore of it no longer stands (see [state.HandsOff]).
	Override bool
}

// ErrNoRule is the error [Engine.Targets] gives (in a *fs.PathError) for a file named in its
// paths that no rule covers and whose format its fallback cannot tell.
var ErrNoRule = errors.New("no rule covers this file and its format cannot be detected")

func (e *Engine) newReport(t Target) Report {
	r := Report{Path: t.Path, Rule: t.Rule.Name, Offset: -1}
	if t.Skip == "" {
		r.Format = e.profile(t.Rule.Format, t.Path).Name()
	}
	if !utf8.ValidString(t.Path) {
		r.PathB64 = base64.StdEncoding.EncodeToString([]byte(t.Path))
	}
	return r
}

// internalError is the report of t whose inspection or planning raised p: not judged, left
// as it is, and said to be an internal error (Report.InternalError).
func (e *Engine) internalError(t Target, p any) Report {
	pe := panics.Of(p)
	r := Report{Path: t.Path, Offset: -1, Verdict: Skipped, InternalError: pe.Error(), Stack: pe.Stack}
	if t.Rule != nil {
		r.Rule = t.Rule.Name
	}
	if !utf8.ValidString(t.Path) {
		r.PathB64 = base64.StdEncoding.EncodeToString([]byte(t.Path))
	}
	r.Detail = "not judged: internal error (" + pe.Error() + "), a defect of sessionmedic: the file is left as it is and is not guarded until it is mended; please report it with this line"
	return r
}

func fill(r *Report, v Verdict) {
	r.Verdict, r.Kind, r.Offset, r.Detail, r.Warnings, r.NotJudged = v.Status, v.Kind, v.Offset, v.Detail, v.Warnings, v.NotJudged
	if v.Status == Healthy {
		r.Kind = ""
	}
}

// Check inspects a target without writing anything anywhere. A panic while it is judged
// (a defect of sessionmedic met on this file) is contained: see [Report.InternalError].
func (e *Engine) Check(t Target) (r Report) {
	defer func() {
		if p := recover(); p != nil {
			r = e.internalError(t, p)
		}
	}()
	r = e.newReport(t)
	if t.Skip != "" {
		fill(&r, format.Skip("%s", t.Skip))
		return r
	}
	if t.Temp {
		v, _, _ := e.inspectTemp(t)
		fill(&r, v)
		return r
	}
	if _, ok := e.sqliteTarget(t); ok {
		e.checkSQLite(t, &r)
		e.step("judged", t.Path)
		return r
	}
	in := e.inspect(t)
	e.step("judged", t.Path)
	fill(&r, in.verdict)
	in.release()
	return r
}

// Heal inspects a target and, when it is damaged, applies the best plan the policy allows.
// Healthy files are never written; their copy is kept as last-good (if the rule says so).
// A panic while the file is judged or its repair planned (nothing written yet) is
// contained, as Check contains it; one while the plan is applied is not: the process ends
// there, as a crash would end it, and the heal's journal finishes or rolls it back at the
// next start (DESIGN §7).
func (e *Engine) Heal(ctx context.Context, t Target, dryRun bool) (r Report) {
	applying := false
	defer func() {
		if applying {
			return // no recover: the panic goes on
		}
		if p := recover(); p != nil {
			r = e.internalError(t, p)
			r.Action = ActionNone
		}
	}()
	r = e.newReport(t)
	if t.Skip != "" {
		fill(&r, format.Skip("%s", t.Skip))
		r.Action = ActionNone
		return r
	}
	if t.Temp {
		e.cleanTemp(ctx, t, &r, dryRun)
		return r
	}
	if store, ok := e.sqliteTarget(t); ok {
		e.healSQLite(ctx, t, store, &r, dryRun)
		return r
	}
	in := e.inspectAs(t, true)
	e.step("judged", t.Path)
	fill(&r, in.verdict)
	r.Action = ActionNone
	if in.verdict.Status == Damaged && t.Rule.Mode != policy.ModeObserve {
		if !dryRun {
			// Another process healing under the same state directory (the daemon, a second
			// `heal`, a quarantine restore) may be at this file: wait for it, then look again.
			lk, err := e.lockPath(ctx, t.Path)
			if err != nil {
				r.Verdict, r.Reason = Busy, err.Error()
				if !errors.Is(err, errBusy) {
					r.Verdict, r.Action = Damaged, ActionRefused
				}
				return r
			}
			defer lk.Release()
			// A big file judged from its bytes alone is judged again only if it changed
			// meanwhile (a pass over it is most of a heal's time).
			if id, err := fsio.StatIdentity(t.Path); err != nil || !in.big || !id.Same(in.id) {
				in = e.inspectAs(t, true)
				fill(&r, in.verdict)
			}
		}
		// A file healed meanwhile, or missing, has nothing an operator restored.
		if h := e.handsOff.Get(t.Path, in.id); h != nil && in.verdict.Status == Damaged && !in.missing {
			if !t.Override {
				r.HandsOff, r.Quarantine = true, h.Quarantine
				r.Reason = "restored from quarantine " + h.Quarantine + " by an operator: left as it is until the app writes it again or a heal names it"
				return r
			}
			if !dryRun {
				e.handsOff.Clear(t.Path)
			}
		}
	}
	switch in.verdict.Status {
	case Healthy:
		if !dryRun && t.Rule.KeepLastGood && t.Rule.Mode != policy.ModeObserve {
			e.keepCopy(t, in)
			r.CopyErr = errText(in.copyErr)
		}
		in.release()
		return r
	case Damaged:
	default:
		return r
	}
	if in.tooLarge {
		r.Action, r.Reason = ActionRefused, tooLargeToPlan(in.id.Size)
		return r
	}
	if in.ctx.lastGood == nil && !in.missing && !in.big {
		// (A big file's copy is judged from its file, or read when a plan needs it:
		// bigplan.go; a missing file's is judged from its file: missing.go.)
		in.ctx.lastGood = e.LastGood.Load(t.Path)
	}
	plans, tries, err := e.plans(t.Rule, in)
	e.step("planned", t.Path)
	if err != nil {
		r.Action, r.Reason = ActionRefused, err.Error()
		if errors.Is(err, errBusy) || movedSince(t.Path, in) {
			r.Verdict, r.Action = Busy, ActionNone
		}
		return r
	}
	p := best(plans)
	if p == nil {
		r.Action, r.Tried = ActionRefused, tried(tries, t.Rule.Limits.MaxLoss)
		r.Reason = noPlanReason(t.Rule, r.Tried)
		return r
	}
	r.Strategy, r.LostBytes, r.LostRecords = string(p.strategy), p.lostBytes, p.lostRecords
	for _, ed := range p.edits[1:] {
		r.Also = append(r.Also, ed.path)
	}
	if p.lossRatio() > t.Rule.Limits.MaxLoss {
		r.Action, r.Tried = ActionRefused, tried(tries, t.Rule.Limits.MaxLoss)
		r.Reason = fmt.Sprintf("%s would drop %d of %d records, over max_loss %g%%", p.strategy, p.lostRecords, p.total, t.Rule.Limits.MaxLoss*100)
		return r
	}
	if t.Rule.Mode == policy.ModeObserve {
		r.Action, r.Reason = ActionRefused, "observe mode: would heal with "+string(p.strategy)
		return r
	}
	if dryRun {
		// The same liveness decision as the heal, writing nothing: the app's lock probed, and
		// a writer holding the file open.
		if err := e.probeBusy(ctx, t, in, p); err != nil {
			r.Action, r.Reason = ActionRefused, err.Error()
			if errors.Is(err, errBusy) {
				r.Verdict, r.Action = Busy, ActionNone
			}
			return r
		}
		r.Action = ActionWouldHeal
		return r
	}
	applying = true
	q, err := e.apply(ctx, t, in, p, &r.Wrote)
	applying = false
	switch {
	case err == nil:
		r.Action, r.Quarantine = ActionHealed, q
		r.CopyErr = errText(in.copyErr)
		for _, ed := range p.edits {
			r.QuarantinedBytes += ed.quarantined()
		}
	case errors.Is(err, errBusy):
		r.Verdict, r.Action, r.Reason = Busy, ActionNone, err.Error()
	default:
		// The plan was made and could not be written: what each strategy came to, the
		// chosen one with the write that failed.
		r.Action, r.Reason = ActionRefused, writeAdvice(err)
		r.Tried = tried(tries, t.Rule.Limits.MaxLoss)
		for i, tr := range tries {
			if tr.plan == p {
				r.Tried[i] += "; chosen, not written: " + err.Error()
			}
		}
	}
	return r
}

// movedSince: the file at path is no longer the version in judged (another version, or gone):
// a plan that failed reading it (cut short by an app that rewrites it in place) failed for
// that change, and the heal backs off. A missing file's plan is not one of its bytes.
func movedSince(path string, in *inspection) bool {
	return !in.missing && in.id.Ino != 0 && !sameNow(edit{path: path, oldID: in.id})
}

// Prune bounds the state directory by the policy's retention: quarantine entries by age and
// total size, last-good copies by total size, and the copies of deleted files by age.
func (e *Engine) Prune() error {
	_, err := e.PruneStats()
	return err
}

// Pruned is what one Prune removed, and what the quarantine occupies after it.
type Pruned struct {
	Quarantined, LastGood, Deleted int   // entries and copies removed
	Freed                          int64 // bytes on disk freed
	QuarantineBytes                int64 // what the quarantine occupies now
}

// PruneStats is Prune, saying what it removed. Sizes are what the files occupy on disk.
func (e *Engine) PruneStats() (Pruned, error) {
	var p Pruned
	n, freed, err := e.Quarantine.PruneBytes(e.Now(), e.Policy.Quarantine.MaxAge, e.Policy.Quarantine.MaxBytes)
	p.Quarantined, p.Freed = n, freed
	if err != nil {
		return p, err
	}
	// The copies of deleted files go once the quarantine's retention window has passed.
	if p.Deleted, err = e.LastGood.PruneGone(e.Now(), e.Policy.Quarantine.MaxAge); err != nil {
		return p, err
	}
	max := e.Policy.LastGood.MaxTotalBytes
	n, freed, left, err := e.LastGood.PruneBytesLeft(max)
	p.LastGood, p.Freed = n, p.Freed+freed
	// The snapshots of SQLite stores, in what the last-good copies leave of their budget.
	if max > 0 && err == nil {
		n, freed = e.pruneSnapshots(max - left)
		p.LastGood, p.Freed = p.LastGood+n, p.Freed+freed
	}
	p.QuarantineBytes = e.Quarantine.Usage()
	return p, err
}

// Forget notes that path was deleted and nothing brings it back: its last-good copy is kept
// for the retention window only (see Prune).
func (e *Engine) Forget(path string) error { return e.LastGood.MarkGone(path, e.Now()) }

// IncrementalStats reports how many inspections of append-only files read only the
// appended bytes, and how many read the whole file.
func (e *Engine) IncrementalStats() (incremental, full int64) {
	return e.inc.Incremental.Load(), e.inc.Full.Load()
}

// Fingerprint is the identity of the regular file at path now (without following a symlink):
// what a caller remembers after a heal to recognise the event of its own write.
func Fingerprint(path string) (Identity, error) { return fsio.StatIdentity(path) }

// Recover resolves heals a crash left unfinished (call it before the first heal), and removes
// the private copies of SQLite stores that processes now gone left in the state directory.
func (e *Engine) Recover() ([]Recovered, error) {
	e.cleanSQLiteTmp()
	return e.Journal.Recover()
}

// ruleRoot is the rule path that contains path (the longest, when paths nest), or the file's
// own directory when none does (a file named on the command line).
func ruleRoot(r *policy.Rule, path string) string {
	best := ""
	for _, p := range r.Paths {
		if pathx.Within(p, path) && len(p) > len(best) {
			best = p
		}
	}
	if best == "" {
		return filepath.Dir(path)
	}
	return best
}

// coldAfter: an append-only log its app last wrote longer ago than this gets no last-good
// copy when first seen healthy, only when next written. Its bytes are not at risk until an
// app writes to it again (a log is damaged by the writes to it: a torn or interleaved
// append, a crash while it is rewritten, a power cut over recent writes), and a first scan
// of a heavy user's years of transcripts would otherwise write a copy of every one.
const coldAfter = 24 * time.Hour

// keepCopy keeps the last-good copy of a file inspected healthy, where one is of use.
func (e *Engine) keepCopy(t Target, in *inspection) {
	has := e.LastGood.Has(t.Path)
	switch {
	case in.incremental && has:
		// An incremental pass read only the appended bytes: the last-good copy stays the
		// older prefix (the union of last-good and salvage covers what came after it).
		return
	case !has && in.ctx.typ.AppendOnly() && !t.Rule.RestoreDeleted && time.Since(in.id.Mtime) > coldAfter:
		return // cold: copied once its app writes to it again
	case in.data != nil:
		in.copyErr = copyFailed(e.LastGood.Put(t.Path, in.data))
	default:
		in.copyErr = e.lastGoodFrom(t.Path, in.id)
	}
}

func errText(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}

// copyFailed is err when the state dir refused a last-good copy (no space, a quota, a
// read-only or unwritable state dir, an I/O error), else nil: a file that moved while it
// was copied keeps its older copy, and is copied again when next judged.
func copyFailed(err error) error {
	for _, e := range []error{syscall.ENOSPC, syscall.EDQUOT, syscall.EROFS, syscall.EACCES, syscall.EPERM, syscall.EIO, syscall.EFBIG} {
		if errors.Is(err, e) {
			return err
		}
	}
	return nil
}

// lastGoodFrom keeps a last-good copy of a healthy file judged streaming, copied from the file
// itself and kept only if it is still the version judged.
func (e *Engine) lastGoodFrom(path string, id Identity) error {
	f, err := fsio.OpenStable(path, id)
	if err != nil {
		return nil
	}
	defer f.Close()
	return copyFailed(e.LastGood.PutFrom(path, f, id.Size, "", func() bool { return fsio.StillSame(f, id) }))
}
