package heal

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/sessionmedic/sessionmedic/heal/format"
	"github.com/sessionmedic/sessionmedic/heal/fsio"
	"github.com/sessionmedic/sessionmedic/heal/lock"
	"github.com/sessionmedic/sessionmedic/heal/sqlitedb"
	"github.com/sessionmedic/sessionmedic/heal/state"
	"github.com/sessionmedic/sessionmedic/policy"
)

// An app's SQLite store (openclaw-sqlite.md) is never read, written, renamed or copied by
// plain file I/O: a close of any descriptor of it would drop SQLite's locks on it, and its
// -wal holds committed transactions. It is judged on a private copy taken through SQLite's
// backup API (state_dir/sqlite/tmp), by the app's own gate (integrity_check and
// foreign_key_check); healed through SQLite, live, while the app may write: indexes rebuilt
// (strategy reindex), or the newest snapshot written back (restore-snapshot, opt-in). The
// copy a heal starts from is its quarantine entry; a copy of a store judged healthy is kept
// as its newest snapshot (state_dir/sqlite/snapshots). Only a store whose page 1 is destroyed
// is replaced as a file, and only while no process holds it (restoreOffline).

// sqliteRejudge: a store whose files have not changed since it was judged healthy is judged
// again after this long (the daemon looks at every file at each rescan; a check of a 1 GiB
// store costs seconds of a CPU).
const sqliteRejudge = 6 * time.Hour

// sqliteSnapshots is how many verified snapshots of a store are kept.
const sqliteSnapshots = 2

// sqliteLiveVacuum is the largest store whose broken index is rebuilt, or whose snapshot is
// restored, while its app may hold it: the VACUUM that ends a rebuild takes ~1.4 s for
// 256 MiB on a 2-core machine (5.6 s a GiB), a restore less, both well inside the apps' 5 s
// busy timeout; a larger store only while no process holds it.
const sqliteLiveVacuum = 256 << 20

func (e *Engine) liveVacuum() int64 {
	if e.sqlite.liveVacuum > 0 {
		return e.sqlite.liveVacuum
	}
	return sqliteLiveVacuum
}

// sqliteSpacing: a store judged healthy is judged again, when it changes, no sooner than
// this many times its judgement took after it (and at least sqliteMinGap after): a busy
// app's store changes at every commit, and a judgement of 1 GiB takes seconds of a CPU, so
// it takes at most a few percent of one.
const (
	sqliteSpacing = 30
	sqliteMinGap  = 10 * time.Second
)

// sqliteSeen is what the engine knows of a store it judged healthy.
type sqliteSeen struct {
	gen  [2]Identity // the store's and its -wal's identity (zero: none) when judged
	at   time.Time
	cost time.Duration // how long its judgement took
}

type sqliteState struct {
	mu         sync.Mutex
	seen       map[string]sqliteSeen
	liveVacuum int64 // tests: replaces sqliteLiveVacuum
}

// generation is the identity of the store at path and of its -wal: what changes when a
// transaction commits or a checkpoint runs. Only stat is used (never an open).
func sqliteGeneration(path string) (gen [2]Identity, err error) {
	if gen[0], err = fsio.StatIdentity(path); err != nil {
		return gen, err
	}
	gen[1], _ = fsio.StatIdentity(path + "-wal")
	return gen, nil
}

// sqliteTarget reports whether t names an app's SQLite store.
func (e *Engine) sqliteTarget(t Target) (format.SQLiteStore, bool) {
	if t.Skip != "" || t.Temp {
		return nil, false
	}
	s, ok := e.profile(t.Rule.Format, t.Path).(format.SQLiteStore)
	return s, ok
}

// sqliteJudged is one judgement of a store: its verdict and what the gate said, and the
// private copy it was made on (removed by release unless kept).
type sqliteJudged struct {
	verdict Verdict
	j       sqlitedb.Judgement
	gen     [2]Identity
	snap    string // the copy, or ""
	size    int64
	fresh   bool          // judged now (not the cache's answer)
	cost    time.Duration // how long the copy and its judgement took
}

func (s *sqliteJudged) release() {
	if s.snap != "" {
		os.Remove(s.snap)
		s.snap = ""
	}
}

// sqliteTmp is where the private copies are taken.
func (e *Engine) sqliteTmp() (string, error) {
	dir := filepath.Join(e.StateDir, "sqlite", "tmp")
	if err := e.fs.MkdirAllSync(dir); err != nil {
		return "", err
	}
	return dir, nil
}

// tmpName is the name of a new private copy: this process's pid and start time, as a journal
// entry names its owner, so that a copy a crash left is known for one (cleanSQLiteTmp), and
// random bytes.
func tmpName() string {
	var b [8]byte
	rand.Read(b[:])
	start, _ := lock.ProcessStart(os.Getpid())
	return fmt.Sprintf("%d-%d-%s.sqlite", os.Getpid(), start, hex.EncodeToString(b[:]))
}

// cleanSQLiteTmp removes the private copies of processes that are gone (a crash, a kill): a
// copy is only ever used by the process that took it.
func (e *Engine) cleanSQLiteTmp() {
	dir := filepath.Join(e.StateDir, "sqlite", "tmp")
	ents, err := os.ReadDir(dir)
	if err != nil {
		return
	}
	for _, d := range ents {
		var pid int
		var start uint64
		if n, _ := fmt.Sscanf(d.Name(), "%d-%d-", &pid, &start); n != 2 || pid <= 0 {
			continue
		}
		if pid != os.Getpid() && !lock.ProcessAlive(pid, start) {
			os.Remove(filepath.Join(dir, d.Name()))
		}
	}
}

// A store that cannot be judged (its copy or its check failed) is busy, not skipped: the
// daemon looks at it again with backoff and says it (file.busy) while it lasts, for it is not
// guarded meanwhile.
//
// How a store is judged: on a private copy taken through the backup API (the quarantine
// entry a heal needs, the snapshot a healthy store leaves), on the store itself in one read
// transaction (writing nothing anywhere), or by its size: a copy of a store over
// last_good.max_file_bytes would outgrow the state dir's budget, so it is judged live, and
// copied only when a heal needs the copy.
type judgeMode int

const (
	judgeAuto judgeMode = iota
	judgeLive
	judgeCopy
)

// judgeSQLite judges the store at t.Path as mode says (copies and live reads made as the
// tree's owner where that applies). cached: a store unchanged since it was judged healthy
// (and judged less than sqliteRejudge ago), or judged within its spacing, is healthy without
// a look (never in one-shot use).
func (e *Engine) judgeSQLite(t Target, cached bool, mode judgeMode) (out sqliteJudged) {
	out.verdict = format.OK()
	gen, err := sqliteGeneration(t.Path)
	if t.Missing && errors.Is(err, os.ErrNotExist) {
		// Its -wal beside no store (MissingIn): never opened, for any open would start an
		// empty store there and delete the -wal.
		if wal, err := fsio.StatIdentity(t.Path + "-wal"); err == nil && wal.Size > 32 {
			out.verdict = orphanedWAL("missing", wal.Size)
			return out
		}
		out.verdict = format.Skip("file no longer exists")
		return out
	}
	switch {
	case errors.Is(err, os.ErrNotExist):
		out.verdict = format.Skip("file no longer exists")
		return out
	case errors.Is(err, fsio.ErrNotRegular):
		out.verdict = format.Skip("not a regular file")
		return out
	case err != nil:
		out.verdict = format.Unjudged("unreadable: %v", err)
		return out
	}
	out.gen = gen
	if gen[0].Size == 0 && gen[1].Size > 32 {
		// SQLite deletes the -wal of an empty database when it opens it: never opened.
		out.verdict = orphanedWAL("0 bytes", gen[1].Size)
		return out
	}
	if cached && !e.oneShot {
		e.sqlite.mu.Lock()
		s, ok := e.sqlite.seen[t.Path]
		e.sqlite.mu.Unlock()
		since := e.Now().Sub(s.at)
		if ok && ((s.gen == gen && since < sqliteRejudge) || since < max(sqliteMinGap, sqliteSpacing*s.cost)) {
			return out
		}
	}
	if t.Rule.Limits.MaxFileSize > 0 && gen[0].Size+gen[1].Size > t.Rule.Limits.MaxFileSize {
		out.verdict = format.Unjudged("larger than max_file_size (%d bytes)", t.Rule.Limits.MaxFileSize)
		return out
	}
	if gen[0].Size > 0 && !sqliteHeader(t.Path, gen[0]) {
		// Not opened through SQLite at all: an open would read the -wal (and make a -shm)
		// beside a file no connection can use.
		out.verdict = notADatabase()
		return out
	}
	real := fsio.RealPath(t.Path)
	asOwner := func(fn func() error) error { return fsio.AsOwnerOf(t.Path, fn) }
	if mode == judgeAuto {
		mode = judgeCopy
		if max := e.Policy.LastGood.MaxFileBytes; max > 0 && gen[0].Size+gen[1].Size > max {
			mode = judgeLive
		}
	}
	out.fresh = true
	began := time.Now()
	defer func() { out.cost = time.Since(began) }()
	if mode == judgeLive {
		j, err := sqlitedb.JudgeLive(real, asOwner)
		if err != nil {
			out.verdict = notJudged(t.Path, "integrity_check of the store failed", err)
		} else {
			out.j, out.verdict = j, sqliteVerdict(j)
		}
		return out
	}
	dir, err := e.sqliteTmp()
	if err != nil {
		out.verdict = notJudged(t.Path, "its copy cannot be taken in the state directory", err)
		return out
	}
	snap := filepath.Join(dir, tmpName())
	size, err := sqlitedb.Snapshot(real, snap, asOwner)
	if err != nil {
		out.verdict = notJudged(t.Path, "its copy through SQLite's backup API failed", err)
		return out
	}
	out.snap, out.size = snap, size
	// (Synced by Snapshot; said to the engine's file-operation seam, as its own writes are,
	// and its name made durable: a snapshot kept is renamed from here.)
	err = e.fs.Do("fsync", snap, func() error { return fsyncFile(snap) })
	if err == nil {
		err = e.fs.SyncDir(dir)
	}
	if err != nil {
		out.release()
		out.verdict = notJudged(t.Path, "its copy could not be synced", err)
		return out
	}
	j, err := sqlitedb.Judge(snap)
	if err != nil {
		out.release()
		out.verdict = notJudged(t.Path, "integrity_check of its copy failed", err)
		return out
	}
	out.j = j
	out.verdict = sqliteVerdict(j)
	return out
}

// sawHealthy notes that the store at path, of generation gen, was judged healthy (and its
// snapshot kept where the rule keeps one): until it changes, it is not copied again for
// sqliteRejudge.
func (e *Engine) sawHealthy(path string, s *sqliteJudged) {
	if e.oneShot {
		return
	}
	e.sqlite.mu.Lock()
	defer e.sqlite.mu.Unlock()
	if e.sqlite.seen == nil {
		e.sqlite.seen = map[string]sqliteSeen{}
	}
	e.sqlite.seen[path] = sqliteSeen{gen: s.gen, at: e.Now(), cost: s.cost}
}

// notJudged is the verdict of the store at path whose judgement failed at what, with err:
// gone, kept busy by its app's lock past the busy timeout, not a database, or else busy
// (looked at again, and said while it lasts) — never skipped, for it is not guarded meanwhile.
func notJudged(path, what string, err error) Verdict {
	_, serr := fsio.StatIdentity(path)
	switch {
	case errors.Is(err, sqlitedb.ErrNotDatabase):
		return notADatabase()
	case errors.Is(serr, os.ErrNotExist):
		return format.Skip("file no longer exists")
	case strings.Contains(err.Error(), "database is locked"):
		return format.Wait("the store's app held its lock for longer than %d ms: %v", sqlitedb.BusyTimeout, err)
	case sqlitedb.IsNotExist(err):
		// SQLite opens the store by its path, as its owner where that applies: a directory
		// above it its owner cannot pass (one of the operator's) stops the open.
		return format.Wait("not judged (looked at again; said while it lasts): %s: SQLite could not open the store by its path as its owner (every directory above it must let its owner through, as its app's own opens need): %v", what, err)
	}
	return format.Wait("not judged (looked at again; said while it lasts): %s: %v", what, err)
}

func notADatabase() Verdict {
	return format.Damage(format.KindNotADatabase, 0, "page 1 is not a SQLite database header: no SQLite connection can open the store")
}

// orphanedWAL is the verdict of a store missing or empty (as says) beside a -wal of size
// bytes that holds its transactions.
func orphanedWAL(as string, size int64) Verdict {
	return format.Damage(format.KindOrphanedWAL, 0, "the store is %s beside a -wal of %d bytes that holds its committed transactions: any SQLite open of the store would start an empty one and delete that -wal (OpenClaw moves the -wal aside as *.orphaned-<ms> and starts empty); keep the -wal, stop the app and put the store back from a backup", as, size)
}

// sqliteVerdict is the verdict of what the gate said.
func sqliteVerdict(j sqlitedb.Judgement) Verdict {
	if j.OK() {
		return format.OK()
	}
	said := listed(j.Problems)
	switch {
	case j.NotDB:
		return notADatabase()
	case j.IndexOnly() && len(j.Broken) > 0:
		return format.Damage(format.KindBrokenIndex, -1, "the b-tree of index %s cannot be read (its table is sound): integrity_check: %s", strings.Join(j.Broken, ", "), said)
	case j.IndexOnly() && len(j.Stale) > 0:
		return format.Damage(format.KindStaleIndex, -1, "entries of index %s no longer match their rows (every table is sound; quick_check does not see this): integrity_check: %s", strings.Join(j.Stale, ", "), said)
	case j.IndexOnly():
		return format.Damage(format.KindBrokenIndex, -1, "pages no b-tree reaches, left by a broken index made again (every table is sound): integrity_check: %s", said)
	case len(j.Problems) > 0:
		var named []string
		for _, t := range j.Tables {
			if t != "" {
				named = append(named, t)
			}
		}
		where := "damage no index accounts for"
		if len(named) > 0 {
			where = "damage in table " + strings.Join(named, ", ")
		}
		return format.Damage(format.KindCorruptTable, -1, "%s: integrity_check: %s", where, said)
	default:
		return format.Damage(format.KindForeignKey, -1, "rows whose parent row is missing (the app's gate refuses the store): foreign_key_check: %s", listed(j.Foreign))
	}
}

// listed is the first three of what the gate said, and how many more it said.
func listed(said []string) string {
	if len(said) <= 3 {
		return strings.Join(said, "; ")
	}
	return fmt.Sprintf("%s; %d more", strings.Join(said[:3], "; "), len(said)-3)
}

// checkSQLite is Check of a store.
func (e *Engine) checkSQLite(t Target, r *Report) {
	s := e.judgeSQLite(t, true, judgeLive)
	defer s.release()
	fill(r, s.verdict)
}

// healSQLite is Heal of a store: judged; its copy kept as its newest snapshot when healthy;
// when damaged in its indexes alone and the rule allows reindex, the copy quarantined and the
// indexes rebuilt live, then the store judged again.
func (e *Engine) healSQLite(ctx context.Context, t Target, store format.SQLiteStore, r *Report, dryRun bool) {
	r.Action = ActionNone
	// A dry run writes nothing, not even a copy in the state dir: it judges the store itself.
	mode := judgeAuto
	if dryRun {
		mode = judgeLive
	}
	s := e.judgeSQLite(t, true, mode)
	defer s.release()
	e.step("judged", t.Path)
	fill(r, s.verdict)
	switch {
	case s.verdict.Status == Healthy:
		if s.snap != "" && !dryRun && t.Rule.KeepLastGood && t.Rule.Mode != policy.ModeObserve {
			if err := e.keepSnapshot(t.Path, &s); err != nil {
				r.CopyErr = err.Error()
			}
		}
		if s.fresh && !dryRun && r.CopyErr == "" {
			e.sawHealthy(t.Path, &s)
		}
		return
	case s.verdict.Status != Damaged:
		return
	}
	strategy, snap := e.sqliteStrategy(t, &s)
	if strategy == "" {
		r.Action, r.Reason = ActionRefused, e.sqliteAdvice(t, store, &s)
		return
	}
	offline := s.verdict.Kind == format.KindNotADatabase
	if offline {
		// Never while anyone may hold the store: a connection opened before page 1 was lost
		// may still write into its -wal.
		if _, err := e.storeFamily(t.Path); err != nil {
			r.Action, r.Reason = ActionRefused, err.Error()+"; "+e.sqliteAdvice(t, store, &s)
			return
		}
	}
	rewrites := ""
	switch {
	case strategy == policy.Reindex && (len(s.j.Broken) > 0 || s.j.Orphans):
		// The rebuild ends with a VACUUM, which holds the store's write lock for as long as
		// it rewrites the store (~5.6 s a GiB here).
		rewrites = "rebuilding " + strings.Join(s.j.Broken, ", ") + " ends with a VACUUM"
	case strategy == policy.RestoreSnapshot && !offline:
		rewrites = "restoring the snapshot writes every page" // through the backup API, ~2.3 s a GiB
	}
	if rewrites != "" && s.gen[0].Size > e.liveVacuum() {
		// Longer than the app waits for the write lock: done only while no one holds it.
		if _, err := e.storeFamily(t.Path); err != nil {
			r.Action = ActionRefused
			r.Reason = fmt.Sprintf("%s of the %d MiB store, holding its write lock for seconds (longer than its app's %d ms busy timeout), done only while no process holds the store: %v; %s",
				rewrites, s.gen[0].Size>>20, sqlitedb.BusyTimeout, err, e.sqliteAdvice(t, store, &s))
			return
		}
	}
	if t.Rule.Mode == policy.ModeObserve {
		r.Action, r.Reason = ActionRefused, "observe mode: would heal with "+string(strategy)
		return
	}
	if dryRun {
		r.Action, r.Strategy = ActionWouldHeal, string(strategy)
		return
	}
	lk, err := e.lockPath(ctx, t.Path)
	if err != nil {
		r.Verdict, r.Reason = Busy, err.Error()
		if !errors.Is(err, errBusy) {
			r.Verdict, r.Action = Damaged, ActionRefused
		}
		return
	}
	defer lk.Release()
	e.step("locked", t.Path)
	if !offline && (strategy == policy.RestoreSnapshot || s.snap == "") {
		// Another process healing under this state dir (a `heal` beside the daemon) may have
		// healed it before the lock was ours: a snapshot is never restored over a store that
		// is sound (its newer commits would vanish). Judged again, under the lock, on the copy
		// that will be its quarantine entry (a store judged live has none yet).
		again := e.judgeSQLite(t, false, judgeCopy)
		defer again.release()
		if again.verdict.Status != Damaged || again.verdict.Kind != s.verdict.Kind {
			fill(r, again.verdict)
			return
		}
		s.release()
		s = again
		again = sqliteJudged{}
	}
	if offline {
		q, err := e.restoreOffline(t, &s, snap)
		r.Quarantine = q
		if err != nil {
			r.Action, r.Reason = ActionRefused, err.Error()+"; "+e.sqliteAdvice(t, store, &s)
			if errors.Is(err, errBusy) {
				r.Verdict, r.Action = Busy, ActionNone
			}
			return
		}
		e.sqliteHealed(t, store, r, &s, strategy, snap, "snapshot "+snap.path+" put in place of the store")
		return
	}
	// The copy the store was judged on is the quarantine entry: taken through SQLite, the
	// store as its last transaction left it, damaged pages included.
	m := &Manifest{ID: state.NewID(e.Now()), Path: t.Path, Rule: t.Rule.Name, Identity: s.gen[0], Kind: s.verdict.Kind,
		Offset: -1, Detail: s.verdict.Detail, Strategy: string(strategy)}
	sum, err := fsio.SHAFile(s.snap)
	if err == nil {
		var q string
		q, err = e.Quarantine.PutLinked(m, s.size, sum, func(dst string) (*os.File, error) {
			if err := os.Rename(s.snap, dst); err != nil {
				return nil, err
			}
			s.snap = ""
			return os.Open(dst)
		}, e.Now())
		r.Quarantine = q
	}
	if err != nil {
		r.Action, r.Reason = ActionRefused, writeAdvice(fmt.Errorf("the store's copy could not be quarantined: %w", err))
		return
	}
	r.QuarantinedBytes = s.size
	if ids, err := e.storeFamily(t.Path); err == nil {
		// The app is stopped (no process holds the store or a sidecar): the family's own
		// bytes too, as the files hold them (a -wal's frames past its last commit, pages the
		// copy leaves out), beside the copy through SQLite.
		n, err := e.quarantineFamily(t, &s, strategy, ids, nil, e.Now())
		if err != nil {
			e.Quarantine.MarkRolledBack(filepath.Base(r.Quarantine))
			r.Action, r.Reason = ActionRefused, writeAdvice(fmt.Errorf("the store's files could not be quarantined: %w", err))
			return
		}
		r.QuarantinedBytes += n
	}
	e.step("quarantined", t.Path)
	real := fsio.RealPath(t.Path)
	asOwner := func(fn func() error) error { return fsio.AsOwnerOf(t.Path, fn) }
	var done string // what the heal did, for a refusal after it
	switch strategy {
	case policy.Reindex:
		done = "indexes " + strings.Join(append(append([]string{}, s.j.Stale...), s.j.Broken...), ", ") + " rebuilt"
		err = asOwner(func() error {
			if len(s.j.Stale) > 0 {
				if err := sqlitedb.Reindex(real, s.j.Stale); err != nil {
					return err
				}
			}
			if len(s.j.Broken) > 0 || s.j.Orphans {
				return sqlitedb.Rebuild(real, s.j.Broken)
			}
			return nil
		})
	case policy.RestoreSnapshot:
		done = "snapshot " + snap.path + " restored"
		err = sqlitedb.Restore(snap.path, real, asOwner)
	}
	e.step("written", t.Path)
	if err != nil {
		e.Quarantine.MarkRolledBack(filepath.Base(r.Quarantine))
		if strings.Contains(err.Error(), "database is locked") {
			r.Verdict, r.Action, r.Reason = Busy, ActionNone, "the store's app held its write lock: "+err.Error()
			return
		}
		r.Action, r.Reason = ActionRefused, "SQLite refused the "+string(strategy)+": "+err.Error()+"; "+e.sqliteAdvice(t, store, &s)
		return
	}
	e.sqliteHealed(t, store, r, &s, strategy, snap, done)
}

// sqliteHealed verifies a store's heal as it was judged (a new copy, the app's gate) and
// fills r with the outcome.
func (e *Engine) sqliteHealed(t Target, store format.SQLiteStore, r *Report, s *sqliteJudged, strategy policy.Strategy, snap storeSnapshot, done string) {
	if strategy == policy.RestoreSnapshot {
		r.Discarded = fmt.Sprintf("every transaction the store committed after %s (the snapshot restored, %s before the restore)", snap.at.UTC().Format(time.RFC3339), e.Now().Sub(snap.at).Round(time.Second))
	}
	// Verified as it was judged: a new copy, the app's gate.
	v := e.judgeSQLite(t, false, judgeAuto)
	defer v.release()
	if v.verdict.Status != Healthy {
		r.Action = ActionRefused
		r.Reason = fmt.Sprintf("%s, and the store is still judged %s: %s; %s", done, v.verdict.Status, v.verdict.Detail, e.sqliteAdvice(t, store, &v))
		return
	}
	r.Action, r.Strategy = ActionHealed, string(strategy)
	if t.Rule.KeepLastGood {
		if err := e.keepSnapshot(t.Path, &v); err != nil {
			r.CopyErr = err.Error()
		}
	}
	if r.CopyErr == "" {
		e.sawHealthy(t.Path, &v)
	}
	if id, err := fsio.StatIdentity(t.Path); err == nil {
		r.Wrote = map[string]Identity{t.Path: id}
	}
	e.step("done", t.Path)
}

// storeSnapshot is a kept snapshot of a store, and when it was taken.
type storeSnapshot struct {
	path string
	at   time.Time
}

// sqliteStrategy is the strategy of the rule that heals the damage s found ("" for none):
// reindex where the indexes alone are damaged; else restore-snapshot, where the rule opts in,
// page 1 is readable, and the store's newest kept snapshot passes the gate (and snap is it).
//
// A store whose page 1 is destroyed cannot be written through SQLite: its restore replaces
// the file (restoreOffline), only while no process holds the store or a sidecar open.
func (e *Engine) sqliteStrategy(t Target, s *sqliteJudged) (policy.Strategy, storeSnapshot) {
	if s.j.IndexOnly() && t.Rule.HasStrategy(policy.Reindex) {
		return policy.Reindex, storeSnapshot{}
	}
	if !t.Rule.HasStrategy(policy.RestoreSnapshot) || s.verdict.Kind == format.KindOrphanedWAL {
		return "", storeSnapshot{}
	}
	snaps := e.snapshots(t.Path)
	if len(snaps) == 0 {
		return "", storeSnapshot{}
	}
	newest := snaps[len(snaps)-1]
	if j, err := sqlitedb.Judge(newest); err != nil || !j.OK() {
		return "", storeSnapshot{}
	}
	var ns int64
	fmt.Sscanf(strings.TrimSuffix(filepath.Base(newest), ".sqlite"), "%d", &ns)
	return policy.RestoreSnapshot, storeSnapshot{path: newest, at: time.Unix(0, ns)}
}

// sqliteAdvice says why a damaged store is left as it is and what its app's own tool does.
func (e *Engine) sqliteAdvice(t Target, store format.SQLiteStore, s *sqliteJudged) string {
	var why string
	switch {
	case s.j.IndexOnly():
		why = "its indexes alone are damaged, and the rule does not allow reindex"
	case s.verdict.Kind == format.KindNotADatabase:
		why = "page 1 is destroyed: SQLite cannot open the store, and it is not repaired while its app may run"
	case s.verdict.Kind == format.KindOrphanedWAL:
		why = "its committed transactions are in the -wal alone, which sessionmedic never opens beside an empty store"
	case s.verdict.Kind == format.KindForeignKey:
		why = "rows lack their parent rows: sessionmedic does not delete rows"
	default:
		why = "a table is damaged: rebuilding indexes cannot bring its rows back"
	}
	if d := store.SQLiteDoctor(); d != "" {
		why += "; " + d
	}
	if snaps := e.snapshots(t.Path); len(snaps) > 0 && !s.j.NotDB {
		why += "; sessionmedic's newest snapshot that passed the check is " + snaps[len(snaps)-1]
		if !t.Rule.HasStrategy(policy.RestoreSnapshot) {
			why += " (the rule's strategy restore-snapshot would write it into the store, discarding the writes since)"
		}
	} else if t.Rule.HasStrategy(policy.RestoreSnapshot) && !s.j.NotDB {
		why += "; restore-snapshot has no snapshot that passed the check to restore"
	}
	return why
}

// snapshotDir is where the snapshots of the store at path are kept.
func (e *Engine) snapshotDir(path string) string {
	return filepath.Join(e.StateDir, "sqlite", "snapshots", state.CopyName(path))
}

// snapshots lists the kept snapshots of the store at path, oldest first.
func (e *Engine) snapshots(path string) []string {
	dir := e.snapshotDir(path)
	ents, err := os.ReadDir(dir)
	if err != nil {
		return nil
	}
	var out []string
	for _, d := range ents {
		if strings.HasSuffix(d.Name(), ".sqlite") {
			out = append(out, filepath.Join(dir, d.Name()))
		}
	}
	sort.Strings(out)
	return out
}

// keepSnapshot keeps the copy s was judged healthy on as the store's newest snapshot (when it
// is within last_good.max_file_bytes), and the sqliteSnapshots newest only.
func (e *Engine) keepSnapshot(path string, s *sqliteJudged) error {
	if s.snap == "" || (e.Policy.LastGood.MaxFileBytes > 0 && s.size > e.Policy.LastGood.MaxFileBytes) {
		return nil
	}
	dir := e.snapshotDir(path)
	if err := e.fs.MkdirAllSync(dir); err != nil {
		return copyFailed(err)
	}
	name := fmt.Sprintf("%020d.sqlite", e.Now().UnixNano())
	from := filepath.Dir(s.snap)
	if err := os.Rename(s.snap, filepath.Join(dir, name)); err != nil {
		return copyFailed(err)
	}
	s.snap = ""
	// Durable once both directories are (the copy's name left the one, entered the other).
	if err := e.fs.SyncDir(dir); err != nil {
		return copyFailed(err)
	}
	if err := e.fs.SyncDir(from); err != nil {
		return copyFailed(err)
	}
	snaps := e.snapshots(path)
	for len(snaps) > sqliteSnapshots {
		os.Remove(snaps[0])
		snaps = snaps[1:]
	}
	return nil
}

// sidecars are the files SQLite keeps beside a store, named by their suffix.
var sidecars = []string{"-wal", "-shm", "-journal"}

// storeFiles is the store at path and its sidecars, sidecars first (the order they are
// quarantined in, as OpenClaw's Doctor moves them aside).
func storeFiles(path string) []string {
	out := make([]string, 0, len(sidecars)+1)
	for _, side := range sidecars {
		out = append(out, path+side)
	}
	return append(out, path)
}

// storeFamily is the identity of the store at path and of each sidecar it has, once no
// other process is seen to hold any of them open; an error (errBusy: a process holds one)
// when one does or that cannot be proven (the processes of other users cannot be seen
// unless run as root).
func (e *Engine) storeFamily(path string) (map[string]Identity, error) {
	ids := map[string]Identity{}
	var all []Identity
	for _, p := range storeFiles(path) {
		id, err := fsio.StatIdentity(p)
		switch {
		case errors.Is(err, os.ErrNotExist):
			continue
		case err != nil:
			return nil, err
		}
		ids[p] = id
		all = append(all, id)
	}
	pids, complete := e.openBy(all)
	switch {
	case len(pids) > 0:
		return nil, busyErr("process %v holds the store or its -wal/-shm open: its file is never replaced while it may run (stop the app and heal again)", pids)
	case !complete:
		return nil, errors.New("it cannot be proven that no process holds the store open (the open files of other users' processes cannot be read: run as root, or stop the app and heal as its user)")
	}
	return ids, nil
}

// restoreOffline puts the newest verified snapshot in place of a store whose page 1 is
// destroyed (no SQLite connection can open it), only while no process holds it or a
// sidecar open: the family's raw bytes are quarantined (sidecars first, the store's entry
// is the one returned), the snapshot is written beside the store as its owner and fsynced,
// the sidecars are removed (a -wal left beside the new file would be replayed over it) and
// the snapshot renamed over the store. A crash before the rename leaves the destroyed store
// (without its sidecars, whose bytes are in quarantine): judged and healed the same way.
func (e *Engine) restoreOffline(t Target, s *sqliteJudged, snap storeSnapshot) (q string, err error) {
	ids, err := e.storeFamily(t.Path)
	if err != nil {
		return "", err
	}
	dbID, ok := ids[t.Path]
	if !ok {
		return "", busyErr("%s is gone", t.Path)
	}
	// The journal names the temp and both versions before anything is written: a crash at
	// any point is resolved at the next start (the temp removed; the store holds the
	// snapshot's bytes, or its own, recorded in its quarantine entry), as a replace's is.
	oldSum, err := fsio.SHAFile(t.Path)
	if err != nil {
		return "", err
	}
	newSum, err := fsio.SHAFile(snap.path)
	if err != nil {
		return "", err
	}
	now := e.Now()
	m := &Manifest{ID: state.NewID(now), Path: t.Path, Rule: t.Rule.Name, Identity: dbID, Kind: s.verdict.Kind,
		Offset: -1, Detail: s.verdict.Detail, Strategy: string(policy.RestoreSnapshot), NewSHA256: newSum}
	tmp := fsio.TempName(t.Path)
	entry := &state.Entry{ID: state.NewID(now), Created: now.UTC(), Edits: []state.Edit{{Path: t.Path, Temp: tmp,
		OldSHA256: oldSum, NewSHA256: newSum, Quarantine: e.Quarantine.EntryDir(m, now)}}}
	if err := e.Journal.Begin(entry); err != nil {
		return "", err
	}
	e.step("journaled", t.Path)
	defer func() {
		if err != nil {
			e.Journal.Abort(entry) // the temp removed, the store's entry marked rolled back
		}
	}()
	if _, err := e.quarantineFamily(t, s, policy.RestoreSnapshot, ids, &storeEntry{m: m, sum: oldSum, dir: &q}, now); err != nil {
		return q, err
	}
	e.step("quarantined", t.Path)
	d, err := e.fs.OpenParent(ruleRoot(t.Rule, t.Path), t.Path)
	if err != nil {
		return q, err
	}
	defer d.Close()
	src, err := os.Open(snap.path)
	if err != nil {
		return q, err
	}
	defer src.Close()
	fi, err := src.Stat()
	if err != nil {
		return q, err
	}
	if _, err := d.WriteTemp(tmp, fsio.Range{Off: 0, N: fi.Size()}, src, newSum, os.FileMode(dbID.Mode&0o777), int(dbID.UID), int(dbID.GID)); err != nil {
		return q, err
	}
	e.step("temp-written", t.Path)
	// Still no one, and nothing changed since the family was quarantined.
	now2, err := e.storeFamily(t.Path)
	if err != nil {
		return q, err
	}
	if len(now2) != len(ids) {
		return q, busyErr("the store's files changed while it was restored")
	}
	for p, id := range ids {
		if !now2[p].Same(id) {
			return q, busyErr("%s changed while the store was restored", p)
		}
	}
	for _, side := range sidecars {
		if _, ok := ids[t.Path+side]; ok {
			if err := d.Unlink(filepath.Base(t.Path) + side); err != nil && !errors.Is(err, os.ErrNotExist) {
				return q, err
			}
		}
	}
	// The sidecars' removal made durable before the rename: a power cut must never keep the
	// new store beside the old -wal (SQLite would replay its frames over it).
	if err := d.Sync(); err != nil {
		return q, err
	}
	if err := d.Rename(filepath.Base(tmp), filepath.Base(t.Path)); err != nil {
		return q, err
	}
	if err := d.Sync(); err != nil {
		return q, err
	}
	e.step("renamed", t.Path)
	if err := e.Journal.End(entry); err != nil {
		return q, nil // resolved at the next start: the store holds the new bytes
	}
	return q, nil
}

// storeEntry is the quarantine entry quarantineFamily makes of the store itself: its
// manifest (named in a journal entry already), its sum, and where its directory is said.
type storeEntry struct {
	m   *Manifest
	sum string
	dir *string
}

// quarantineFamily keeps, byte for byte, the files ids names (the store and its sidecars,
// sidecars first), read by plain I/O: only while no process holds them (storeFamily said so)
// and this process holds no SQLite connection to them. The store's own entry is store's
// when given (a replace's, journaled), else a new one; it returns the bytes kept.
func (e *Engine) quarantineFamily(t Target, s *sqliteJudged, strategy policy.Strategy, ids map[string]Identity, store *storeEntry, now time.Time) (int64, error) {
	var n int64
	for _, p := range storeFiles(t.Path) {
		id, ok := ids[p]
		if !ok {
			continue
		}
		f, err := fsio.OpenStable(p, id)
		if err != nil {
			return n, fmt.Errorf("%s could not be read for its quarantine: %w", p, err)
		}
		m, known := &Manifest{ID: state.NewID(now), Path: p, Rule: t.Rule.Name, Identity: id, Kind: s.verdict.Kind,
			Offset: -1, Detail: "the file as it was beside " + t.Path + ": " + s.verdict.Detail, Strategy: string(strategy)}, ""
		if p == t.Path {
			m.Detail = "the store's file as it was: " + s.verdict.Detail
			if store != nil {
				m, known = store.m, store.sum
			}
		}
		dir, err := e.Quarantine.PutFrom(m, id.Size, fsio.Range{Off: 0, N: id.Size}, f, known, nil, now)
		f.Close()
		if err != nil {
			return n, fmt.Errorf("%s could not be quarantined: %w", p, err)
		}
		n += id.Size
		if p == t.Path && store != nil {
			*store.dir = dir
		}
	}
	return n, nil
}

// pruneSnapshots bounds the snapshots of every store together by max bytes (what the
// last-good copies leave of last_good.max_total_bytes), the oldest removed first; it returns
// how many it removed and the bytes freed.
func (e *Engine) pruneSnapshots(max int64) (n int, freed int64) {
	root := filepath.Join(e.StateDir, "sqlite", "snapshots")
	dirs, err := os.ReadDir(root)
	if err != nil {
		return 0, 0
	}
	type snap struct {
		path, name string
		size       int64
	}
	var all []snap
	var total int64
	for _, d := range dirs {
		ents, err := os.ReadDir(filepath.Join(root, d.Name()))
		if err != nil {
			continue
		}
		for _, f := range ents {
			fi, err := f.Info()
			if err != nil || !strings.HasSuffix(f.Name(), ".sqlite") {
				continue
			}
			all = append(all, snap{filepath.Join(root, d.Name(), f.Name()), f.Name(), fi.Size()})
			total += fi.Size()
		}
	}
	sort.Slice(all, func(i, j int) bool { return all[i].name < all[j].name }) // by time taken
	for _, s := range all {
		if total <= max {
			break
		}
		if os.Remove(s.path) == nil {
			n++
			freed += s.size
			total -= s.size
		}
	}
	return n, freed
}

// StoreOfWAL is the SQLite store whose -wal p is, where a rule covers that store: a commit
// writes the -wal alone (the store itself changes at checkpoints), so its events are the
// store's.
func (e *Engine) StoreOfWAL(p string) (string, bool) {
	store, ok := strings.CutSuffix(p, "-wal")
	if !ok {
		return "", false
	}
	r, _, ok := e.Policy.RuleFor(store)
	if !ok {
		return "", false
	}
	if _, ok := e.profile(r.Format, store).(format.SQLiteStore); !ok {
		return "", false
	}
	return store, true
}

func fsyncFile(p string) error {
	f, err := os.OpenFile(p, os.O_RDWR, 0)
	if err != nil {
		return err
	}
	defer f.Close()
	return f.Sync()
}

// sqliteHeader reports whether the file at path (of identity id) starts with SQLite's header
// string, read by plain I/O: only ever where this process holds no SQLite connection to it
// (its close would drop that connection's locks), before the store is opened. A file that
// cannot be read says yes: SQLite's open then says what it is.
func sqliteHeader(path string, id Identity) bool {
	f, err := fsio.OpenStable(path, id)
	if err != nil {
		return true
	}
	defer f.Close()
	var b [16]byte
	if _, err := f.ReadAt(b[:], 0); err != nil {
		return !errors.Is(err, io.EOF) // shorter than the header: not a database
	}
	return string(b[:]) == "SQLite format 3\x00"
}
