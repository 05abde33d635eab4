package heal

import (
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/sessionmedic/sessionmedic/heal/fsio"
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
	Quarantine Quarantine
	Journal    Journal
	LastGood   LastGood

	inc incCache // append-only files last seen healthy
	fs  fsio.FS  // every write of the engine (and of its quarantine, journal and last-good)

	oneShot     bool
	quietCheck  time.Duration
	findWriters func(dev, ino uint64) []int
	onStep      func(step, path string)

	// bigThreshold, when set, replaces bigFile: files larger than it are planned and healed
	// streaming (tests lower it to run small files through that path).
	bigThreshold int64
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
	// file settled (a CoPaw open(w) caught between its truncate and its write) is seen.
	// 0 means DefaultQuietCheck; a negative value turns it off.
	QuietCheck time.Duration

	// OpenWriters finds other processes holding a file open for writing (nil: /proc).
	OpenWriters func(dev, ino uint64) []int

	// Step, when set, is called at each step of the heal protocol ("path-busy", "locked",
	// "quarantined", "journaled", "temp-written", "renamed", "done"); crash tests stop the
	// process there.
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
		quietCheck: o.QuietCheck, findWriters: o.OpenWriters, onStep: o.Step, fs: fsio.FS{Faults: o.Faults}}
	if e.Now == nil {
		e.Now = time.Now
	}
	if e.quietCheck == 0 {
		e.quietCheck = DefaultQuietCheck
	}
	if e.findWriters == nil {
		e.findWriters = fsio.OpenWriters
	}
	e.Quarantine = Quarantine{Root: filepath.Join(cfg.StateDir, "quarantine"), fs: e.fs}
	e.Journal = Journal{Root: filepath.Join(cfg.StateDir, "journal"), fs: e.fs, inflight: &sync.Map{}}
	e.LastGood = LastGood{Root: filepath.Join(cfg.StateDir, "last-good"), MaxFileBytes: cfg.LastGood.MaxFileBytes, idx: &lgIndex{}, fs: e.fs}
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
	Skip    string // named on the command line but not a session file: the reason
	// Override: the operator named this file (or a tree above it) for a heal, so an
	// operator's earlier restore of it no longer stands (see [HandsOff]).
	Override bool
}

var errNoRule = errors.New("no rule covers this file and its format cannot be detected")

func (e *Engine) newReport(t Target) Report {
	r := Report{Path: t.Path, Rule: t.Rule.Name, Format: classify(t.Rule.Format, t.Path).String(), Offset: -1}
	if !utf8.ValidString(t.Path) {
		r.PathB64 = base64.StdEncoding.EncodeToString([]byte(t.Path))
	}
	return r
}

func fill(r *Report, v Verdict) {
	r.Verdict, r.Kind, r.Offset, r.Detail, r.Warnings = v.Status, v.Kind, v.Offset, v.Detail, v.Warnings
	if v.Status == Healthy {
		r.Kind = ""
	}
}

// inspect reads and judges a target.
func (e *Engine) inspect(t Target) *inspection {
	in := &inspection{ctx: fileCtx{path: t.Path, typ: classify(t.Rule.Format, t.Path), maxSize: t.Rule.Limits.MaxFileSize}}
	if id, ok := e.inc.tryIncremental(t.Path, in.ctx.typ, t.Rule.Limits.MaxFileSize); ok {
		in.id, in.incremental, in.verdict = id, true, healthy()
		return in
	}
	// Files up to the streaming size (append-only logs) or the planning size (the rest) are
	// read whole; larger ones are streamed, and read whole only to plan a repair they need.
	// Plain JSON and JSONL are read whole only as far as a healthy one needs its bytes (the
	// last-good copy, the line-aligned prefix check); beyond, and for any damaged one over
	// the big-file size, they are judged and planned streaming (inspectBig).
	big := int64(planLimit)
	if appendOnly(in.ctx.typ) {
		big = streamThreshold
	}
	if bigEligible(in.ctx.typ) {
		big = min(big, e.wholeLimit(t.Rule, in.ctx.typ))
	}
	data, id, err := fsio.ReadStableBelow(t.Path, t.Rule.Limits.MaxFileSize, big)
	if errors.Is(err, fsio.ErrBig) && bigEligible(in.ctx.typ) && e.inspectBig(t, in) {
		return in
	}
	if errors.Is(err, fsio.ErrBig) {
		if appendOnly(in.ctx.typ) {
			v, sid, serr := streamInspect(t.Path, in.ctx.typ)
			switch {
			case errors.Is(serr, fsio.ErrChanged):
				in.verdict = busy("file changed while it was read")
				return in
			case serr == nil && v.Status == Healthy:
				in.id, in.verdict = sid, v
				e.inc.full.Add(1)
				if !e.oneShot {
					e.inc.rememberFile(t.Path, in.ctx.typ, sid)
				}
				in.incremental = true // no bytes held: no last-good copy of a file this large
				return in
			case serr == nil && sid.Size > planLimit:
				in.id, in.verdict, in.tooLarge = sid, v, true
				e.inc.drop(t.Path)
				return in
			}
		} else if v, lid, lerr := largeVerdict(t.Path); lerr == nil {
			in.id, in.verdict, in.tooLarge = lid, v, true
			return in
		}
		data, id, err = fsio.ReadStable(t.Path, t.Rule.Limits.MaxFileSize)
	}
	if in.ctx.typ.jsonl() {
		// Only a JSONL checklist reads last-good (a cut at a line boundary); for the others it
		// is loaded when a repair is planned.
		in.ctx.lastGood = e.LastGood.Get(t.Path)
	}
	switch {
	case err == nil:
		in.data, in.id = data, id
		in.verdict = inspectBytes(&in.ctx, data)
		if in.verdict.Status == Damaged && bigEligible(in.ctx.typ) && id.Size > e.bigAbove() {
			// Planned streaming: the bytes read are let go, the plan reads the file again.
			*in = inspection{ctx: in.ctx}
			in.ctx.lastGood = nil
			if e.inspectBig(t, in) {
				return in
			}
			in.data, in.id = data, id
			in.verdict = inspectBytes(&in.ctx, data)
		}
		if appendOnly(in.ctx.typ) {
			e.inc.full.Add(1)
			if in.verdict.Status == Healthy && !e.oneShot {
				e.inc.remember(t.Path, in.ctx.typ, id, data)
			} else {
				e.inc.drop(t.Path)
			}
		}
	case errors.Is(err, os.ErrNotExist) && t.Missing:
		in.missing = true
		if reason := missingSkip(&in.ctx); reason != "" {
			in.verdict = skipped("%s", reason)
		} else {
			in.verdict = damaged(KindMissing, -1, "file is missing but %s", missingEvidence(&in.ctx))
		}
	case errors.Is(err, os.ErrNotExist):
		in.verdict = skipped("file no longer exists")
	case errors.Is(err, fsio.ErrNotRegular):
		in.verdict = skipped("not a regular file")
	case errors.Is(err, fsio.ErrTooLarge):
		in.verdict = skipped("larger than max_file_size (%d bytes)", t.Rule.Limits.MaxFileSize)
	case errors.Is(err, fsio.ErrChanged):
		in.verdict = busy("file changed while it was read")
	default:
		in.verdict = skipped("unreadable: %v", err)
	}
	return in
}

func missingSkip(c *fileCtx) string {
	if c.typ == ftOpenClawStore {
		return openclawSQLiteEra(c.path)
	}
	return ""
}

func missingEvidence(c *fileCtx) string {
	if c.typ == ftPraison {
		return "the app's .corrupt copy is next to it"
	}
	return "backups or transcripts show it existed"
}

// Check inspects a target without writing anything anywhere.
func (e *Engine) Check(t Target) Report {
	r := e.newReport(t)
	if t.Skip != "" {
		fill(&r, skipped("%s", t.Skip))
		return r
	}
	if t.Temp {
		v, _, _ := e.inspectTemp(t)
		fill(&r, v)
		return r
	}
	fill(&r, e.inspect(t).verdict)
	return r
}

// Heal inspects a target and, when it is damaged, applies the best plan the policy allows.
// Healthy files are never written; their copy is kept as last-good (if the rule says so).
func (e *Engine) Heal(ctx context.Context, t Target, dryRun bool) Report {
	r := e.newReport(t)
	if t.Skip != "" {
		fill(&r, skipped("%s", t.Skip))
		r.Action = ActionNone
		return r
	}
	if t.Temp {
		e.cleanTemp(ctx, t, &r, dryRun)
		return r
	}
	in := e.inspect(t)
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
			defer lk.release()
			in = e.inspect(t)
			fill(&r, in.verdict)
		}
		// A file healed meanwhile, or missing, has nothing an operator restored.
		if h := e.handsOff(t.Path, in.id); h != nil && in.verdict.Status == Damaged && !in.missing {
			if !t.Override {
				r.HandsOff, r.Quarantine = true, h.Quarantine
				r.Reason = "restored from quarantine " + h.Quarantine + " by an operator: left as it is until the app writes it again or a heal names it"
				return r
			}
			if !dryRun {
				e.clearHandsOff(t.Path)
			}
		}
	}
	switch in.verdict.Status {
	case Healthy:
		// An incremental pass read only the appended bytes: the last-good copy stays the
		// older prefix (the union of last-good and salvage covers what came after it).
		if !dryRun && !in.incremental && t.Rule.KeepLastGood && t.Rule.Mode != policy.ModeObserve {
			_ = e.LastGood.Put(t.Path, in.data)
		}
		return r
	case Damaged:
	default:
		return r
	}
	if in.tooLarge {
		r.Action, r.Reason = ActionRefused, tooLargeToPlan(in.id.Size)
		return r
	}
	if in.ctx.lastGood == nil {
		in.ctx.lastGood = e.LastGood.Load(t.Path)
	}
	plans, err := e.plans(t.Rule, in)
	if err != nil {
		r.Action, r.Reason = ActionRefused, err.Error()
		if errors.Is(err, errBusy) {
			r.Verdict, r.Action = Busy, ActionNone
		}
		return r
	}
	p := best(plans)
	if p == nil {
		r.Action, r.Reason = ActionRefused, "no strategy of the rule yields a valid file (report-only)"
		return r
	}
	r.Strategy, r.LostBytes, r.LostRecords = string(p.strategy), p.lostBytes, p.lostRecords
	for _, ed := range p.edits[1:] {
		r.Also = append(r.Also, ed.path)
	}
	if p.lossRatio() > t.Rule.Limits.MaxLoss {
		r.Action = ActionRefused
		r.Reason = fmt.Sprintf("%s would drop %d of %d records, over max_loss %g%%", p.strategy, p.lostRecords, p.total, t.Rule.Limits.MaxLoss*100)
		return r
	}
	if t.Rule.Mode == policy.ModeObserve {
		r.Action, r.Reason = ActionRefused, "observe mode: would heal with "+string(p.strategy)
		return r
	}
	if dryRun {
		r.Action = ActionWouldHeal
		return r
	}
	q, err := e.apply(ctx, t, in, p, &r.Wrote)
	switch {
	case err == nil:
		r.Action, r.Quarantine = ActionHealed, q
		for _, ed := range p.edits {
			r.QuarantinedBytes += ed.oldSize()
		}
	case errors.Is(err, errBusy):
		r.Verdict, r.Action, r.Reason = Busy, ActionNone, err.Error()
	default:
		r.Action, r.Reason = ActionRefused, err.Error()
	}
	return r
}

// errBusy is fsio's: a write it abandons because the bytes changed is a Busy verdict too.
var errBusy = fsio.ErrBusy

func busyErr(format string, args ...any) error {
	return fmt.Errorf("%w: %s", errBusy, fmt.Sprintf(format, args...))
}

// sameNow reports whether the file at ed.path is still the version the plan was made from.
func sameNow(ed edit) bool {
	id, err := fsio.StatIdentity(ed.path)
	if ed.missing {
		return errors.Is(err, os.ErrNotExist)
	}
	return err == nil && id.Same(ed.oldID)
}

// apply runs DESIGN §7 steps 4–8 for one plan. It returns the quarantine entry of the
// inspected file.
//
// written receives, per file replaced, the identity of the version this heal left there, as
// long as nobody had changed it by the time the replace was done.
func (e *Engine) apply(ctx context.Context, t Target, in *inspection, p *plan, written *map[string]Identity) (string, error) {
	held, err := e.takeLock(ctx, t.Rule, t.Path, in.ctx.typ)
	if err != nil {
		return "", err
	}
	defer held.Release()
	if _, unlocked := held.(noLock); unlocked && e.quietCheck > 0 {
		time.Sleep(e.quietCheck)
	}
	e.step("locked", t.Path)
	for _, ed := range p.edits {
		if !sameNow(ed) {
			return "", busyErr("%s changed since it was read", ed.path)
		}
	}
	now := e.Now()
	entry := &journalEntry{ID: newID(now), Created: now.UTC()}
	var first string
	for i, ed := range p.edits {
		je := journalEdit{Path: ed.path, Temp: fsio.TempName(ed.path), Missing: ed.missing, NewSHA256: ed.newSHA()}
		if !ed.missing {
			je.OldSHA256 = ed.oldSHA()
			m := &Manifest{Path: ed.path, Rule: t.Rule.Name, Identity: ed.oldID, Kind: in.verdict.Kind,
				Offset: in.verdict.Offset, Detail: in.verdict.Detail, Strategy: string(p.strategy),
				NewSHA256: je.NewSHA256, LostBytes: p.lostBytes, LostRecords: p.lostRecords}
			if i > 0 {
				m.Detail = "changed with " + p.edits[0].path
			}
			var dir string
			var err error
			if ed.big != nil {
				// The old bytes are copied from the file, the version the plan was made from.
				dir, err = e.Quarantine.putFile(m, ed.path, ed.oldID, ed.big.oldSHA, now)
			} else {
				dir, err = e.Quarantine.Put(m, ed.old, now)
			}
			if err != nil {
				return "", err
			}
			je.Quarantine = dir
		}
		if i == 0 {
			first = je.Quarantine
		}
		entry.Edits = append(entry.Edits, je)
	}
	e.step("quarantined", t.Path)
	for _, ed := range p.edits {
		if !sameNow(ed) {
			e.dropQuarantine(entry)
			return "", busyErr("%s changed during quarantine", ed.path)
		}
	}
	e.Journal.inflight.Store(entry.ID, struct{}{})
	defer e.Journal.inflight.Delete(entry.ID)
	if err := e.Journal.begin(entry); err != nil {
		e.dropQuarantine(entry)
		return "", err
	}
	e.step("journaled", t.Path)
	// The inspected file goes last: a plan's other edits (OpenViking's message_count) are
	// then never left behind by a failure or a crash, which a later inspection of the
	// inspected file could no longer see.
	changed := false
	for i := len(p.edits) - 1; i >= 0; i-- {
		renamed, wrote, err := e.replace(p.edits[i], entry.Edits[i].Temp, t.Path, ruleRoot(t.Rule, t.Path))
		changed = changed || renamed
		if wrote.Ino != 0 {
			if *written == nil {
				*written = map[string]Identity{}
			}
			(*written)[p.edits[i].path] = wrote
		}
		if err != nil {
			// Edits already applied are valid on their own; this entry is resolved now
			// rather than at the next start. Nothing replaced, nothing to keep.
			e.Journal.abort(entry)
			if !changed {
				e.dropQuarantine(entry)
				first = ""
			}
			return first, err
		}
	}
	if err := e.Journal.end(entry); err != nil {
		return first, err
	}
	e.step("done", t.Path)
	e.verify(t, in)
	return first, nil
}

// verify: the result must validate, and becomes the new last-good copy. A big result is
// validated streaming, and read whole only for a last-good copy it fits in.
func (e *Engine) verify(t Target, in *inspection) {
	c := in.ctx
	c.lastGood = nil
	if id, err := fsio.StatIdentity(t.Path); err == nil && bigEligible(c.typ) && id.Size > e.bigAbove() {
		f, err := openStable(t.Path, id)
		if err != nil {
			return
		}
		v, _, err := streamVerdict(f, 0, id.Size, c.typ)
		same := stillSame(f, id)
		f.Close()
		lg := e.LastGood.MaxFileBytes
		if err != nil || !same || v.Status != Healthy || !t.Rule.KeepLastGood || (lg > 0 && id.Size > lg) || id.Size > planLimit {
			return
		}
		// Validated: read whole only to keep the copy, if it is still that version.
		if data, rid, err := fsio.ReadStable(t.Path, t.Rule.Limits.MaxFileSize); err == nil && rid.Same(id) {
			_ = e.LastGood.Put(t.Path, data)
		}
		return
	}
	if data, _, err := fsio.ReadStable(t.Path, t.Rule.Limits.MaxFileSize); err == nil {
		if inspectBytes(&c, data).Status == Healthy && t.Rule.KeepLastGood {
			_ = e.LastGood.Put(t.Path, data)
		}
	}
}

func (e *Engine) dropQuarantine(entry *journalEntry) {
	for _, ed := range entry.Edits {
		if ed.Quarantine != "" {
			os.RemoveAll(ed.Quarantine)
		}
	}
}

// replace durably puts ed.data at ed.path through the temp file tmp. root is the rule's root:
// the file's directory is reached from it without following symlinks, and every operation
// goes through that directory's descriptor. wrote is the identity of the file it left there
// (zero when it cannot tell that file from a later write of the app's).
func (e *Engine) replace(ed edit, tmp, target, root string) (renamed bool, wrote Identity, err error) {
	d, err := e.fs.OpenParent(root, ed.path)
	if err != nil {
		return false, Identity{}, busyErr("%v", err)
	}
	defer d.Close()
	name, tmpName := filepath.Base(ed.path), filepath.Base(tmp)
	// A file restored where none is gets 0600 (what these apps use for sessions) unless the
	// edit carries the mode it had.
	mode, uid, gid := os.FileMode(0o600), -1, -1
	if !ed.missing || ed.oldID.Mode != 0 {
		mode, uid, gid = os.FileMode(ed.oldID.Mode), int(ed.oldID.UID), int(ed.oldID.GID)
	}
	var old *os.File
	if !ed.missing {
		// Keep the old inode open: an app without a lock that writes between our last check
		// and the rename writes into it, and we must notice. It is also the identity check
		// through the directory we hold.
		f, err := d.OpenFile(name, os.O_RDONLY, 0)
		if err != nil {
			return false, Identity{}, busyErr("%s: %v", ed.path, err)
		}
		old = f
		defer old.Close()
		fi, err := old.Stat()
		if err != nil || !fsio.IdentityOf(fi).Same(ed.oldID) {
			return false, Identity{}, busyErr("%s changed before the replace", ed.path)
		}
		if e.findWriters != nil {
			if pids := e.findWriters(ed.oldID.Dev, ed.oldID.Ino); len(pids) > 0 {
				// A rename would strand the writer's later writes in the old inode: only a
				// pure tail cut, in place, is allowed.
				if !ed.tailCut() {
					return false, Identity{}, busyErr("%s is held open for writing by pid %v: deferred (only a tail cut may be applied in place)", ed.path, pids)
				}
				return e.truncate(d, ed, target)
			}
		}
	}
	var want string
	if ed.big != nil {
		want = ed.big.newSHA
	}
	tmpID, err := d.WriteTemp(tmp, ed.content(), old, want, mode, uid, gid)
	if err != nil {
		return false, Identity{}, err
	}
	e.step("temp-written", target)
	if old != nil {
		if fi, err := old.Stat(); err != nil || !fsio.IdentityOf(fi).Same(ed.oldID) {
			d.Remove(tmpName)
			return false, Identity{}, busyErr("%s changed before the rename", ed.path)
		}
	}
	if !d.StillThere(root) {
		d.Remove(tmpName)
		return false, Identity{}, busyErr("%s: %v", ed.path, fsio.ErrMoved)
	}
	if ed.missing {
		// link(2) never clobbers: if the app created the file meanwhile, we lose the race cleanly.
		err = e.fs.Do("link", ed.path, func() error { return d.Link(tmpName, name) })
		d.Remove(tmpName)
		if errors.Is(err, os.ErrExist) {
			return false, Identity{}, busyErr("%s appeared before the restore", ed.path)
		}
	} else {
		err = e.fs.Do("rename", ed.path, func() error { return d.Rename(tmpName, name) })
	}
	if err != nil {
		d.Remove(tmpName)
		return false, Identity{}, fmt.Errorf("replace %s: %w", ed.path, err)
	}
	// An app without a lock that opened the path before the rename writes into the old inode,
	// now unlinked: wait until nobody holds it open for writing any more (nobody can open it
	// anew), then put back whatever such a write left in it. Checked at once, to keep short
	// the time the path holds our version instead of the app's newer one, and again after the
	// directory fsync.
	if old != nil {
		e.awaitWriters(ed.oldID)
		if oldChanged(old, ed.oldID) {
			return true, Identity{}, e.putBack(d, old, ed, tmpID)
		}
	}
	if err := d.Sync(); err != nil {
		return true, Identity{}, err
	}
	e.step("renamed", target)
	if old != nil && oldChanged(old, ed.oldID) {
		return true, Identity{}, e.putBack(d, old, ed, tmpID)
	}
	// The file there now is ours only while it is still the inode we wrote, unchanged since
	// (the rename gave it a new ctime): an app without a lock may already have written over
	// it in place, and that write must not pass for ours.
	if now, err := d.Stat(name); err == nil && now.SameWrite(tmpID) {
		wrote = now
	}
	return true, wrote, nil
}

// truncate cuts the file in place to the plan's prefix, after the same identity check.
// It reports whether the file was changed (the cut happened), even when a later step failed.
func (e *Engine) truncate(d *fsio.Dir, ed edit, target string) (bool, Identity, error) {
	size := ed.newSize()
	f, err := d.OpenFile(filepath.Base(ed.path), os.O_WRONLY, 0)
	if err != nil {
		return false, Identity{}, busyErr("%s: %v", ed.path, err)
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil || !fsio.IdentityOf(fi).Same(ed.oldID) {
		return false, Identity{}, busyErr("%s changed before the truncate", ed.path)
	}
	if err := e.fs.Do("truncate", ed.path, func() error { return f.Truncate(size) }); err != nil {
		return false, Identity{}, fmt.Errorf("truncate %s: %w", ed.path, err)
	}
	if err := e.fs.Do("fsync", ed.path, f.Sync); err != nil {
		return true, Identity{}, fmt.Errorf("fsync %s: %w", ed.path, err)
	}
	e.step("renamed", target)
	// The writer holding the file open may append at any moment: what we left is ours only
	// as this fstat shows it, and its next append changes that.
	var wrote Identity
	if fi, err := f.Stat(); err == nil {
		wrote = fsio.IdentityOf(fi)
	}
	return true, wrote, nil
}

// putBack: the app wrote into the old inode while we renamed over it. Its bytes are the
// newest it has: they go back in place (the same durable replace) and the file is looked at
// again later.
// oldChanged reports whether the replaced inode was written since it was read (its link
// count and ctime changed with the rename; its size and mtime only with a write).
func oldChanged(old *os.File, was Identity) bool {
	fi, err := old.Stat()
	if err != nil {
		return false
	}
	now := fsio.IdentityOf(fi)
	return now.Size != was.Size || !now.Mtime.Equal(was.Mtime)
}

// awaitWriters waits, for up to a second, until no other process holds the inode open for
// writing.
func (e *Engine) awaitWriters(id Identity) {
	if e.findWriters == nil {
		return
	}
	for i := 0; i < 100 && len(e.findWriters(id.Dev, id.Ino)) > 0; i++ {
		time.Sleep(10 * time.Millisecond)
	}
}

// putBack puts the bytes an app wrote into the replaced inode back at the path, unless the
// path no longer holds the version the heal renamed there (ours: the temp file's identity),
// which means the app has saved again through the path since, and that newer save stands.
func (e *Engine) putBack(d *fsio.Dir, old *os.File, ed edit, ours Identity) error {
	fi, err := old.Stat()
	if err != nil {
		return err
	}
	name := filepath.Base(ed.path)
	if now, err := d.Stat(name); err != nil || !now.SameWrite(ours) {
		return busyErr("%s: the app wrote during the heal, then saved again over it", ed.path)
	}
	// Copied from the old inode streaming: whatever its size, it is not held in memory.
	tmp := fsio.TempName(ed.path)
	if _, err := d.WriteTemp(tmp, rangeContent{0, fi.Size()}, old, "", os.FileMode(ed.oldID.Mode), int(ed.oldID.UID), int(ed.oldID.GID)); err != nil {
		return err
	}
	if err := e.fs.Do("rename", ed.path, func() error { return d.Rename(filepath.Base(tmp), filepath.Base(ed.path)) }); err != nil {
		d.Remove(filepath.Base(tmp))
		return err
	}
	if err := d.Sync(); err != nil {
		return err
	}
	return busyErr("%s: the app wrote during the heal; its bytes were put back", ed.path)
}

// Prune bounds the state directory by the policy's retention: quarantine entries by age and
// total size, last-good copies by total size.
func (e *Engine) Prune() error {
	if _, err := e.Quarantine.Prune(e.Now(), e.Policy.Quarantine.MaxAge, e.Policy.Quarantine.MaxBytes); err != nil {
		return err
	}
	_, err := e.LastGood.Prune(e.Policy.LastGood.MaxTotalBytes)
	return err
}

// IncrementalStats reports how many inspections of append-only files read only the
// appended bytes, and how many read the whole file.
func (e *Engine) IncrementalStats() (incremental, full int64) {
	return e.inc.incremental.Load(), e.inc.full.Load()
}

// Fingerprint is the identity of the regular file at path now (without following a symlink):
// what a caller remembers after a heal to recognise the event of its own write.
func Fingerprint(path string) (Identity, error) { return fsio.StatIdentity(path) }

// Recover resolves heals a crash left unfinished (call it before the first heal).
func (e *Engine) Recover() ([]Recovered, error) { return e.Journal.Recover() }

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
