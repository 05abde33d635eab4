package heal

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"syscall"

	"github.com/sessionmedic/sessionmedic/heal/fsio"
	"github.com/sessionmedic/sessionmedic/policy"
)

// Unhealable is a directory holding files of a rule that heals where no heal could be
// written, found before any damage: a read-only mount, a directory the identity heals take
// may not write, one someone else may write (run as root), or files whose owner a heal could
// not keep (run as another user). Damage there is found and reported, never healed.
type Unhealable struct {
	Rule   string
	Dir    string
	Files  int    // the rule's files in it
	Reason string // why, and what to do
}

// unhealableProbes bounds the directories one call probes (a tree of a million directories
// is probed a bounded part at a time: the rest at the next full scan).
const unhealableProbes = 4096

// Unhealable probes every directory that holds targets of a rule in heal mode, as a heal
// would write there (opened from the rule's root, as the tree's owner when run as root), and
// returns those where a heal would be refused whatever the damage, sorted by rule and
// directory. It writes nothing. A directory that cannot be opened (gone, swapped) is left to
// the scan, which says so.
func (e *Engine) Unhealable(targets []Target) []Unhealable {
	type key struct{ rule, dir string }
	type group struct {
		t     Target // the first file there
		files []string
	}
	groups := map[key]*group{}
	var order []key
	for _, t := range targets {
		if t.Skip != "" || t.Temp || t.Rule == nil || t.Rule.Mode == policy.ModeObserve {
			continue
		}
		k := key{t.Rule.Name, filepath.Dir(t.Path)}
		g := groups[k]
		if g == nil {
			if len(order) >= unhealableProbes {
				continue
			}
			g = &group{t: t}
			groups[k] = g
			order = append(order, k)
		}
		if !t.Missing {
			g.files = append(g.files, t.Path)
		}
	}
	var out []Unhealable
	euid := os.Geteuid()
	for _, k := range order {
		g := groups[k]
		why := e.unhealableDir(g.t, g.files, euid)
		if why != "" {
			out = append(out, Unhealable{Rule: k.rule, Dir: k.dir, Files: max(len(g.files), 1), Reason: why})
		}
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].Rule != out[j].Rule {
			return out[i].Rule < out[j].Rule
		}
		return out[i].Dir < out[j].Dir
	})
	return out
}

// unhealableDir is why no heal of t (and the other files of its directory) could be
// written, or "".
func (e *Engine) unhealableDir(t Target, files []string, euid int) string {
	d, err := e.fs.OpenParent(ruleRoot(t.Rule, t.Path), t.Path)
	if err != nil {
		return ""
	}
	defer d.Close()
	if why := d.Insecure(); why != "" {
		return insecureErr(why).Error()
	}
	if err := d.Writable(); err != nil {
		if uid := d.ActsAs(); uid >= 0 && (errors.Is(err, syscall.EACCES) || errors.Is(err, syscall.EPERM)) {
			return err.Error() + fmt.Sprintf(": the tree's owner (uid %d), as whom sessionmedic run as root writes there, may not write this directory: give its owner write permission, or set the rule's mode to observe", uid)
		}
		return writeAdvice(err)
	}
	if euid == 0 {
		return ""
	}
	// Run as another user, a heal cannot give the new file the owner the old one had.
	for _, f := range files {
		// Stat as every read is: below a confined root, no symlink on the way is followed.
		if id, err := fsio.StatIdentity(f); err == nil && int(id.UID) != euid {
			return fmt.Sprintf("%s is owned by uid %d: sessionmedic runs as uid %d, which can write this directory but cannot give a healed file its owner back (run sessionmedic as the files' owner or as root, or set the rule's mode to observe)", f, id.UID, euid)
		}
	}
	return ""
}

// writeAdvice is err (a write refused by the file system) with what an operator can do
// about it.
func writeAdvice(err error) string {
	switch {
	case errors.Is(err, syscall.EROFS):
		return err.Error() + ": the directory is on a read-only mount for sessionmedic (a read-only file system, or systemd's ProtectHome=/ProtectSystem= without it in ReadWritePaths=): add it to ReadWritePaths= or mount it read-write, or set the rule's mode to observe"
	case (errors.Is(err, syscall.EACCES) || errors.Is(err, syscall.EPERM)) && os.Geteuid() == 0:
		return err.Error() + ": sessionmedic run as root writes as the tree's owner, who may not write this directory: give its owner write permission, or set the rule's mode to observe"
	case errors.Is(err, syscall.EACCES), errors.Is(err, syscall.EPERM):
		return err.Error() + fmt.Sprintf(": sessionmedic (uid %d) may not write this directory: run it as the tree's owner or as root, or set the rule's mode to observe", os.Geteuid())
	case errors.Is(err, syscall.ENOSPC), errors.Is(err, syscall.EDQUOT):
		return err.Error() + ": the file system (or its owner's quota) is full: free space there"
	}
	return err.Error()
}
