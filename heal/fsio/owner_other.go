//go:build !linux

package fsio

// asUser runs fn as it is: there is no per-thread file-system identity here. A privileged
// run relies on the resolver and on the ownership checks alone.
func asUser(uid, gid int, fn func() error) error { return fn() }

// actsAsOwner: this build cannot switch to a tree owner's identity.
const actsAsOwner = false
