// Package events is the log event catalog (DESIGN §9), a contract operators alert on:
// every event name sessionmedic logs is a constant here, and README.md's "Logs as an alert
// source" table lists exactly these (a test ties the two). It also writes the lines that
// more than one caller logs — one file's report, and the rule paths that guard nothing —
// so that the daemon and the one-shot commands say them alike.
//
// A message is an event name; keys are constant and the error key is "err". Levels and
// keys are part of the contract as much as the names are.
package events

// The events, by what they are about.
const (
	Started         = "sessionmedic.started"          // INFO: version, policy, rules, paths, state_dir
	SkippedDefaults = "sessionmedic.skipped_defaults" // INFO: paths
	NothingWatched  = "sessionmedic.nothing_watched"  // WARN: reason, paths
	Stopping        = "sessionmedic.stopping"         // INFO: reason
	Fatal           = "sessionmedic.fatal"            // ERROR: err (after a policy.invalid line per error of a policy that did not load)

	ScanFinished = "scan.finished" // INFO: rule, files, damaged, not_judged, duration

	FileDamaged     = "file.damaged"      // WARN: rule, path, kind, offset, detail [, hands_off, quarantine]
	FileHealed      = "file.healed"       // WARN: rule, path, kind, strategy, quarantine, lost_bytes, lost_records (and discarded: a SQLite store's restored snapshot)
	FileHealRefused = "file.heal_refused" // ERROR: rule, path, kind, offset, detail, reason, tried
	FileFlapping    = "file.flapping"     // ERROR: rule, path, heals, window
	FileBusy        = "file.busy"         // DEBUG (INFO after 3 retries, WARN past max_wait and hourly): rule, path [, kind, offset], detail, reason [, retries] [, busy_for, advice]
	FileRestored    = "file.restored"     // WARN: rule, path, quarantine
	// FileNotJudged: a session file a rule guards is not judged (larger than max_file_size,
	// not readable, not to be judged within the memory bounds): not guarded. Said once for
	// each file and reason.
	FileNotJudged = "file.not_judged" // WARN: rule, path, reason, advice
	// FileInternalError: judging or planning the file raised a panic, contained there.
	FileInternalError = "file.internal_error" // ERROR: rule, path, err, at, advice

	WatchOverflow = "watch.overflow" // WARN: rule
	WatchError    = "watch.error"    // ERROR: err

	WatchBudgetExhausted = "watch.budget_exhausted" // WARN: rule, dir, budget, watched, err

	PolicyReloaded = "policy.reloaded" // INFO: path, rules
	PolicyInvalid  = "policy.invalid"  // ERROR: path [, line, field], err

	JournalRecovered = "journal.recovered" // WARN: path, id, outcome

	StatePruned     = "state.pruned"      // INFO: quarantine_entries, last_good_copies, deleted_files_copies, freed_bytes, quarantine_bytes
	StatePruneError = "state.prune_error" // ERROR: err, state_dir

	RulePathMissing = "rule.path_missing" // WARN: rule, path, patterns [, err]
	RuleNoFiles     = "rule.no_files"     // WARN: rule, path, patterns [, shadowed_by]
	RuleCannotHeal  = "rule.cannot_heal"  // ERROR: rule, dir, files, reason (at a full scan; hourly while it stands)

	StateCopyFailed = "state.copy_failed" // ERROR: rule, path, err, state_dir, not_said, reason (at most hourly)
	StateSpaceLow   = "state.space_low"   // ERROR: state_dir, free_bytes, needed_bytes, largest, largest_bytes, reason (hourly while it stands)

	HTTPListening = "http.listening" // INFO: addr
	HTTPError     = "http.error"     // ERROR: err; WARN: key, addr, err (a reload cannot bind http.listen)
)
