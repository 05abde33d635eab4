package race

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
)

// figure counts one run.
type figure struct {
	writes       atomic.Int64 // app writes committed
	damages      atomic.Int64 // damages injected
	healed       atomic.Int64 // injected damages the daemon healed
	refused      atomic.Int64 // injected damages reported with file.heal_refused and left
	reportedOnly atomic.Int64 // injected damages only reported with file.damaged (e.g. breaker open)
	unreported   atomic.Int64 // injected damages with no event at all in time
	lost         atomic.Int64 // app records missing from disk (must be 0)
	unexpected   atomic.Int64 // times a file was not what the app last left there
	healInLock   atomic.Int64 // heals that landed while the app held its lock
	badResult    atomic.Int64 // heals whose result is not the bytes before the damage
	lockWaitMax  atomic.Int64 // longest an app waited for its lock (ns)
	lockTimeouts atomic.Int64 // app writes abandoned because the lock stayed busy
	sessions     atomic.Int64 // session files written

	racing           atomic.Int64  // damages the app wrote on past at once
	racingHealed     atomic.Int64  // … the daemon healed before the app's next write
	racingSuperseded atomic.Int64  // … the app's own rewrite replaced first
	racingDeferred   atomic.Int64  // … still there when the run ended (a bad line under an open descriptor)
	putBacks         atomic.Int64  // the app's bytes put back by the daemon under a new inode
	rolledBack       atomic.Int64  // the file held older content for a while, then the app's bytes came back
	rollbackMax      time.Duration // the longest such while (under env.mu)
}

func (f *figure) noteLockWait(d time.Duration) {
	for {
		cur := f.lockWaitMax.Load()
		if int64(d) <= cur || f.lockWaitMax.CompareAndSwap(cur, int64(d)) {
			return
		}
	}
}

// interval is a span during which an app held a lock (wall clock, ns).
type interval struct{ acq, rel int64 }

// injection is one damage put into a file between app writes.
type injection struct {
	style, path, kind string
	racing            bool   // the app wrote on at once instead of waiting for the daemon
	badSHA            string // sha256 of the damaged bytes, as a heal quarantines them
	at, resolved      time.Time
	outcome           string // healed | refused | damaged | none; racing: healed | superseded | deferred
	reason            string // of a refusal
}

// env is what every writer shares.
type env struct {
	root, state string
	log         *sink
	fig         *figure
	healWait    time.Duration
	// unlocked: styles that rewrite their file in place with no lock at all (CoPaw). Nothing
	// can keep such an app from writing into the old inode between the daemon's last check and
	// its rename; the daemon puts those bytes back, and the file holds the healed version
	// meanwhile. For these styles that window is a published figure (transient rollbacks);
	// for every other style it is a failure.
	unlocked map[string]bool

	mu         sync.Mutex
	problems   []string
	locks      map[string][]interval // lock file → spans it was held by an app
	injections []*injection
	ids        atomic.Int64
}

func (e *env) problem(format string, args ...any) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.problems = append(e.problems, fmt.Sprintf("%s: ", time.Now().Format("15:04:05.000000"))+fmt.Sprintf(format, args...))
}

func (e *env) held(lock string, acq, rel time.Time) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.locks[lock] = append(e.locks[lock], interval{acq.UnixNano(), rel.UnixNano()})
}

func (e *env) newID(prefix string) string {
	return fmt.Sprintf("%s-%06d", prefix, e.ids.Add(1))
}

// session is one file an app writes, and what the app knows about it.
type session struct {
	path    string
	ids     []string // every record the app committed, in order
	last    []byte   // what the app last left on disk (its write, or a heal it accepted)
	ino     uint64
	damages int

	// alt is the file as a heal of a racing damage leaves it (nil: none pending); the daemon
	// may land it any time until the app writes over the damage.
	alt    []byte
	altInj *injection

	// pair, when set, is the last write's two batches, in flight at once from two threads
	// (Claude Code's), in the order last and alt end with them: the kernel lands them either
	// way round, and nothing on disk tells the app which until the file is seen settled (a
	// heal may have changed the bytes before them meanwhile, or hold one of them in the
	// replaced inode until it puts it back). Cleared once a check found the file settled.
	pair [2][]byte
}

// swapPair is b with its last two batches (s.pair) the other way round, or nil when b does
// not end with them.
func (s *session) swapPair(b []byte) []byte {
	x, y := s.pair[0], s.pair[1]
	n := len(b) - len(x) - len(y)
	if x == nil || n < 0 || !bytes.Equal(b[n:n+len(x)], x) || !bytes.Equal(b[n+len(x):], y) {
		return nil
	}
	return append(append(append([]byte(nil), b[:n]...), y...), x...)
}

// orderAs takes, for the last write's pair, the order the file b shows: when b is what the
// app left there (or, a racing damage pending, what a heal of it leaves) with the two
// batches the other way round, the app's record of it is swapped to match.
func (s *session) orderAs(b []byte) {
	if s.pair[0] == nil {
		return
	}
	last := s.swapPair(s.last)
	var alt []byte
	if s.alt != nil {
		alt = s.swapPair(s.alt)
	}
	if (last != nil && bytes.Equal(b, last)) || (alt != nil && bytes.Equal(b, alt)) {
		if last != nil {
			s.last = last
		}
		if alt != nil {
			s.alt = alt
		}
		s.pair = [2][]byte{s.pair[1], s.pair[0]}
	}
}

var idRe = regexp.MustCompile(`"id": ?"([a-z]+[0-9]*-[0-9]{6})"`)

// idsIn finds the record ids in a file's bytes.
func idsIn(b []byte) map[string]bool {
	out := map[string]bool{}
	for _, m := range idRe.FindAllSubmatch(b, -1) {
		out[string(m[1])] = true
	}
	return out
}

func inode(path string) uint64 {
	var st syscall.Stat_t
	if syscall.Lstat(path, &st) != nil {
		return 0
	}
	return st.Ino
}

// check compares the file with what the app last left there (or, with a racing damage
// pending, with what a heal of it leaves). Anything else means someone wrote a file the app
// had left healthy: counted, and every committed record missing from it is a lost write.
// Apps that write in place keep their inode between their own writes; an open descriptor
// keeps it through heals too.
func (e *env) check(style string, s *session, where string, keepsInode, heldOpen bool) {
	b, err := os.ReadFile(s.path)
	ino := inode(s.path)
	if err == nil {
		s.orderAs(b)
	}
	if err == nil && bytes.Equal(b, s.last) && (!keepsInode || ino == s.ino) {
		s.pair = [2][]byte{}
		return
	}
	if err == nil && s.alt != nil && bytes.Equal(b, s.alt) && (!heldOpen || ino == s.ino) {
		s.last, s.ino, s.pair = s.alt, ino, [2][]byte{}
		e.resolveRacing(s, "healed")
		return
	}
	if err == nil && s.alt != nil && !heldOpen && bytes.Equal(b, s.last) {
		// The app's own last write (the damage) came while the daemon was replacing the file:
		// the daemon put the app's bytes back under a new inode, as it must.
		e.fig.putBacks.Add(1)
		s.ino, s.pair = ino, [2][]byte{}
		return
	}
	// The daemon may be in the middle of putting the app's bytes back: a file that returns to
	// what the app left there within a second was rolled back for a while, not lost.
	for start := time.Now(); time.Since(start) < time.Second; time.Sleep(2 * time.Millisecond) {
		b2, err2 := os.ReadFile(s.path)
		if err2 == nil {
			s.orderAs(b2)
		}
		if err2 == nil && (bytes.Equal(b2, s.last) || (s.alt != nil && bytes.Equal(b2, s.alt))) {
			s.pair = [2][]byte{}
			e.fig.rolledBack.Add(1)
			d := time.Since(start)
			e.mu.Lock()
			if d > e.fig.rollbackMax {
				e.fig.rollbackMax = d
			}
			e.mu.Unlock()
			if !e.unlocked[style] {
				e.problem("%s %s (%s): for %v the file held something else than what the app left there (%d bytes, inode %d→%d; %d committed records missing), then the app's bytes came back\n  app  %q\n  seen %q\n%s",
					style, s.path, where, d.Round(time.Millisecond), len(b), s.ino, ino, len(missingIn(s, b)), clip(s.last), clip(b), e.history(s.path, 3*time.Second))
			}
			if bytes.Equal(b2, s.last) {
				s.ino = inode(s.path)
			} else {
				s.last, s.ino = s.alt, inode(s.path)
				e.resolveRacing(s, "healed")
			}
			return
		}
	}
	e.fig.unexpected.Add(1)
	// Lost: records that were in what the app left there and are not in the file now. (A
	// damage the app wrote itself may have destroyed some of its records: those it overwrote.)
	have, had := idsIn(b), idsIn(s.last)
	if s.alt != nil {
		for id := range idsIn(s.alt) {
			had[id] = true
		}
	}
	var missing []string
	for _, id := range s.ids {
		if had[id] && !have[id] {
			missing = append(missing, id)
		}
	}
	e.fig.lost.Add(int64(len(missing)))
	e.problem("%s %s (%s): the file is not what the app left there (err %v, %d bytes, inode %d→%d); %d committed records missing %v\n  want %q\n  got  %q\n%s",
		style, s.path, where, err, len(b), s.ino, ino, len(missing), head(missing, 5), clip(s.last), clip(b), e.history(s.path, 3*time.Second))
	if err == nil {
		s.last, s.ino, s.pair = b, ino, [2][]byte{}
	}
}

// history describes what the daemon logged about path lately, with what each heal
// quarantined, for a failure report.
func (e *env) history(path string, d time.Duration) string {
	var b strings.Builder
	b.WriteString("  daemon, last " + d.String() + ":")
	for _, ev := range e.log.forPath(path, time.Now().Add(-d)) {
		fmt.Fprintf(&b, "\n    %s %s %s %s %s %s", ev.Time.Format("15:04:05.000000"), ev.Msg, ev.Kind, ev.Strategy, ev.Detail, ev.Reason)
		if ev.Quarantine != "" {
			if m, err := os.ReadFile(filepath.Join(ev.Quarantine, "manifest.json")); err == nil {
				var q struct {
					Created  time.Time `json:"created"`
					Size     int64     `json:"size"`
					Identity struct {
						Ino  uint64 `json:"ino"`
						Size int64  `json:"size"`
					} `json:"identity"`
				}
				json.Unmarshal(m, &q)
				fmt.Fprintf(&b, " [quarantined %d bytes of inode %d at %s]", q.Size, q.Identity.Ino, q.Created.Format("15:04:05.000000"))
			}
		}
	}
	return b.String()
}

// missingIn lists the records the app left in s that b lacks.
func missingIn(s *session, b []byte) []string {
	have, had := idsIn(b), idsIn(s.last)
	var out []string
	for _, id := range s.ids {
		if had[id] && !have[id] {
			out = append(out, id)
		}
	}
	return out
}

// resolveRacing closes the pending racing damage of s with outcome.
func (e *env) resolveRacing(s *session, outcome string) {
	inj := s.altInj
	s.alt, s.altInj = nil, nil
	if inj == nil {
		return
	}
	e.mu.Lock()
	inj.outcome, inj.resolved = outcome, time.Now()
	e.mu.Unlock()
	switch outcome {
	case "healed":
		e.fig.racingHealed.Add(1)
	case "superseded":
		e.fig.racingSuperseded.Add(1)
	default:
		e.fig.racingDeferred.Add(1)
	}
}

func head(s []string, n int) []string {
	if len(s) > n {
		return s[:n]
	}
	return s
}

func clip(b []byte) string {
	if len(b) > 300 {
		return string(b[:150]) + " … " + string(b[len(b)-150:])
	}
	return string(b)
}

// quarantined is the sha256 of the bytes a file.healed event put in quarantine, and when.
func quarantined(ev event) (sha string, created time.Time) {
	if ev.Quarantine == "" {
		return "", time.Time{}
	}
	b, err := os.ReadFile(filepath.Join(ev.Quarantine, "manifest.json"))
	if err != nil {
		return "", time.Time{}
	}
	var m struct {
		SHA256  string    `json:"sha256"`
		Created time.Time `json:"created"`
	}
	json.Unmarshal(b, &m)
	return m.SHA256, m.Created
}

// answers reports whether a file.healed event healed exactly the damage inj: it quarantined
// the damaged bytes after they were written. (A log line's time is when it was logged, which
// may be after the app saw that heal land and damaged the file the same way again.)
func answers(ev event, inj *injection) bool {
	sha, created := quarantined(ev)
	return sha != "" && sha == inj.badSHA && !created.Before(inj.at)
}

// emptySHA is the sha256 of no bytes.
var emptySHA = shaOf(nil)

func shaOf(b []byte) string {
	s := sha256.Sum256(b)
	return hex.EncodeToString(s[:])
}

// awaitVerdict waits for the daemon to heal or report damage injected at inj.at into inj.path.
// A heal counts when it answers the damage (see answers). A file.damaged report (a read-only
// inspection, or an open breaker) is waited past for a while: the heal usually follows once
// the file settles.
func (e *env) awaitVerdict(ctx context.Context, inj *injection) {
	deadline := time.Now().Add(e.healWait)
	var damagedAt time.Time
	for {
		outcome := ""
		for _, ev := range e.log.forPath(inj.path, inj.at) {
			switch ev.Msg {
			case "file.healed":
				if answers(ev, inj) {
					outcome = "healed"
				}
			case "file.heal_refused":
				if ev.Kind == "empty" && inj.badSHA != emptySHA {
					// The file as the injection's in-place write left it for a moment,
					// truncated and not written yet (a writer stalled there under load):
					// rightly refused with no copy, but no verdict on the bytes injected.
					continue
				}
				if outcome != "healed" {
					outcome = "refused"
					inj.reason = ev.Kind + ": " + ev.Reason
				}
			case "file.damaged", "file.flapping":
				if outcome == "" {
					outcome = "damaged"
				}
			case "file.busy":
				// A file its app holds open for writing is never changed beside it: the
				// damage is said (busy, the writer named), and healed once the app lets
				// the file go.
				if outcome == "" && strings.Contains(ev.Reason, "held open for writing") {
					outcome = "damaged"
				}
			}
		}
		switch {
		case outcome == "healed" || outcome == "refused":
			inj.outcome = outcome
		case outcome == "damaged" && damagedAt.IsZero():
			damagedAt = time.Now()
		case outcome == "damaged" && time.Since(damagedAt) > 2*time.Second:
			inj.outcome = outcome
		case time.Now().After(deadline):
			inj.outcome = outcome
			if outcome == "" {
				inj.outcome = "none"
			}
		}
		if inj.outcome != "" {
			e.mu.Lock()
			inj.resolved = time.Now()
			e.mu.Unlock()
			break
		}
		time.Sleep(5 * time.Millisecond)
	}
	switch inj.outcome {
	case "healed":
		e.fig.healed.Add(1)
	case "refused":
		e.fig.refused.Add(1)
		e.problem("%s %s: injected %s was refused (%s)", inj.style, inj.path, inj.kind, inj.reason)
	case "damaged":
		e.fig.reportedOnly.Add(1)
	default:
		e.fig.unreported.Add(1)
		e.problem("%s %s: injected %s at %s was neither healed nor reported within %v\n%s",
			inj.style, inj.path, inj.kind, inj.at.Format("15:04:05.000000"), e.healWait, e.history(inj.path, e.healWait+3*time.Second))
	}
}

// afterHeal checks a healed file against the bytes before the damage and makes it what the
// app knows; an unhealed one is put back by the app itself (as its own loader would have to).
func (e *env) afterHeal(inj *injection, s *session, before []byte, heldOpen bool, putBack func([]byte)) {
	b, err := os.ReadFile(s.path)
	if inj.outcome == "healed" {
		if err != nil || !bytes.Equal(b, before) || (heldOpen && inode(s.path) != s.ino) {
			e.fig.badResult.Add(1)
			have := idsIn(b)
			var missing []string
			for _, id := range s.ids {
				if !have[id] {
					missing = append(missing, id)
				}
			}
			e.fig.lost.Add(int64(len(missing)))
			e.problem("%s %s: healed %s, but the result is not the file before the damage (inode %d→%d); %d committed records missing\n  want %q\n  got  %q",
				inj.style, s.path, inj.kind, s.ino, inode(s.path), len(missing), clip(before), clip(b))
		}
		if err == nil {
			s.last, s.ino = b, inode(s.path)
		}
		return
	}
	putBack(before)
	s.last, s.ino = before, inode(s.path)
}

func (e *env) record(inj *injection) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.injections = append(e.injections, inj)
}

// lastGoodHolds reports whether the daemon keeps data as some file's last-good copy, waiting
// up to d: a damage that destroys records is only fair once the daemon has seen them.
func (e *env) lastGoodHolds(ctx context.Context, data []byte, d time.Duration) bool {
	dir := filepath.Join(e.state, "last-good")
	deadline := time.Now().Add(d)
	for ctx.Err() == nil && time.Now().Before(deadline) {
		ents, _ := os.ReadDir(dir)
		for _, en := range ents {
			if fi, err := en.Info(); err == nil && fi.Size() == int64(len(data)) {
				if b, err := os.ReadFile(filepath.Join(dir, en.Name())); err == nil && bytes.Equal(b, data) {
					return true
				}
			}
		}
		time.Sleep(20 * time.Millisecond)
	}
	return false
}

// pause sleeps like an app between turns: mostly short, sometimes long enough to settle.
func pause(ctx context.Context, rng *rand.Rand) {
	var d time.Duration
	switch x := rng.IntN(100); {
	case x < 55:
		d = time.Duration(rng.IntN(15)) * time.Millisecond
	case x < 90:
		d = time.Duration(40+rng.IntN(60)) * time.Millisecond
	default:
		d = time.Duration(150+rng.IntN(150)) * time.Millisecond
	}
	select {
	case <-ctx.Done():
	case <-time.After(d):
	}
}

// damageNow decides whether to inject damage before this write.
func damageNow(rng *rand.Rand) bool { return rng.IntN(100) < 7 }

// maxDamagesPerFile keeps under the daemon's circuit breaker (more than 3 heals of one file in
// 10 minutes stop its healing): after that many, the app moves on to a new session.
const maxDamagesPerFile = 3

// writeInPlace is open("w") + write: O_TRUNC in place, no temp, no fsync.
func writeInPlace(path string, b []byte) error {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o644)
	if err != nil {
		return err
	}
	_, err = f.Write(b)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return err
}

// writeReplace writes tmp in path's directory and renames it over path.
func writeReplace(path, tmp string, b []byte) error {
	f, err := os.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
	if err != nil {
		return err
	}
	_, err = f.Write(b)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp, path)
	}
	if err != nil {
		os.Remove(tmp)
	}
	return err
}
