// Package fsio does sessionmedic's file I/O: stable reads that pin the version read (an
// [Identity]), and durable writes — a temp file in the target's directory, written, fsynced,
// renamed over the target, the directory fsynced — through a directory descriptor reached
// from the rule's root without following symlinks (a [Dir]). It also finds the processes
// holding a file open for writing ([OpenWriters]), opens and hashes a pinned version of a
// file streaming ([OpenStable], [SHAFile]), and gives what a temp file receives ([Content]:
// [Bytes] in memory, a [Range] of the original) with the writers that hash or compare a
// stream on the way ([RangeHash], [PrefixMatch], [FirstNonWS], [ContainsWriter]).
//
// Every write goes through an [FS] value. Its Faults function, when set, is asked before each
// file operation and may fail it: that is the seam of the I/O-fault tests, handed down as a
// value, never installed in a package variable. The zero FS injects nothing.
//
// Caveats. [ReadStable] refuses anything but a regular file and reports a file whose identity
// moved during the read as [ErrChanged]; a caller treats that as "being written", not as
// damage. [FS.ReplaceAtomic] does not fsync (it is for copies that are validated before any
// use). [OpenWriters] sees other processes only through /proc: elsewhere, and for processes of
// other users when not root, it finds nothing. A [Dir] guards the walk from the root to the
// file, not the root itself: a symlinked root is followed, as the scan that found the file
// followed it.
package fsio
