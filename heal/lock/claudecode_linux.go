package lock

import (
	"errors"
	"io/fs"
	"os"
	"strconv"
	"strings"
)

// PIDDomain is the pid domain of this process as Claude Code writes it in its registry,
// linux:<machine-id>:pid:[<pid namespace inode>], or "" when either part cannot be read.
func PIDDomain() string {
	id, err := os.ReadFile("/etc/machine-id")
	if err != nil {
		return ""
	}
	ns, err := os.Readlink("/proc/self/ns/pid")
	mid := strings.TrimSpace(string(id))
	if err != nil || mid == "" || !strings.HasPrefix(ns, "pid:[") {
		return ""
	}
	return "linux:" + mid + ":" + ns
}

// claudeEntryLive judges an entry that names the session: live when its pid domain is not
// ours (its process cannot be seen from here) or when /proc/<pid> is a running process whose
// start time is the recorded procStart.
func claudeEntryLive(e claudeEntry) (bool, string) {
	if e.domain != "" {
		switch ours := PIDDomain(); {
		case ours == "":
			return true, "pidDomain " + e.domain + " cannot be compared with ours (unreadable): its process cannot be checked from here"
		case e.domain != ours:
			return true, "pidDomain " + e.domain + " is not ours (" + ours + "): its process cannot be checked from here"
		}
	}
	if e.pid <= 0 {
		return true, "no pid: its process cannot be checked"
	}
	pid := strconv.Itoa(e.pid)
	if _, err := os.Stat("/proc/" + pid); errors.Is(err, fs.ErrNotExist) {
		return false, "pid " + pid + " is gone"
	} else if err != nil {
		return true, "pid " + pid + " cannot be checked: " + err.Error()
	}
	f, ok := procStat(e.pid)
	if !ok || len(f) < 20 {
		if _, err := os.Stat("/proc/" + pid); errors.Is(err, fs.ErrNotExist) {
			return false, "pid " + pid + " is gone"
		}
		return true, "pid " + pid + " runs (its start time is unreadable)"
	}
	if f[0] == "Z" {
		return false, "pid " + pid + " is a zombie"
	}
	if e.torn || e.procStart == "" {
		return true, "pid " + pid + " runs"
	}
	now, err := strconv.ParseUint(f[19], 10, 64)
	if err != nil {
		return true, "pid " + pid + " runs (its start time is unreadable)"
	}
	switch same, comparable := sameStart(e.procStart, now); {
	case !comparable:
		return true, "pid " + pid + " runs (procStart " + strconv.Quote(e.procStart) + " cannot be compared)"
	case !same:
		return false, "pid " + pid + " was reused (started at " + f[19] + ", not " + e.procStart + ")"
	}
	return true, "pid " + pid + " runs, started at " + e.procStart
}

// sameStart: a recorded procStart is the start time read now. A record that is not a number
// cannot be compared.
func sameStart(recorded string, now uint64) (same, comparable bool) {
	v, err := strconv.ParseUint(strings.TrimSpace(recorded), 10, 64)
	if err != nil {
		return false, false
	}
	return v == now, true
}
