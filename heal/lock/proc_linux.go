package lock

import (
	"bytes"
	"math"
	"os"
	"strconv"

	"golang.org/x/sys/unix"
)

// procStat returns the fields of /proc/<pid>/stat after the command name:
// index 0 is field 3 (state), index 19 is field 22 (starttime). The command
// name is parenthesised and may hold spaces or ')', so the split starts after
// the last ')'.
func procStat(pid int) ([]string, bool) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return nil, false
	}
	i := bytes.LastIndexByte(b, ')')
	if i < 0 || i+2 > len(b) {
		return nil, false
	}
	rest := string(bytes.TrimRight(b[i+2:], "\n"))
	var fields []string
	for len(rest) > 0 {
		j := 0
		for j < len(rest) && rest[j] != ' ' {
			j++
		}
		fields = append(fields, rest[:j])
		if j == len(rest) {
			break
		}
		rest = rest[j+1:]
	}
	return fields, len(fields) > 0
}

// procStartTime returns field 22 of /proc/<pid>/stat (clock ticks since
// boot), the value OpenClaw records as "starttime".
func procStartTime(pid int) (uint64, bool) {
	f, ok := procStat(pid)
	if !ok || len(f) < 20 {
		return 0, false
	}
	v, err := strconv.ParseUint(f[19], 10, 64)
	if err != nil {
		return 0, false
	}
	return v, true
}

// procZombie reports whether pid is a zombie (state Z). An unreadable stat
// file counts as not a zombie, as in OpenClaw.
func procZombie(pid int) bool {
	f, ok := procStat(pid)
	return ok && f[0] == "Z"
}

// pidAlive follows OpenClaw's isPidAlive: kill(pid, 0) must succeed (any
// error, EPERM included, means dead) and the process must not be a zombie.
func pidAlive(pid int64) bool {
	if pid <= 0 || pid > math.MaxInt32 {
		return false
	}
	if err := unix.Kill(int(pid), 0); err != nil {
		return false
	}
	return !procZombie(int(pid))
}

// ProcessStart returns a process's start time (field 22 of /proc/<pid>/stat): with the pid it
// names one process across pid reuse.
func ProcessStart(pid int) (uint64, bool) { return procStartTime(pid) }

// ProcessAlive reports whether the process pid, started at start, is still running.
func ProcessAlive(pid int, start uint64) bool {
	if !pidAlive(int64(pid)) {
		return false
	}
	now, ok := procStartTime(pid)
	return ok && now == start
}

// ProcessRunning reports whether a process with this pid exists (not a zombie).
func ProcessRunning(pid int) bool { return pidAlive(int64(pid)) }
