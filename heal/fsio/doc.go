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
// other users when not root, it finds nothing. Every open of a path below a rule root, by
// any function here, goes through one resolver ([Confine]): the root is resolved once per
// policy load (a symlinked root is followed then, and only then), and no symlink below it
// is ever followed (openat2 RESOLVE_NO_SYMLINKS, else a walk from / with O_NOFOLLOW). A file
// with several links whose owner is not its directory's is never read ([ErrForeignLink]).
// Paths below no rule root (a file named on the command line alone) refuse only a final
// symlink.
package fsio
