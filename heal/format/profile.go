package format

import (
	"io"
	"time"

	"github.com/sessionmedic/sessionmedic/heal/fsio"
	"github.com/sessionmedic/sessionmedic/heal/jsonv"
)

// Profile is what one file type is within its app's layout: the questions the generic
// validation of this package asks of it. It is the contract an app file implements (see the
// package doc, "Adding an app").
type Profile interface {
	// Name is the file type's name in reports ("json", "<app>-transcript").
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
	// CheckLines applies the app's checklist to a JSONL file whose every line is a blank or
	// a complete object record (not asked of a plain or a JSON profile).
	CheckLines(f File, lines []Line) Verdict
}

// SQLiteStore is the Profile of an app's SQLite database: it is never read by plain file
// I/O (a close of it would drop SQLite's locks on it), only through SQLite (heal/sqlitedb),
// and judged by the app's own gate. SQLiteDoctor says what the app's own tool does with
// damage sessionmedic leaves ("" for nothing to say).
type SQLiteStore interface {
	SQLiteDoctor() string
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
	// Read is the identity of the bytes judged and ReadBegan when their read began (the
	// wall clock), when they are the file's own as read from it; zero when they are not (a
	// repair's result, a copy): a checklist may then reuse nothing it learnt of the file.
	Read      fsio.Identity
	ReadBegan time.Time
}

// Reconciler is a Profile with cross-file repairs (DESIGN §6): the file's bytes made to
// agree with the files around it, or nil when there is nothing to do. kind is the damage the
// inspection found.
type Reconciler interface {
	Reconcile(path string, data []byte, kind string) []byte
}

// SalvageFinisher is a JSONL Profile whose app needs more of a salvage than whole records:
// FinishSalvage returns the salvaged bytes (of the damaged file's, damaged) the app can
// resume: salvaged itself when they are.
type SalvageFinisher interface {
	FinishSalvage(path string, damaged, salvaged []byte) []byte
}

// StreamFinisher is a SalvageFinisher that finishes a salvage read streaming (a file planned
// from itself, whose salvage is a [Splice] of it): FinishSplice is FinishSalvage's result as
// a splice of the salvage, nil when it is the salvage as it is. A line over MaxLine is
// ErrNoStream.
type StreamFinisher interface {
	SalvageFinisher
	FinishSplice(path string, damaged io.ReaderAt, dsize int64, salvaged io.ReaderAt, ssize int64) (*Splice, error)
}

// Superseder is a JSONL Profile some of whose live records are already kept elsewhere (an
// archive): a salvage drops them, and dropping them loses nothing. Superseded returns nil
// when no record is.
type Superseder interface {
	Superseded(path string) func(rec *jsonv.Value) bool
}

// LinkedEditor is a Profile whose file, when a repair rewrites it to a file of records
// records ([Records]), must be matched by an edit of another file (a count kept in a metadata
// file). ok is false when none is needed.
type LinkedEditor interface {
	LinkedEdit(path string, records int) (e Edit, ok bool)
}

// Edit is one more file a repair rewrites: its path, the bytes and identity read, and the
// new bytes.
type Edit struct {
	Path  string
	Old   []byte
	OldID fsio.Identity
	Data  []byte
}

// RecordKeyer is a JSONL Profile whose records have an identity across versions of the
// file, so that a newer version of a record replaces its old one when a last-good copy and
// salvaged records are merged. A key starting with NUL names a record of which the file holds
// one only (a header); "" means the record is keyed by its bytes.
type RecordKeyer interface {
	RecordKey(rec *jsonv.Value) string
}

// RecordKeyFielder is a RecordKeyer that names what its RecordKey reads of a record: the
// members built for it (jsonv.ParseFields), all the key may depend on.
type RecordKeyFielder interface {
	RecordKeyer
	RecordKeyFields() *jsonv.Fields
}

// EntryDropper is a Profile that implements the drop-invalid-entries strategy: the file
// without the entries its checklist rejects, or nil.
type EntryDropper interface {
	DropInvalid(data []byte) []byte
}

// FieldRestorer is a Profile that implements the restore-fields strategy: the file with the
// fields its app's writer drops put back from the last-good copy, or nil.
type FieldRestorer interface {
	RestoreFields(path string, data, lastGood []byte) []byte
}

// BackupFinder is a Profile whose app keeps its own backups: their paths, newest first,
// replace the rule's backup templates.
type BackupFinder interface {
	Backups(path string) []string
}

// MissingDetector is a Profile whose files' absence can itself be damage (a store renamed
// away, a session the app's loader set aside).
type MissingDetector interface {
	// Probe is a file name that a rule covering a directory that may hold such files
	// matches to this profile; directories whose probe no rule maps here are not listed.
	Probe() string
	// MissingIn names the files of dir, listed as names, whose absence is damage.
	MissingIn(dir string, names []string) []string
	// MissingEvidence says why a missing file existed ("the app's .corrupt copy is next to it").
	MissingEvidence() string
	// MissingSources are files, best first, whose content a missing file's salvage may use.
	MissingSources(path string) []string
}

// TempOwner is a Profile whose app's temp files are cleaned up under the lock of another
// file: the one that lock guards, given the temp file's path and bytes ("" for no lock). A
// profile that is not a TempOwner has its temp files cleaned up under no lock.
type TempOwner interface {
	TempLockTarget(temp string, data []byte) string
}

// DirOrderer is a Profile whose app needs a heal to see one file of a directory after its
// siblings (metadata that follows the other files' records). It is asked of every registered
// profile, by base name.
type DirOrderer interface {
	LastInDir(name string) bool
}

// LockNamer is a Profile whose app keeps lock files under names of its own, which a path named
// on the command line is not judged as (a name ending in ".lock" never is). It is asked of
// every registered profile, by base name.
type LockNamer interface {
	IsLockName(name string) bool
}

// Document gives a JSON-document profile the answers every app's document shares: not JSONL,
// not append-only, with a checklist (not plain), never asked about lines. Embed it and answer
// the rest (Name, Dialect, EmptyIsDamage) and the checklist ([DocChecker]).
type Document struct{}

func (Document) JSONL() bool                     { return false }
func (Document) AppendOnly() bool                { return false }
func (Document) Plain() bool                     { return false }
func (Document) CheckLines(File, []Line) Verdict { return OK() }

// Log gives a JSONL profile the answers every app's log shares: JSONL, rewritten by its app
// (embedders that only ever append say so), with a checklist, never asked about a document,
// its records counted by lines. Embed it and answer the rest (Name, Dialect, EmptyIsDamage,
// CheckLines).
type Log struct{}

func (Log) JSONL() bool      { return true }
func (Log) AppendOnly() bool { return false }
func (Log) Plain() bool      { return false }

// Splitter is a JSONL Profile whose app glues records onto one line (a torn stub and then a
// whole record appended without a newline; two complete records with the '\n' between them
// lost; a NUL run a power loss left before a record): its salvage splits such a line at a
// record boundary instead of dropping it (see [SplitLine]).
type Splitter interface {
	// RecordStarts are the byte strings one of the app's records begins with (`{"type":"`).
	RecordStarts() [][]byte
	// Whole: rec, a valid object found after other bytes on a line, is a whole record of the
	// app, not a value that was nested in a torn one.
	Whole(rec *jsonv.Value) bool
}

// Rejoiner is a Splitter whose app's writer may put a raw newline inside a string (an
// unescaped "\n" in a tool's output), splitting one record over several lines the loader
// each rejects: its salvage joins such lines back, the raw newlines escaped, when and only
// when the result is one whole record ([RejoinLines]).
type Rejoiner interface {
	Splitter
	RejoinsSplitRecords() bool
}

// DuplicateDropper is a JSONL Profile whose app sends a re-appended record twice (it does
// not key records by id): its salvage keeps the first of byte-identical lines only
// ([FirstDuplicate] finds them).
type DuplicateDropper interface {
	DropsDuplicateLines() bool
}

// PrefixJudge is a JSONL Profile whose app itself legitimately removes its last records: a
// healthy file that is a line-aligned prefix of its last-good copy is truncated only when
// the missing tail (last-good's size bytes after it, read from missing) says so; otherwise
// the verdict is healthy with the warning returned. The tail is read streaming: a line
// longer than the line window as its record's skeleton ([SplitAtLong]).
type PrefixJudge interface {
	TruncatedTail(missing io.ReaderAt, size int64) (truncated bool, warning string, err error)
}

// OrdinalAdder is a JSONL Profile whose records carry a sequence number the app needs on its
// last record: the add-ordinals strategy. AddOrdinals is the file r holds (size bytes) with
// the number given to the trailing records that lack one (only that member is inserted), as
// a splice of it read streaming; nil when there is nothing to add.
type OrdinalAdder interface {
	AddOrdinals(path string, r io.ReaderAt, size int64) (*Splice, error)
}

// HeaderRebuilder is a JSONL Profile whose first line is a metadata record the app cannot
// load a file without: the rebuild-header strategy. RebuildHeader is the file r holds (size
// bytes) with a torn or missing first record rebuilt from values present in the file and
// around it (every other byte kept), as a splice of it read streaming; nil when some value is
// not there to be found.
type HeaderRebuilder interface {
	RebuildHeader(path string, r io.ReaderAt, size int64) (*Splice, error)
}

// Resurrectable is a Profile whose app deletes files it should not (a start-up sweep that
// removes a session it cannot list): a file seen healthy that disappears is restored from
// its last-good copy when Restore says the app would still keep that copy (not older than
// its own retention at now). Restore reads the copy streaming: it may be of any size.
type Resurrectable interface {
	Restore(lastGood io.ReaderAt, size int64, now time.Time) bool
}

// PrefixKeeper is a Profile some of whose bytes other files point into (a child session whose
// history is this file's first bytes, by offset): a repair that changes any of the first
// KeptPrefix bytes of path is never made.
type PrefixKeeper interface {
	KeptPrefix(path string) int64
}

// SequenceChecker is a [RecordChecker] whose checklist also spans records (a sequence number
// each record continues, a record the file must hold somewhere): every pass, over a file held
// whole or streamed, feeds a fresh Sequence every valid record in order and asks it at the
// end, so that the checklist is written once and a file of any size gets the same verdict.
type SequenceChecker interface {
	// NewSequence starts a pass over the file at path ("" when it is not known).
	NewSequence(path string) Sequence
}

// RecordSequence is a [Sequence] whose Record also applies the profile's per-record checklist
// ([RecordChecker]'s RecordProblem) on the one parse of the record it makes: a pass does not
// ask RecordProblem of the records it feeds it.
type RecordSequence interface {
	ChecksRecords()
}

// ValidSequence is a [Sequence] that can be given a record already found valid under its
// profile's dialect (jsonv.Valid), which it then does not check again.
type ValidSequence interface {
	// RecordValid is Record of rec, which passed jsonv.Valid under the profile's dialect.
	RecordValid(rec []byte) string
}

// BatchSequence is a [RecordSequence] whose reading of a record can run ahead of it, on
// other goroutines: a [RecordBatch] reads the records of a block of the file alone, and the
// sequence applies what it read in the file's order. A pass over a big file reads the batches
// of its blocks on several CPUs; ApplyBatch of each record in order must say what Record (or
// RecordValid) of it says.
type BatchSequence interface {
	RecordSequence
	Sequence
	// NewBatch is an empty batch, for one goroutine at a time.
	NewBatch() RecordBatch
	// ApplyBatch is Record of the k-th record read into b (from 0). The records of a batch
	// are applied in order, after every record of the batches before it; the first record of
	// the file is the first of its batch.
	ApplyBatch(b RecordBatch, k int) string
}

// RecordBatch reads the records of one block of a file, in order, for a [BatchSequence].
type RecordBatch interface {
	// Add reads rec, the batch's next record; valid says it passed jsonv.Valid under the
	// profile's dialect (else Add checks it, as Record does).
	Add(rec []byte, valid bool)
	// Reset empties the batch for another block.
	Reset()
}

// KeyedBatch is a [RecordBatch] that can be given, with a record that passed jsonv.Valid,
// where its top-level members' keys begin (jsonv.ValidTop, the one pass over its bytes).
type KeyedBatch interface {
	RecordBatch
	// AddKeyed is Add of a valid record whose members' keys begin at keys.
	AddKeyed(rec []byte, keys []int32)
}

// SequenceWarner is a [Sequence] that also gives the checklist's warnings, once End has run
// and found nothing wrong.
type SequenceWarner interface {
	Warnings() []string
}

// RecordPlacer is a Sequence told where each record starts (its offset in the file) just
// before Record is asked of it.
type RecordPlacer interface {
	RecordAt(off int64)
}

// EndJudge is a Sequence whose end may say damage of a kind and at a place of its own (the
// first of the records it counts), not a schema problem at the last record: ok is false for
// none. It is asked before End.
type EndJudge interface {
	EndVerdict() (v Verdict, ok bool)
}

// HeldSequence is a Sequence that tells the bytes it holds (an estimate within a factor of
// two): what keeping its state costs. Without it, a Sequence is taken to hold
// keptRecordBytes a record it was given.
type HeldSequence interface {
	Held() int
}

// SkeletonFielder is a JSONL Profile whose checks read no more of a record than
// SkeletonFields names (as jsonv.ParseFields builds it; every other member's key and its
// value's type), wherever they read it: its record checklist and sequence, and what it says
// of a whole or a superseded record, whether one may be appended, and its key. A record over
// the skeleton bound (16 MiB) is then judged from the skeleton of what they read
// (jsonv.FieldsSkeleton): one whose whole skeleton is over the bound (16 MiB of short
// strings: a tool's output as thousands of lines) is not read whole.
type SkeletonFielder interface {
	SkeletonFields() *jsonv.Fields
}

// SequenceKind is a Sequence that tells the kind of the problem its last Record returned
// when it is not a schema one (a record repeated byte for byte: a duplicate), so that a
// verdict names that kind.
type SequenceKind interface {
	ProblemKind() string
}

// Sequence is one streamed pass's memory of the records seen so far.
type Sequence interface {
	// Record is what the checklist finds wrong with rec, the next record ("" for nothing).
	Record(rec []byte) string
	// End is what it finds wrong once every record was fed ("" for nothing).
	End() string
}
