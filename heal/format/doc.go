// Package format owns what is generic about judging a session file, whatever app wrote it: the
// verdicts and damage kinds of DESIGN §5; strict JSON and JSONL validation ([Inspect]: empty,
// all-NUL and byte-order-mark files, one document or one object record per line, a torn last
// line, a healthy JSONL file that is a line-aligned prefix of its last-good copy); the generic
// salvage and its measure ([Salvage], [KeepLines], [ValidLines], [Union] with a last-good
// copy, [Loss]); streaming validation in bounded memory ([StreamLines], [StreamVerdict],
// [EachLine]) and the one pass over a big file that measures its repairs ([Survey]); the check of bytes appended to an append-only file ([AppendedValid]) and the
// memory of the append-only files last seen healthy that lets a pass check only those bytes
// ([AppendCache]); and the [Profile] interface through which all of it asks what one app's
// file type is, with the generic profiles ([JSON], [JSONLog]) and the [Registry] that maps a
// rule's format and a path to a profile. Nothing here names an app: where an app differs, the
// code asks its Profile.
//
// It imports heal/jsonv (the strict scanner) and heal/fsio (stable reads, identities), never
// heal; its import test keeps it so.
//
// # Adding an app
//
// An app is one file of heal/apps: its file types are Profile values, its format name is
// registered with a function choosing among them by path ([Registry.Add]), and its own lock
// protocol, if it has one, with [Registry.AddLock] (the protocol itself lives in heal/lock).
// Each profile must answer (embedding [Document] or [Log] answers the shape questions every
// app's document or log shares, leaving Name, Dialect, EmptyIsDamage and the checklist):
//
//   - Name, JSONL, Dialect: how the file is named in reports, its shape, and exactly what the
//     app's own reader accepts (no more, no less);
//   - EmptyIsDamage, AppendOnly, Plain: whether a 0-byte file is damage, whether the app only
//     appends (which allows incremental passes), whether syntax is all there is to check;
//   - a document's [DocChecker] or a log's CheckLines: the app's checklist over a valid
//     document (one streamed pass: a few members, then its history element by element, so
//     that a document of any size is judged in bounded memory) or valid lines, returning a
//     [Damage] of kind [KindSchema] (or a more precise kind) at the offset of the first
//     problem, and [OK] for a file the app itself wrote and reads; a document's pass also
//     counts the records it holds.
//
// and, where they apply, the optional abilities, each a small interface that heal asks for
// and does without:
//
//   - judging: [Skipper] (files not to judge: encrypted, another era of the app),
//     [EmptyChecker] (an empty file judged against its neighbours), [RecordChecker] (the
//     checklist one record at a time, for files streamed or checked incrementally);
//   - repairing: [Reconciler] (cross-file repairs), [LinkedEditor] (another file a repair
//     must change with it), [Superseder] (records kept elsewhere, which salvage drops),
//     [RecordKeyer] (a record's identity across versions, for merging with last-good),
//     [BackupFinder] (the app's own backups), [EntryDropper] and [FieldRestorer] (the
//     opt-in drop-invalid-entries and restore-fields strategies);
//   - the app's layout: [MissingDetector] (files whose absence is damage, the evidence, the
//     copies to salvage from), [TempOwner] (which file's lock guards an app temp file),
//     [DirOrderer] (a file seen after its siblings) and [LockNamer] (the app's lock files).
//
// heal/apps' tests check that every format policy accepts has a profile and every app lock
// protocol is registered. Every profile also runs the tests that every file type runs: the
// shared sample-case table of heal/samples_test.go and heal/shapes_test.go, fed by each app's
// samples (its real files, healthy and damaged, with the exact verdict and repair each must
// get); the streaming-versus-in-memory agreement of heal/stream_test.go; the
// incremental-versus-full agreement of heal/incremental_test.go; and the fuzz targets of
// heal/fuzz_test.go (healed output is valid, valid input is returned byte for byte, healing
// twice is a no-op). A new app adds its samples to those tables.
package format
