package events

import (
	"log/slog"

	"github.com/sessionmedic/sessionmedic/heal"
)

// Report logs what one file's report says, if it is damage: file.healed,
// file.heal_refused, or file.damaged (with hands_off and the quarantine entry for bytes an
// operator restored). A healthy, busy or skipped file logs nothing here. The rule and the
// path come from the report, first, so log must not carry them already.
func Report(log *slog.Logger, r heal.Report) {
	if r.Verdict != heal.Damaged {
		return
	}
	switch {
	case r.Action == heal.ActionHealed:
		log.Warn(FileHealed, "rule", r.Rule, "path", r.Path, "kind", r.Kind, "strategy", r.Strategy,
			"quarantine", r.Quarantine, "lost_bytes", r.LostBytes, "lost_records", r.LostRecords)
	case r.Action == heal.ActionRefused:
		log.Error(FileHealRefused, "rule", r.Rule, "path", r.Path, "kind", r.Kind, "reason", r.Reason)
	case r.HandsOff:
		log.Warn(FileDamaged, "rule", r.Rule, "path", r.Path, "kind", r.Kind, "offset", r.Offset, "detail", r.Detail,
			"hands_off", true, "quarantine", r.Quarantine)
	default:
		log.Warn(FileDamaged, "rule", r.Rule, "path", r.Path, "kind", r.Kind, "offset", r.Offset, "detail", r.Detail)
	}
}
