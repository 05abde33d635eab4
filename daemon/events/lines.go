package events

import (
	"log/slog"

	"github.com/sessionmedic/sessionmedic/heal"
)

// Report logs what one file's report says, if it is damage: file.healed,
// file.heal_refused (where the damage is, why no heal, and what each strategy of the rule
// came to), or file.damaged (with hands_off and the quarantine entry for bytes an
// operator restored). A healthy, busy or skipped file logs nothing here. The rule and the
// path come from the report, first, so log must not carry them already.
func Report(log *slog.Logger, r heal.Report) {
	if r.Verdict != heal.Damaged {
		return
	}
	switch {
	case r.Action == heal.ActionHealed:
		args := []any{"rule", r.Rule, "path", r.Path, "kind", r.Kind, "strategy", r.Strategy,
			"quarantine", r.Quarantine, "lost_bytes", r.LostBytes, "lost_records", r.LostRecords}
		if r.Discarded != "" {
			args = append(args, "discarded", r.Discarded) // a SQLite store's restored snapshot
		}
		log.Warn(FileHealed, args...)
	case r.Action == heal.ActionRefused:
		tried := r.Tried
		if tried == nil {
			tried = []string{} // the key is always there, an array
		}
		log.Error(FileHealRefused, "rule", r.Rule, "path", r.Path, "kind", r.Kind, "offset", r.Offset, "detail", r.Detail,
			"reason", r.Reason, "tried", tried)
	case r.HandsOff:
		log.Warn(FileDamaged, "rule", r.Rule, "path", r.Path, "kind", r.Kind, "offset", r.Offset, "detail", r.Detail,
			"hands_off", true, "quarantine", r.Quarantine)
	default:
		log.Warn(FileDamaged, "rule", r.Rule, "path", r.Path, "kind", r.Kind, "offset", r.Offset, "detail", r.Detail)
	}
}

// Announce says, for every rule path that guards nothing, why: rule.path_missing for a path
// that does not exist (the daemon waits for it to appear), rule.no_files for one that holds
// no file the rule's patterns match (with shadowed_by, the earlier rule that takes every file
// it would match there, when that is certain). It returns how many paths it announced. The
// daemon calls it once per full scan; check, heal and policy once per run.
func Announce(log *slog.Logger, cov []RootCoverage) int {
	n := 0
	for _, c := range cov {
		patterns := c.Patterns
		switch {
		case c.Missing && c.Err != "":
			log.Warn(RulePathMissing, "rule", c.Rule, "path", c.Path, "patterns", patterns, "err", c.Err)
		case c.Missing:
			log.Warn(RulePathMissing, "rule", c.Rule, "path", c.Path, "patterns", patterns)
		case c.Files == 0 && c.ShadowedBy != "":
			log.Warn(RuleNoFiles, "rule", c.Rule, "path", c.Path, "patterns", patterns, "shadowed_by", c.ShadowedBy)
		case c.Files == 0:
			log.Warn(RuleNoFiles, "rule", c.Rule, "path", c.Path, "patterns", patterns)
		default:
			continue
		}
		n++
	}
	return n
}

// AnnounceNothing says that the embedded default found no app: nothing is guarded.
func AnnounceNothing(log *slog.Logger, lookedAt []string) {
	log.Warn(NothingWatched, "reason", "no app found at its default locations; nothing is guarded until one is installed and sessionmedic is reloaded", "paths", lookedAt)
}
