package heal

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"syscall"
	"time"

	"github.com/sessionmedic/sessionmedic/heal/format"
	"github.com/sessionmedic/sessionmedic/heal/fsio"
	"github.com/sessionmedic/sessionmedic/heal/state"
)

// The apply path of DESIGN §7 (steps 4–8): lock, re-check, journal, quarantine, replace
// (or tail cut, or put-back), verify. The journal's intent comes before the quarantine and
// names its entries: every entry a heal writes is then either one of a heal that completed
// or one the journal's resolution finds, and marks if its heal did not stand (see
// state.StatusRolledBack); an entry a crash cut short is removed by it.

// errBusy is fsio's: a write it abandons because the bytes changed is a Busy verdict too.
var errBusy = fsio.ErrBusy

func busyErr(format string, args ...any) error {
	return fmt.Errorf("%w: %s", errBusy, fmt.Sprintf(format, args...))
}

// insecureErr refuses a heal, run as root, in a directory someone other than its owner and
// root may write (logrotate: "parent directory has insecure permissions"): they could swap
// what is in it between any check and any write.
func insecureErr(why string) error {
	return fmt.Errorf("parent directory has insecure permissions: %s; sessionmedic run as root heals only where no one but the owner and root can write (remove that permission, or run sessionmedic as the tree's owner)", why)
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
	held, err := e.takeLock(ctx, t.Rule, t.Path, in.ctx.typ, false)
	if err != nil {
		return "", err
	}
	defer held.Release()
	// An app without a lock may be in the middle of a save: the file must have stayed the
	// version the plan was made from (the inspection's identity, compared again after the
	// quarantine) for the quiet check's time before anything is written to it. That time
	// runs from the start of the read that found it to be that version (which it still was
	// at that read's end): the read, the planning, the journal and the quarantine, which
	// touch only the state directory, take it first; what is left is waited for.
	var quiet time.Time
	if _, unlocked := held.(noLock); unlocked && e.quietCheck > 0 {
		from := in.at
		if from.IsZero() {
			from = time.Now()
		}
		quiet = from.Add(e.quietCheck)
	}
	e.step("locked", t.Path)
	for i := range p.edits {
		ed := &p.edits[i]
		if !sameNow(*ed) {
			return "", busyErr("%s changed since it was read", ed.path)
		}
		// The original's sum still being taken is waited for here, unless the edit's
		// quarantine is made once its new file is written (lateQuarantine).
		if ed.big != nil && !ed.lateQuarantine() {
			if err := e.waitOld(ed); err != nil {
				return "", err
			}
		}
	}
	now := e.Now()
	entry := &state.Entry{ID: state.NewID(now), Created: now.UTC()}
	manifests := make([]*Manifest, len(p.edits))
	for i, ed := range p.edits {
		je := state.Edit{Path: ed.path, Temp: fsio.TempName(ed.path), Missing: ed.missing, NewSHA256: ed.newSHA()}
		if !ed.missing {
			je.OldSHA256 = ed.oldSHA()
			m := &Manifest{Path: ed.path, Rule: t.Rule.Name, Identity: ed.oldID, Kind: in.verdict.Kind,
				Offset: in.verdict.Offset, Detail: in.verdict.Detail, Strategy: string(p.strategy),
				NewSHA256: je.NewSHA256, LostBytes: p.lostBytes, LostRecords: p.lostRecords}
			if i > 0 {
				m.Detail = "changed with " + p.edits[0].path
			}
			manifests[i] = m
			je.Quarantine = e.Quarantine.EntryDir(m, now)
		}
		entry.Edits = append(entry.Edits, je)
	}
	first := entry.Edits[0].Quarantine
	if err := e.Journal.Begin(entry); err != nil {
		return "", err
	}
	e.step("journaled", t.Path)
	for i, ed := range p.edits {
		m := manifests[i]
		if m == nil || ed.lateQuarantine() {
			continue // a missing file: nothing to keep; or kept once the new file is written
		}
		if err := e.quarantineEdit(m, &p.edits[i], ruleRoot(t.Rule, t.Path), now); err != nil {
			e.abandon(entry)
			return "", err
		}
	}
	e.step("quarantined", t.Path)
	if wait := time.Until(quiet); wait > 0 {
		time.Sleep(wait)
	}
	for _, ed := range p.edits {
		if !sameNow(ed) {
			e.abandon(entry)
			return "", busyErr("%s changed during quarantine", ed.path)
		}
	}
	// The inspected file goes last: a plan's other edits (a count in a metadata file) are
	// then never left behind by a failure or a crash, which a later inspection of the
	// inspected file could no longer see.
	changed := false
	for i := len(p.edits) - 1; i >= 0; i-- {
		// An edit whose sum is taken as it is written has the journal told it before its
		// rename: an entry a crash leaves without it is one whose file was never replaced.
		// An edit whose original's sum was still being taken has its quarantine made once
		// its new file is written, and the journal told that sum too before the rename.
		told := func(sum string) error {
			entry.Edits[i].NewSHA256, entry.Edits[i].OldSHA256 = sum, p.edits[i].oldSHA()
			if err := e.Journal.Update(entry); err != nil {
				return err
			}
			e.step("sum-journaled", t.Path)
			return nil
		}
		late := func(ed *edit, newSum string) error {
			if err := e.waitOld(ed); err != nil {
				return err
			}
			manifests[i].NewSHA256 = newSum
			if err := e.quarantineEdit(manifests[i], ed, ruleRoot(t.Rule, t.Path), now); err != nil {
				return err
			}
			p.edits[i].oldID = ed.oldID
			e.step("quarantined-late", t.Path)
			return nil
		}
		renamed, wrote, err := e.replace(p.edits[i], entry.Edits[i].Temp, t.Path, ruleRoot(t.Rule, t.Path), told, late)
		changed = changed || renamed
		if wrote.Ino != 0 {
			if *written == nil {
				*written = map[string]Identity{}
			}
			(*written)[p.edits[i].path] = wrote
		}
		if err != nil {
			// Edits already applied are valid on their own; this entry is resolved now
			// rather than at the next start (the quarantine entries of the edits that did
			// not stand say so). Nothing replaced, nothing to keep.
			if !changed {
				e.dropQuarantine(entry)
				first = ""
			}
			e.Journal.Abort(entry)
			return first, err
		}
	}
	if err := e.Journal.End(entry); err != nil {
		return first, err
	}
	e.step("done", t.Path)
	e.verify(t, in, (*written)[t.Path], p.edits[0].newSHA())
	return first, nil
}

// verify: the result must validate, and becomes the new last-good copy. A big result is
// validated streaming, and read whole only for a last-good copy it fits in. A big result
// that is still the version this heal wrote (wrote: its identity after the rename, zero when
// an app wrote over it first) is the plan's bytes, which were judged healthy when the plan
// was made, whose hash (newSHA) the plan or the write took and which the identity checks
// around the write kept that version: copied by the kernel without judging or hashing them
// again.
func (e *Engine) verify(t Target, in *inspection, wrote Identity, newSHA string) {
	c := in.ctx
	c.lastGood = nil
	if c.typ.AppendOnly() && !e.oneShot && wrote.Ino != 0 {
		// The version this heal wrote, judged healthy when it was planned, is where the
		// app's next appends are validated from: not a full pass over the file again.
		if id, err := fsio.StatIdentity(t.Path); err == nil && id.Same(wrote) {
			if tc := in.tornCut; tc != nil && tc.KeepSHA == newSHA {
				e.inc.RememberCut(t.Path, c.typ, id, tc) // the cut written: what it kept is known
			} else {
				e.inc.RememberFile(t.Path, c.typ, id)
			}
		}
	}
	if !t.Rule.KeepLastGood {
		return // the verdict would keep no copy
	}
	big := e.bigFor(c.typ)
	if id, err := fsio.StatIdentity(t.Path); err == nil && (c.typ.Plain() || appStreamed(c.typ) || format.IsDocument(c.typ)) && id.Size > big {
		if lg := e.LastGood.MaxFileBytes; (lg > 0 && id.Size > lg) || id.Size > planLimit {
			return // no copy of a file this large
		}
		f, err := fsio.OpenStable(t.Path, id)
		if err != nil {
			return
		}
		defer f.Close()
		known := ""
		if ours := wrote.Ino != 0 && id.Same(wrote); ours {
			known = newSHA
		} else {
			v, err := judgeStreamed(&c, f, 0, id.Size)
			if err != nil || !fsio.StillSame(f, id) || v.Status != Healthy {
				return
			}
		}
		// Validated: copied streaming, and kept if it is still that version.
		in.copyErr = copyFailed(e.LastGood.PutFrom(t.Path, f, id.Size, known, func() bool { return fsio.StillSame(f, id) }))
		return
	}
	if data, _, err := fsio.ReadStable(t.Path, t.Rule.Limits.MaxFileSize); err == nil {
		if format.Inspect(c.typ, c.file(), data).Status == Healthy {
			in.copyErr = copyFailed(e.LastGood.Put(t.Path, data))
		}
	}
}

// abandon ends a journal entry before any file was touched: its quarantine entries go first
// (a crash in between leaves the journal entry, whose resolution finds them gone or removes
// what is left of them).
func (e *Engine) abandon(entry *state.Entry) {
	e.dropQuarantine(entry)
	_ = e.Journal.End(entry)
}

func (e *Engine) dropQuarantine(entry *state.Entry) {
	for _, ed := range entry.Edits {
		if ed.Quarantine != "" {
			// The manifest first: an entry a crash leaves half removed is then one without
			// a manifest, which no listing shows and the journal's resolution removes.
			os.Remove(filepath.Join(ed.Quarantine, "manifest.json"))
			os.RemoveAll(ed.Quarantine)
		}
	}
}

// replace durably puts ed.data at ed.path through the temp file tmp. root is the rule's root:
// the file's directory is reached from it without following symlinks, and every operation
// goes through that directory's descriptor. wrote is the identity of the file it left there
// (zero when it cannot tell that file from a later write of the app's).
func (e *Engine) replace(ed edit, tmp, target, root string, told func(sum string) error, late func(ed *edit, newSum string) error) (renamed bool, wrote Identity, err error) {
	d, err := e.fs.OpenParent(root, ed.path)
	if err != nil {
		return false, Identity{}, busyErr("%v", err)
	}
	defer d.Close()
	if why := d.Insecure(); why != "" {
		return false, Identity{}, insecureErr(why)
	}
	name, tmpName := filepath.Base(ed.path), filepath.Base(tmp)
	// A file restored where none is belongs to the owner and group of its directory (the
	// user whose tree it is, never the process that heals it) and gets the directory's mode
	// without the execute bits (0700 → 0600 for Claude's private dirs, 0755 → 0644 for
	// Gemini's), unless the edit carries the mode it had. Only permission bits are ever
	// given: a recorded mode is a record, and a setuid or setgid bit in it is dropped.
	var mode os.FileMode
	var uid, gid int
	if ed.missing {
		duid, dgid, dperm, err := d.Owner()
		if err != nil {
			return false, Identity{}, err
		}
		mode, uid, gid = dperm&^0o111, duid, dgid
		if ed.oldID.Mode != 0 {
			mode = os.FileMode(ed.oldID.Mode) & os.ModePerm
		}
	} else {
		mode, uid, gid = os.FileMode(ed.oldID.Mode)&os.ModePerm, int(ed.oldID.UID), int(ed.oldID.GID)
	}
	if ed.cutsInPlace() {
		// A big file's tail cut is made in place under a write lease where one is granted:
		// the file keeps its inode, nothing is written but the cut (its bytes are in
		// quarantine), and no app can open it meanwhile.
		if renamed, wrote, err := e.truncateLeased(d, ed, target); !errors.Is(err, fsio.ErrNoLease) {
			return renamed, wrote, err
		}
	}
	var old *os.File
	if !ed.missing {
		// Keep the old inode open: an app without a lock that writes between our last check
		// and the rename writes into it, and we must notice. It is also the identity check
		// through the directory we hold.
		f, err := d.OpenFile(name, os.O_RDONLY|syscall.O_NONBLOCK, 0) // a FIFO swapped in never blocks the open
		if err != nil {
			return false, Identity{}, busyErr("%s: %v", ed.path, err)
		}
		old = f
		defer old.Close()
		fi, err := old.Stat()
		if err != nil || !fsio.IdentityOf(fi).Same(ed.oldID) {
			return false, Identity{}, busyErr("%s changed before the replace", ed.path)
		}
		if pids := e.writers(ed); len(pids) > 0 {
			// A rename would strand the writer's later writes in the old inode, and a cut
			// in place would cut off an append it makes between the cut's last check and
			// the cut (no lease is granted beside another descriptor): deferred until it
			// lets the file go.
			return false, Identity{}, writersBusy(ed, pids)
		}
	}
	var tmpID Identity
	// A sum taken as the new file is written, and an original quarantined once it is
	// (lateQuarantine), are told the journal before the rename.
	sumLater, lateQ := ed.big != nil && ed.big.sumLater, ed.lateQuarantine()
	var sum string
	if sumLater {
		if lateQ {
			ed.big.resumeSum()
		}
		tmpID, sum, err = d.WriteTempSum(tmp, ed.content(), old, mode, uid, gid)
	} else {
		if ed.big != nil {
			sum = ed.big.newSHA
		}
		tmpID, err = d.WriteTemp(tmp, ed.content(), old, sum, mode, uid, gid)
	}
	if err != nil {
		return false, Identity{}, err
	}
	e.step("temp-written", target)
	if lateQ {
		err = late(&ed, sum)
	}
	if err == nil && (sumLater || lateQ) {
		err = told(sum)
	}
	if err != nil {
		d.Remove(tmpName)
		return false, Identity{}, err
	}
	if sumLater {
		ed.big.newSHA, ed.big.sumLater = sum, false // (the plan's edit: big is shared)
	}
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

// writers are the other processes holding ed's file open for writing.
func (e *Engine) writers(ed edit) []int {
	if e.findWriters == nil || ed.missing {
		return nil
	}
	return e.findWriters(ed.oldID.Dev, ed.oldID.Ino)
}

// writersBusy: ed's file is held open for writing by pids: nothing is applied beside a
// writer.
func writersBusy(ed edit, pids []int) error {
	return busyErr("%s is held open for writing by pid %v: deferred until it is closed (a change beside a writer could cut off or strand its next append)", ed.path, pids)
}

// probeBusy takes, for a dry run, the liveness decision apply would take for plan p, writing
// nothing: the app's lock or liveness protocol probed (see lock.Options.Probe), and a writer
// holding a file open. It returns apply's busy error, or nil.
func (e *Engine) probeBusy(ctx context.Context, t Target, in *inspection, p *plan) error {
	held, err := e.takeLock(ctx, t.Rule, t.Path, in.ctx.typ, true)
	if err != nil {
		return err
	}
	held.Release()
	for _, ed := range p.edits {
		if pids := e.writers(ed); len(pids) > 0 {
			return writersBusy(ed, pids)
		}
	}
	return nil
}

// truncateLeased cuts the file in place to the plan's prefix under a write lease
// (fsio.WriteLease): granted only while no other descriptor has the file open, and holding
// off any other open until it is released, it proves that nothing but the cut changes the
// file between the identity check and the cut — where a rename would leave an app that
// opened the file before it writing into the replaced inode, and an unleased cut would cut
// off an append made after the check. An app that opens the file meanwhile waits (for a
// truncate and its fsync: milliseconds) and appends after the cut. A file with other names
// is never cut in place (the cut would show through every name: a file outside the tree
// linked in). fsio.ErrNoLease when no lease is granted, or the file has other names: the
// caller goes on as for any other plan. The fault seam is asked before the lease is taken
// and after it is released (a hook that opened the file while it is held would wait for it).
func (e *Engine) truncateLeased(d *fsio.Dir, ed edit, target string) (bool, Identity, error) {
	if err := e.fs.Do("truncate", ed.path, func() error { return nil }); err != nil {
		return false, Identity{}, fmt.Errorf("truncate %s: %w", ed.path, err)
	}
	f, err := d.OpenFile(filepath.Base(ed.path), os.O_WRONLY|syscall.O_NONBLOCK, 0) // nor a FIFO swapped in
	if err != nil {
		return false, Identity{}, fsio.ErrNoLease
	}
	defer f.Close()
	// The file's data written before now (the app's last appends) is flushed before the
	// lease: under it, the fsync after the cut has only the cut to write, and an app's
	// open waits for no more than that.
	if err := f.Sync(); err != nil {
		return false, Identity{}, fsio.ErrNoLease
	}
	if err := fsio.WriteLease(f); err != nil {
		return false, Identity{}, err
	}
	fi, err := f.Stat()
	if err != nil || !fsio.IdentityOf(fi).Same(ed.oldID) {
		fsio.ReleaseLease(f)
		return false, Identity{}, busyErr("%s changed before the truncate", ed.path)
	}
	if fsio.IdentityOf(fi).Nlink != 1 {
		fsio.ReleaseLease(f)
		return false, Identity{}, fsio.ErrNoLease
	}
	e.step("leased", target)
	if err := f.Truncate(ed.newSize()); err != nil {
		fsio.ReleaseLease(f)
		return false, Identity{}, fmt.Errorf("truncate %s: %w", ed.path, err)
	}
	serr := f.Sync()
	var wrote Identity
	if fi, err := f.Stat(); err == nil {
		wrote = fsio.IdentityOf(fi)
	}
	fsio.ReleaseLease(f)
	if serr == nil {
		serr = e.fs.Do("fsync", ed.path, func() error { return nil })
	}
	if serr != nil {
		return true, Identity{}, fmt.Errorf("fsync %s: %w", ed.path, serr)
	}
	e.step("renamed", target)
	// An app that opened the file meanwhile writes as soon as the lease is gone: what the
	// heal left is its own only as long as the path still shows it.
	if now, err := d.Stat(filepath.Base(ed.path)); err != nil || !now.SameWrite(wrote) {
		wrote = Identity{}
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
	now, err := d.Stat(name)
	if err == nil && now.SameWrite(ours) {
		// Copied from the old inode streaming: whatever its size, it is not held in memory.
		// The path must still hold ours right before the rename: an app that appends writes
		// through the path into ours meanwhile (the copy and its fsync take a while), and a
		// rename over that append would lose it.
		err := e.putAgain(d, ed, fsio.Range{Off: 0, N: fi.Size()}, old, func() error {
			if cur, err := d.Stat(name); err != nil || !cur.SameWrite(ours) {
				return errNotOurs
			}
			return nil
		})
		if err == nil {
			return busyErr("%s: the app wrote during the heal; its bytes were put back", ed.path)
		}
		if !errors.Is(err, errNotOurs) {
			return err
		}
		now, err = d.Stat(name)
	}
	if err == nil && now.Ino == ours.Ino && now.Size > ours.Size {
		// The path still holds the inode we wrote, grown: an app without a lock that
		// appends (Claude Code's appendFile) appended to the old inode during the heal,
		// then to ours.
		if merged, src, done, ok := appendsOnBoth(d, old, fi, ed, now); ok {
			defer done()
			return e.putBackAppends(d, ed, merged, src, now)
		}
	}
	return busyErr("%s: the app wrote during the heal, then saved again over it", ed.path)
}

// errNotOurs: the path no longer holds the version a heal renamed there.
var errNotOurs = errors.New("the path no longer holds the heal's version")

// putAgain durably replaces the file at ed.path, in d, with c (read from src when c needs
// it), with the mode and owner ed's file had: temp, write, fsync, rename, directory fsync.
// still, when set, is asked after the temp is written; an error it returns removes the temp
// and is returned as it is.
func (e *Engine) putAgain(d *fsio.Dir, ed edit, c fsio.Content, src io.ReaderAt, still func() error) error {
	path := fsio.TempName(ed.path)
	tmp := filepath.Base(path)
	if _, err := d.WriteTemp(path, c, src, "", os.FileMode(ed.oldID.Mode), int(ed.oldID.UID), int(ed.oldID.GID)); err != nil {
		return err
	}
	if still != nil {
		if err := still(); err != nil {
			d.Remove(tmp)
			return err
		}
	}
	if err := e.fs.Do("rename", ed.path, func() error { return d.Rename(tmp, filepath.Base(ed.path)) }); err != nil {
		d.Remove(tmp)
		return err
	}
	return d.Sync()
}

// maxMergedAppends bounds what appendsOnBoth holds: both appends.
const maxMergedAppends = 64 << 20

// appendsOnBoth: the old inode is the bytes the heal read with an append after them, and the
// file at the path is the bytes the heal wrote with another append after them. Both appends
// are the app's, in that order: merged is the heal's bytes, then the old inode's append, then
// the new one's, said as a splice of the file at the path (src, open until done is called;
// the old inode's append held). Each file's bytes before its append are told by their sha256,
// read streaming: the heal's bytes are not held, whatever their size. ok is false for
// anything else (a rewrite, appends too large to hold).
func appendsOnBoth(d *fsio.Dir, old *os.File, oldFi os.FileInfo, ed edit, now Identity) (merged *format.Splice, src io.ReaderAt, done func(), ok bool) {
	oldN, newN := ed.oldSize(), ed.newSize()
	if oldFi.Size() < oldN || now.Size < newN || oldFi.Size()-oldN+now.Size-newN > maxMergedAppends {
		return nil, nil, nil, false
	}
	if sum, err := prefixSHA(old, oldN); err != nil || sum != ed.oldSHA() {
		return nil, nil, nil, false
	}
	f, err := d.OpenFile(filepath.Base(ed.path), os.O_RDONLY|syscall.O_NONBLOCK, 0)
	if err != nil {
		return nil, nil, nil, false
	}
	if fi, err := f.Stat(); err != nil || !fsio.IdentityOf(fi).SameWrite(now) {
		f.Close()
		return nil, nil, nil, false // still being written: the caller backs off
	}
	if sum, err := prefixSHA(f, newN); err != nil || sum != ed.newSHA() {
		f.Close()
		return nil, nil, nil, false
	}
	a1 := make([]byte, oldFi.Size()-oldN)
	if k, _ := old.ReadAt(a1, oldN); k < len(a1) {
		f.Close()
		return nil, nil, nil, false
	}
	if fi, err := f.Stat(); err != nil || !fsio.IdentityOf(fi).SameWrite(now) {
		f.Close()
		return nil, nil, nil, false
	}
	merged = &format.Splice{}
	merged.AddRange(0, newN)
	merged.AddData(a1)
	merged.AddRange(newN, now.Size-newN)
	return merged, f, func() { f.Close() }, true
}

// prefixSHA is the hex sha256 of the first n bytes of f, read streaming.
func prefixSHA(f io.ReaderAt, n int64) (string, error) {
	h := sha256.New()
	if k, err := io.Copy(h, io.NewSectionReader(f, 0, n)); err != nil || k < n {
		if err == nil {
			err = io.ErrUnexpectedEOF
		}
		return "", err
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}

// putBackAppends replaces the file at the path (still the version now) with merged, the
// heal's bytes and both of the app's appends in order, and reports busy: the file is looked
// at again later (an append glued to a torn line is damage a next heal salvages).
func (e *Engine) putBackAppends(d *fsio.Dir, ed edit, merged fsio.Content, src io.ReaderAt, now Identity) error {
	err := e.putAgain(d, ed, merged, src, func() error {
		if cur, err := d.Stat(filepath.Base(ed.path)); err != nil || !cur.SameWrite(now) {
			return busyErr("%s: the app appended during the heal, and again while its appends were put back", ed.path)
		}
		return nil
	})
	if err != nil {
		return err
	}
	return busyErr("%s: the app appended during the heal; its appends were put back in order", ed.path)
}

// waitOld waits for the original's sum of ed when it is still being taken (bigEdit.waitOld):
// a read of it that failed on a file that is no longer the version planned from is busy.
func (e *Engine) waitOld(ed *edit) error {
	if ed.big == nil {
		return nil
	}
	if err := ed.big.waitOld(); err != nil {
		if !sameNow(*ed) {
			return busyErr("%s changed since it was read", ed.path)
		}
		return fmt.Errorf("%s: the sum of its bytes: %w", ed.path, err)
	}
	return nil
}

// quarantineEdit puts the original of ed into quarantine under the manifest m: a replace
// keeps the original's own inode where it may (its identity changed with the link, and the
// checks that follow compare with that one: ed.oldID is set to it); else its bytes are
// copied, from the file for a big one (the version the plan was made from: of a tail cut,
// the bytes it removes).
func (e *Engine) quarantineEdit(m *Manifest, ed *edit, root string, now time.Time) error {
	if ed.big == nil {
		_, err := e.Quarantine.Put(m, ed.old, now)
		return err
	}
	linked, id, err := e.quarantineLinked(m, ed, root, now)
	switch {
	case err != nil:
		return err
	case linked:
		ed.oldID = id
		return nil
	}
	var keep int64
	if ed.cutsInPlace() {
		keep = ed.big.newSize
	}
	_, err = e.quarantineFile(m, ed.path, ed.oldID, ed.big.oldSHA, keep, ed.big.newSHA, now)
	return err
}
