package format

import (
	"fmt"

	"github.com/sessionmedic/sessionmedic/heal/jsonv"
)

// Status is the outcome of inspecting one file.
type Status string

// The four verdicts of DESIGN §5.
const (
	Healthy Status = "healthy"
	Damaged Status = "damaged"
	Busy    Status = "busy"
	Skipped Status = "skipped"
)

// Damage kinds.
const (
	KindTrailingGarbage   = "trailing-garbage"
	KindTruncated         = "truncated"
	KindEmpty             = "empty"
	KindMissing           = "missing"
	KindMalformedRecord   = "malformed-record"
	KindNotObject         = "not-object"
	KindInvalidUTF8       = "invalid-utf8"
	KindSyntax            = "syntax"
	KindSchema            = "schema"
	KindStaleLiveRecords  = "stale-live-records"
	KindMetadataLag       = "metadata-lag"
	KindDanglingReference = "dangling-reference"
	KindWipedPlaceholder  = "wiped-placeholder"
	KindBOM               = "bom"
	KindNULFilled         = "nul-filled"
	// KindDuplicateRecord: a line is byte for byte an earlier one (a re-append), and the
	// app's loader sends it twice.
	KindDuplicateRecord = "duplicate-record"

	// The damage of a SQLite store, as its app's gate (integrity_check, foreign_key_check)
	// finds it: KindStaleIndex, entries of an index that no longer match their rows (its
	// b-tree well formed); KindBrokenIndex, an index whose b-tree cannot be read;
	// KindCorruptTable, damage in a table's b-tree or rows (or damage no index accounts
	// for); KindNotADatabase, page 1 is not a SQLite header; KindForeignKey, rows whose
	// parent row is missing; KindOrphanedWAL, a store of 0 bytes beside a -wal that holds
	// its transactions (any SQLite open would delete it).
	KindStaleIndex   = "stale-index"
	KindBrokenIndex  = "broken-index"
	KindCorruptTable = "corrupt-table"
	KindNotADatabase = "not-a-database"
	KindForeignKey   = "foreign-key"
	KindOrphanedWAL  = "orphaned-wal"
)

// Verdict says whether a file is healthy and, if not, where it breaks.
type Verdict struct {
	Status   Status
	Kind     string // damage kind, or the skip/busy reason
	Offset   int64  // byte offset of the damage, -1 when it has none
	Detail   string
	Warnings []string
	// NotJudged: skipped, though it is a session file its rule guards — too large, not
	// readable, or not to be judged within the memory bounds —, so not guarded: the daemon
	// says so (file.not_judged). A file gone, or another era's, is skipped without it.
	NotJudged bool
}

func (v Verdict) String() string {
	switch v.Status {
	case Damaged:
		return fmt.Sprintf("damaged: %s at offset %d: %s", v.Kind, v.Offset, v.Detail)
	case Healthy:
		return "healthy"
	default:
		return fmt.Sprintf("%s: %s", v.Status, v.Detail)
	}
}

// OK is the healthy verdict.
func OK() Verdict { return Verdict{Status: Healthy, Offset: -1} }

// Damage is a damaged verdict of the given kind at byte offset off (-1: none).
func Damage(kind string, off int64, format string, args ...any) Verdict {
	return Verdict{Status: Damaged, Kind: kind, Offset: off, Detail: fmt.Sprintf(format, args...)}
}

// Skip is a skipped verdict: the file is not judged, for the reason given.
func Skip(format string, args ...any) Verdict {
	return Verdict{Status: Skipped, Kind: "skipped", Offset: -1, Detail: fmt.Sprintf(format, args...)}
}

// Unjudged is a skipped verdict of a session file that is not guarded for the reason given
// (see [Verdict.NotJudged]).
func Unjudged(format string, args ...any) Verdict {
	v := Skip(format, args...)
	v.NotJudged = true
	return v
}

// Wait is a busy verdict: the file is changing or locked; look again later.
func Wait(format string, args ...any) Verdict {
	return Verdict{Status: Busy, Kind: "busy", Offset: -1, Detail: fmt.Sprintf(format, args...)}
}

// SyntaxVerdict maps a scanner error at base (the offset of the scanned bytes in the file)
// to a damage verdict.
func SyntaxVerdict(err error, base int64) Verdict {
	e, ok := err.(*jsonv.Error)
	if !ok {
		return Damage(KindSyntax, base, "%v", err)
	}
	kind := KindSyntax
	switch e.Kind {
	case jsonv.ErrTruncated:
		kind = KindTruncated
	case jsonv.ErrTrailing:
		kind = KindTrailingGarbage
	case jsonv.ErrInvalidUTF8:
		kind = KindInvalidUTF8
	}
	return Damage(kind, base+e.Offset, "%s", e.Msg)
}
