//go:build !linux

package lock

import (
	"math"
	"syscall"
)

// Without /proc there is no process start time: a pid alone names a process, so pid reuse
// can make a dead holder look alive (the lock is then only taken once it is stale by age).

func procStartTime(pid int) (uint64, bool) { return 0, false }

// pidAlive: kill(pid, 0) must succeed (any error, EPERM included, means dead).
func pidAlive(pid int64) bool {
	if pid <= 0 || pid > math.MaxInt32 {
		return false
	}
	return syscall.Kill(int(pid), 0) == nil
}

// ProcessStart returns 0, false: no start time is known here.
func ProcessStart(pid int) (uint64, bool) { return procStartTime(pid) }

// ProcessAlive reports whether the process pid is still running (start cannot be checked).
func ProcessAlive(pid int, start uint64) bool { return pidAlive(int64(pid)) }

// ProcessRunning reports whether a process with this pid exists.
func ProcessRunning(pid int) bool { return pidAlive(int64(pid)) }

// procZombie: zombies cannot be told apart here.
func procZombie(pid int) bool { return false }
