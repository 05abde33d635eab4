// Package format owns what is generic about judging a session file, whatever app wrote it:
// the verdicts and damage kinds of DESIGN §5; strict JSON and JSONL validation ([Inspect]:
// empty, all-NUL and byte-order-mark files, one document or one object record per line, a
// torn last line, a healthy JSONL file that is a line-aligned prefix of its last-good copy);
// streaming validation in bounded memory ([StreamLines], [StreamVerdict], [EachLine]); the
// check of bytes appended to an append-only file ([AppendedValid]); and the [Profile]
// interface through which all of it asks what one app's file type is. Nothing here names an
// app: where an app differs, the code asks its Profile.
//
// It imports heal/jsonv (the strict scanner) and heal/fsio (stable reads, identities), never
// heal; its import test keeps it so.
//
// # Adding an app
//
// A new app's file types are Profile values. Each must answer:
//
//   - Name, JSONL, Dialect: how the file is named in reports, its shape, and exactly what the
//     app's own reader accepts (no more, no less);
//   - EmptyIsDamage, AppendOnly, Plain: whether a 0-byte file is damage, whether the app only
//     appends (which allows incremental passes), whether syntax is all there is to check;
//   - CheckValue or CheckLines: the app's checklist over a valid document or valid lines,
//     returning a [Damage] of kind [KindSchema] (or a more precise kind) at the offset of the
//     first problem, and [OK] for a file the app itself wrote and reads;
//   - Records: how many records a valid document holds;
//   - and, where they apply, [Skipper] (files not to judge: encrypted, another era of the
//     app), [EmptyChecker] (an empty file judged against its neighbours) and [RecordChecker]
//     (the checklist one record at a time, for files streamed or checked incrementally).
//
// Every profile runs the tests that every file type runs today: the sample cases of
// heal/samples_test.go and heal/shapes_test.go (the app's real files, healthy and damaged,
// with the exact verdict and repair each must get), the streaming-versus-in-memory
// agreement of heal/stream_test.go, the incremental-versus-full agreement of
// heal/incremental_test.go and the fuzz targets of heal/fuzz_test.go (healed output is
// valid, valid input is returned byte for byte, healing twice is a no-op).
//
// For now the app file types are still heal's fileType, whose methods map each question to
// the per-app functions of heal/app_*.go; the next step moves each app to one file of
// heal/apps implementing Profile, with the rest of what an app is (reconcile, backups,
// missing-file evidence, temp and lock names), which heal still decides by file type.
package format
