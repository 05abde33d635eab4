package format

import "slices"

// AllKinds lists every damage kind a verdict may name, in the order of their constants.
func AllKinds() []string {
	return []string{
		KindTrailingGarbage, KindTruncated, KindEmpty, KindMissing, KindMalformedRecord, KindNotObject,
		KindInvalidUTF8, KindSyntax, KindSchema, KindStaleLiveRecords, KindMetadataLag, KindDanglingReference,
		KindWipedPlaceholder, KindBOM, KindNULFilled, KindDuplicateRecord,
		KindStaleIndex, KindBrokenIndex, KindCorruptTable, KindNotADatabase, KindForeignKey, KindOrphanedWAL,
	}
}

// KindLister is a Profile that names the damage kinds its own checklist reports (its
// CheckLines, DocChecker, RecordChecker, Sequence, CheckEmpty and NoRecords), beyond those of
// its shape (see [Kinds]). A test of heal/apps holds every app's list to the kinds its file
// names.
type KindLister interface {
	OwnKinds() []string
}

// Kinds lists the damage kinds a verdict on a file p judges can name, in the order of
// [AllKinds]: what is judged of every file before its records (a file of NUL bytes, a byte
// order mark; an empty one where the app never writes one), the syntax of its shape (a
// document: syntax, a torn or trailing value, invalid UTF-8; a log: a torn line, a malformed
// record, invalid UTF-8, a line-aligned prefix of the last-good copy), a checklist's schema
// findings, a missing file where its absence is damage ([MissingDetector]), and the kinds of
// its own checklist ([KindLister]).
func Kinds(p Profile) []string {
	ks := []string{KindNULFilled, KindBOM, KindTruncated, KindInvalidUTF8}
	_, emptyChecker := p.(EmptyChecker)
	if p.EmptyIsDamage() || emptyChecker {
		ks = append(ks, KindEmpty)
	}
	if p.JSONL() {
		ks = append(ks, KindMalformedRecord)
		_, records := p.(RecordChecker)
		_, seq := p.(SequenceChecker)
		if !p.Plain() || records || seq {
			ks = append(ks, KindSchema)
		}
	} else {
		ks = append(ks, KindSyntax, KindTrailingGarbage)
		if !p.Plain() {
			ks = append(ks, KindSchema)
		}
	}
	if _, ok := p.(MissingDetector); ok {
		ks = append(ks, KindMissing)
	}
	if l, ok := p.(KindLister); ok {
		ks = append(ks, l.OwnKinds()...)
	}
	return inKindOrder(ks)
}

// inKindOrder is ks without repeats, in the order of AllKinds (kinds it does not know last).
func inKindOrder(ks []string) []string {
	var out []string
	for _, k := range AllKinds() {
		if slices.Contains(ks, k) {
			out = append(out, k)
		}
	}
	for _, k := range ks {
		if !slices.Contains(out, k) {
			out = append(out, k)
		}
	}
	return out
}

// Kinds lists the damage kinds a verdict on a file of the format name can name: those of
// every profile registered under it (see [Kinds]); a name not registered is detected from
// the file name, so it can name those of both generic formats.
func (r *Registry) Kinds(format string) []string {
	ps, ok := r.byFormat[format]
	if !ok {
		ps = append(r.byFormat["json"], r.byFormat["jsonl"]...)
	}
	var ks []string
	for _, p := range ps {
		ks = append(ks, Kinds(p)...)
	}
	return inKindOrder(ks)
}
