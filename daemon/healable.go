package daemon

import (
	"time"

	"github.com/sessionmedic/sessionmedic/daemon/events"
	"github.com/sessionmedic/sessionmedic/heal"
	"github.com/sessionmedic/sessionmedic/heal/fsio"
	"golang.org/x/sys/unix"
)

// What the daemon can say before any damage that a heal would be refused (issue: refusals
// said at start): directories of a rule that heals where nothing can be written, a state dir
// too small for the largest file's quarantine entry and last-good copy, last-good copies the
// state dir refused. Each is said at ERROR when first found, and again hourly while it
// stands (a full scan finds it again), with the reason and what to do; gauges hold it.

// sayAgain is how often a standing refusal is said again.
const sayAgain = time.Hour

// refusals is the loop's record of what it said (the loop goroutine owns it).
type refusals struct {
	dirs       map[string]time.Time // rule + "\x00" + dir → when rule.cannot_heal last said it
	space      time.Time            // when state.space_low was last said; zero: not short
	copies     time.Time            // when state.copy_failed was last said
	copiesHeld int                  // copy failures not said since
	largest    int64                // the largest file a full scan found
	largestAt  string
}

// unhealable probes the directories of a full scan's targets and says each where no heal
// could be written; files_unhealable holds how many files each rule has there.
func (d *loop) unhealable(targets []heal.Target, now time.Time) int {
	found := d.eng.Unhealable(targets)
	if d.refused.dirs == nil {
		d.refused.dirs = map[string]time.Time{}
	}
	seen := map[string]bool{}
	files := map[string]int{}
	for _, u := range found {
		k := u.Rule + "\x00" + u.Dir
		seen[k] = true
		files[u.Rule] += u.Files
		if last, ok := d.refused.dirs[k]; ok && now.Sub(last) < sayAgain {
			continue
		}
		d.refused.dirs[k] = now
		d.log.Error(events.RuleCannotHeal, "rule", u.Rule, "dir", u.Dir, "files", u.Files, "reason", u.Reason)
	}
	for k := range d.refused.dirs {
		if !seen[k] {
			delete(d.refused.dirs, k) // writable again: said again if it is lost again
		}
	}
	d.m.unhealable.Reset()
	for _, r := range d.cfg.Rules {
		d.m.unhealable.WithLabelValues(r.Name).Set(float64(files[r.Name]))
	}
	return len(found)
}

// copyFailed says a last-good copy the state dir refused: the first at once, then at most
// one line per sayAgain with how many were not said.
func (d *loop) copyFailed(rule, path, err string, now time.Time) {
	d.m.copyFailures.WithLabelValues(rule).Inc()
	if !d.refused.copies.IsZero() && now.Sub(d.refused.copies) < sayAgain {
		d.refused.copiesHeld++
		return
	}
	d.log.Error(events.StateCopyFailed, "rule", rule, "path", path, "err", err, "state_dir", d.cfg.StateDir,
		"not_said", d.refused.copiesHeld,
		"reason", "the state dir refused a last-good copy: a later heal of this file has no copy to fall back on; give the state dir room (or lower last_good.max_total_bytes) and check that sessionmedic may write it")
	d.refused.copies, d.refused.copiesHeld = now, 0
}

// largestOf is the largest regular file among the targets' paths, and its size (0 with
// none): a full scan's worth of stats, run beside the prune, off the loop, as every read is
// (below a confined root, no symlink on the way is followed).
func largestOf(paths []string) (string, int64) {
	var at string
	var n int64
	for _, p := range paths {
		if id, err := fsio.StatIdentity(p); err == nil && id.Size > n {
			at, n = p, id.Size
		}
	}
	return at, n
}

// freeBytes is what the file system of the state dir (which the daemon made at start) has
// free for an unprivileged user, or -1.
func freeBytes(dir string) int64 {
	var st unix.Statfs_t
	if err := unix.Statfs(dir, &st); err != nil {
		return -1
	}
	return int64(st.Bavail) * int64(st.Bsize)
}

// spaceNeeded is what the state dir must have free to heal the largest file: its quarantine
// entry and its last-good copy, with a MiB for the journal and manifests.
func spaceNeeded(largest int64) int64 { return 2*max(largest, 0) + 1<<20 }

// space says, after a prune, whether the state dir has room to heal the largest file.
func (d *loop) space(free int64, now time.Time) {
	if free < 0 {
		return
	}
	need := spaceNeeded(d.refused.largest)
	d.m.stateFree.Set(float64(free))
	d.m.stateNeeded.Set(float64(need))
	if free >= need {
		d.refused.space = time.Time{}
		return
	}
	if !d.refused.space.IsZero() && now.Sub(d.refused.space) < sayAgain {
		return
	}
	d.refused.space = now
	d.log.Error(events.StateSpaceLow, "state_dir", d.cfg.StateDir, "free_bytes", free, "needed_bytes", need,
		"largest", d.refused.largestAt, "largest_bytes", d.refused.largest,
		"reason", "the state dir has less room than a heal of the largest guarded file needs (its quarantine entry and its last-good copy): heals and copies will fail; give the state dir more room, or lower quarantine.max_bytes / last_good.max_total_bytes")
}
