//go:build !linux

package lock

// PIDDomain is "": Claude Code's pid domains are Linux's (machine id and pid namespace).
func PIDDomain() string { return "" }

// claudeEntryLive: without /proc a process cannot be told from one that reused its pid, so
// an entry naming the session counts as live.
func claudeEntryLive(claudeEntry) (bool, string) {
	return true, "process liveness cannot be checked on this system"
}
