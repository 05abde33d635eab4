// Package heal inspects session files and repairs damaged ones: the Engine (one constructor,
// every default in [New]), Check and Heal, the walk, the choice among repair plans (salvage,
// backup, last-good, reconcile, ...) and the durable, lock-holding apply of DESIGN §7. It
// returns results and never logs.
//
// Its rooms, each a package of one idea:
//   - heal/format: verdicts and damage kinds, generic JSON/JSONL validation (whole, streaming,
//     incremental) and the Profile interface each app's file type implements;
//   - heal/fsio: stable reads, durable writes through directory descriptors, the open-writer
//     check, and the fault seam, which the caller hands in as [Options.Faults];
//   - heal/state: the state directory (quarantine, the journal of heals in flight, last-good
//     copies, hands-off marks, the per-path lock shared by every process healing there);
//   - heal/jsonv, heal/lock: the strict scanner; the apps' lock protocols.
package heal

import (
	"github.com/sessionmedic/sessionmedic/heal/format"
	"github.com/sessionmedic/sessionmedic/heal/fsio"
)

// Identity pins the exact version of a file that was read (see [fsio.Identity]).
type Identity = fsio.Identity

// Status is the outcome of inspecting one file (see [format.Status]).
type Status = format.Status

// The four verdicts of DESIGN §5.
const (
	Healthy = format.Healthy
	Damaged = format.Damaged
	Busy    = format.Busy
	Skipped = format.Skipped
)

// Verdict says whether a file is healthy and, if not, where it breaks (see [format.Verdict]).
type Verdict = format.Verdict

// Actions of a heal.
const (
	ActionNone      = "none"
	ActionHealed    = "healed"
	ActionWouldHeal = "would-heal"
	ActionRefused   = "refused"
)

// Report is what check and heal say about one file (the CLI's -json object).
type Report struct {
	Path        string   `json:"path"`
	PathB64     string   `json:"path_b64,omitempty"` // the exact bytes of a path that is not UTF-8 (JSON cannot carry them)
	Rule        string   `json:"rule"`
	Format      string   `json:"format,omitempty"` // "" where none was determined: a target skipped unread ([Target].Skip)
	Verdict     Status   `json:"verdict"`
	Kind        string   `json:"kind,omitempty"`
	Offset      int64    `json:"offset"`
	Detail      string   `json:"detail,omitempty"`
	Warnings    []string `json:"warnings,omitempty"`
	Action      string   `json:"action,omitempty"`
	Strategy    string   `json:"strategy,omitempty"`
	Quarantine  string   `json:"quarantine,omitempty"`
	LostBytes   int64    `json:"lost_bytes"`
	LostRecords int      `json:"lost_records"`
	Reason      string   `json:"reason,omitempty"` // why a heal was refused; for a busy file, who keeps it busy (the protocol and the holder)
	// Discarded: what a heal that restored a SQLite store's snapshot (restore-snapshot)
	// discarded: every transaction the store committed after the snapshot was taken.
	Discarded string   `json:"discarded,omitempty"`
	Also      []string `json:"also,omitempty"` // other files a plan changed
	// Tried is, for a heal refused because no strategy made a repair it may apply, what each
	// strategy of the rule came to, in policy order: "salvage: the result fails the
	// checklist: schema at 0: ...", "last-good: no copy kept", "salvage: over max_loss
	// (drops 5 of 6 records)".
	Tried []string `json:"tried,omitempty"`
	// HandsOff: the file holds bytes an operator restored from quarantine, and is left as
	// it is until the app writes it again or a heal names it.
	HandsOff bool `json:"hands_off,omitempty"`
	// InternalError: judging or planning this file raised a panic (a defect of
	// sessionmedic, met on this file), contained there: the file was left as it is and is
	// not known to be guarded. The report is then skipped, with the panic in Detail and
	// here, and its stack in Stack.
	InternalError string `json:"internal_error,omitempty"`
	Stack         []byte `json:"-"`
	// NotJudged: skipped, though it is a session file its rule guards (too large, not
	// readable, not to be judged within the memory bounds): not guarded, for Detail's reason.
	NotJudged bool `json:"not_judged,omitempty"`

	QuarantinedBytes int64 `json:"-"` // bytes this heal put into quarantine
	// CopyErr: the state dir refused the file's last-good copy (no space, a quota, a
	// read-only state dir): a later heal of it has no copy to fall back on.
	CopyErr string `json:"-"`
	// Wrote is, per file this heal replaced, the identity of the version it left there
	// (absent when an app wrote over it before the heal could look): the daemon ignores the
	// events of exactly that version, never of an app's write that followed.
	Wrote map[string]Identity `json:"-"`
}
