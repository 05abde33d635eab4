// Package state owns sessionmedic's state directory (DESIGN §8), everything a heal keeps
// beside the files it heals:
//
//	state_dir/quarantine/YYYY-MM-DD/<id>/   the damaged bytes, exactly, and manifest.json ([Quarantine])
//	state_dir/journal/<id>.json             the heals in flight ([Journal])
//	state_dir/last-good/<key>               the last copy of each file seen healthy ([LastGood])
//	state_dir/hands-off/<key>.json          the files an operator restored, left alone ([HandsOff])
//	state_dir/paths.lock                    one byte per path being healed, locked ([LockPath])
//
// A key is a hash of the file's path. Every write goes through the [fsio.FS] each store is
// built with, so the I/O-fault tests reach them as they reach the heal itself.
//
// Caveats. A quarantine entry is written durably, the bytes before the manifest: an entry
// without its manifest is removed as it fails, and [Quarantine.List] skips one a crash left.
// A heal's journal entry names its quarantine entries before they are written, and its
// resolution ([Journal.Recover], or [Journal.Abort] of a heal that failed midway) records
// in each whose change did not stand a [Manifest] Status ([StatusRolledBack],
// [StatusSuperseded]) — the manifest replaced whole, before the journal entry goes — and
// removes one a crash left without its manifest. An entry with no status is [StatusHealed].
// A journal entry is renamed into place whole. Its in-flight set is the journal's own (from
// Begin to End): [Journal.Recover] leaves alone the entries that journal is applying and
// those of other live processes, and takes any other entry of this process for a leftover,
// so a process recovers before it heals, not while another journal of its own heals under
// the same state directory. Last-good copies are replaced atomically but not fsynced (a copy
// is validated before any use); the index of which copies exist is read once, at the first
// use, so a copy another process wrote later is seen by [LastGood.Load], not by
// [LastGood.Get]. The path lock is Linux's open file description lock; elsewhere LockPath
// takes none, and processes sharing a state directory do not coordinate their heals. The
// state_dir/lock of one daemon per state directory is the command's, not this package's.
package state
