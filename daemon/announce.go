package daemon

import (
	"log/slog"

	"github.com/sessionmedic/sessionmedic/heal"
)

// Announce says, for every rule path that guards nothing, why: rule.path_missing for a path
// that does not exist (the daemon waits for it to appear), rule.no_files for one that holds
// no file the rule's patterns match. It returns how many paths it announced. The daemon
// calls it once per full scan; check, heal and policy once per run.
func Announce(log *slog.Logger, cov []heal.RootCoverage) int {
	n := 0
	for _, c := range cov {
		patterns := c.Patterns
		switch {
		case c.Missing && c.Err != "":
			log.Warn("rule.path_missing", "rule", c.Rule, "path", c.Path, "patterns", patterns, "err", c.Err)
		case c.Missing:
			log.Warn("rule.path_missing", "rule", c.Rule, "path", c.Path, "patterns", patterns)
		case c.Files == 0:
			log.Warn("rule.no_files", "rule", c.Rule, "path", c.Path, "patterns", patterns)
		default:
			continue
		}
		n++
	}
	return n
}

// AnnounceNothing says that the embedded default found no app: nothing is guarded.
func AnnounceNothing(log *slog.Logger, lookedAt []string) {
	log.Warn("sessionmedic.nothing_watched", "reason", "no app found at its default locations; nothing is guarded until one is installed and sessionmedic is reloaded", "paths", lookedAt)
}
