// Package apps holds what each app supported is, one file per app: the Profiles of its file
// types (what valid means, records and their keys, cross-file checks and reconcile, backups,
// missing-file detection, temp and lock names) and the lock protocol it uses, which heal/lock
// implements. [Registry] gathers them with the generic profiles of heal/format; the engine
// builds it once and asks it, by a rule's format and a path, which profile judges a file.
//
// It imports heal/format, heal/jsonv, heal/fsio, heal/lock and policy, never heal; its import
// test keeps it so.
package apps

import (
	"github.com/sessionmedic/sessionmedic/heal/format"
	"github.com/sessionmedic/sessionmedic/heal/lock"
)

// Registry returns the profiles of every format a policy may name, and the apps' lock
// protocols.
func Registry() *format.Registry {
	r := format.NewRegistry()
	addCopaw(r)
	addNanobot(r)
	addPraisonAI(r)
	addOpenViking(r)
	addOpenClaw(r)
	addClaudeCode(r)
	addCodex(r)
	addGeminiCLI(r)
	addPi(r)
	addCopilotCLI(r)
	addQwenCode(r)
	addOpenCode(r)
	return r
}

// lockOptions are the options of heal/lock for an app protocol taken with lp (a protocol
// that has no staleness rule ignores Stale).
func lockOptions(lp format.LockParams) lock.Options {
	return lock.Options{Wait: lp.Wait, Stale: lp.Stale, Now: lp.Now, Faults: lp.Faults, Probe: lp.Probe}
}
