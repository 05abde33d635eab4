//go:build !linux

package resolve

// AsUser runs fn as it is: there is no per-thread file-system identity here. A privileged
// run relies on the resolver and on the ownership checks alone.
func AsUser(uid, gid int, fn func() error) error { return fn() }

// ActsAsOwner: this build cannot switch to a tree owner's identity.
const ActsAsOwner = false
