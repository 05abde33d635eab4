package daemon

import (
	"os"
	"strconv"
	"strings"

	"github.com/sessionmedic/sessionmedic/internal/pathx"
)

// watchBudget is the watch budget in force: the policy's, else a quarter of the system's
// fs.inotify.max_user_watches (a limit per user, shared with every other process of that
// user: root's, for a root daemon), else 8192.
func watchBudget(policy int) int {
	if policy > 0 {
		return policy
	}
	if b, err := os.ReadFile("/proc/sys/fs/inotify/max_user_watches"); err == nil {
		if n, err := strconv.Atoi(strings.TrimSpace(string(b))); err == nil && n > 0 {
			return max(n/4, 1)
		}
	}
	return 8192
}

// ruleOfDir names the rule whose paths hold dir (the deepest), or "".
func (d *loop) ruleOfDir(dir string) string {
	best, name := -1, ""
	for _, r := range d.cfg.Rules {
		for _, p := range r.Paths {
			if pathx.Within(p, dir) && len(p) > best {
				best, name = len(p), r.Name
			}
		}
	}
	return name
}
