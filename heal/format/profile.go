package format

import "github.com/sessionmedic/sessionmedic/heal/jsonv"

// Profile is what one file type is within its app's layout: the questions the generic
// validation of this package asks of it. It is the contract an app file implements (see the
// package doc, "Adding an app").
type Profile interface {
	// Name is the file type's name in reports ("json", "openclaw-transcript").
	Name() string
	// JSONL: the file holds one object record per line; otherwise one JSON document.
	JSONL() bool
	// Dialect is exactly what the app's own reader accepts beyond RFC 8259.
	Dialect() jsonv.Dialect
	// EmptyIsDamage: the app never writes a 0-byte file of this type.
	EmptyIsDamage() bool
	// AppendOnly: the app only ever appends to the file, so a file that only grew since it
	// was last seen healthy may be validated from its old end (see [AppendedValid]).
	AppendOnly() bool
	// Plain: the type has no checklist beyond the syntax (and, for JSONL, one object record
	// per line). Its records' trees are never parsed, and a big file of it may be judged and
	// repaired streaming.
	Plain() bool
	// CheckValue applies the app's checklist to a valid JSON document (not asked of a plain
	// or a JSONL profile).
	CheckValue(f File, data []byte, root *jsonv.Value) Verdict
	// CheckLines applies the app's checklist to a JSONL file whose every line is a blank or
	// a complete object record (not asked of a plain or a JSON profile).
	CheckLines(f File, lines []Line) Verdict
	// Records counts the history a valid JSON document holds (messages, sessions), for
	// choosing between repair plans and measuring loss. JSONL records are counted by lines.
	Records(root *jsonv.Value) int
}

// Skipper is a Profile that leaves some files unjudged: a non-empty reason (an encrypted
// envelope, a store of the app's SQLite era) makes the verdict skipped.
type Skipper interface {
	SkipReason(path string, data []byte) string
}

// EmptyChecker is a Profile whose verdict on a 0-byte file depends on the files around it.
type EmptyChecker interface {
	CheckEmpty(f File) Verdict
}

// RecordChecker is a JSONL Profile whose checklist can also be applied one record at a
// time, so that a file too large to hold is validated streaming and an append-only one
// incrementally. rec is a line that is a valid object record, without its line ending.
type RecordChecker interface {
	// RecordProblem is what the checklist finds wrong with a record ("" for nothing);
	// first says it is the file's first record.
	RecordProblem(rec []byte, first bool) string
	// NoRecords is the verdict on a file that holds no record at all.
	NoRecords() Verdict
	// AppendedOK: rec, appended after the file's first record, is one the app accepts.
	AppendedOK(rec []byte) bool
}

// File is what a checklist may need beyond the bytes: where the file lives and
// sessionmedic's last-good copy of it.
type File struct {
	Path     string
	LastGood []byte // nil when there is none
	MaxSize  int64  // the rule's max_file_size (0: none)
}
