package fsio

import (
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
)

// eachOpenFile calls fn with each descriptor other processes hold (its pid, its stat and its
// fdinfo path) until fn says stop for that process; it reports whether it could read every
// process's descriptors (run as root, or every process the caller's).
func eachOpenFile(fn func(pid int, st *syscall.Stat_t, fdinfo string) (stop bool)) (complete bool) {
	procs, err := os.ReadDir("/proc")
	if err != nil {
		return false
	}
	self := os.Getpid()
	complete = true
	for _, p := range procs {
		pid, err := strconv.Atoi(p.Name())
		if err != nil || pid == self {
			continue
		}
		fdDir := filepath.Join("/proc", p.Name(), "fd")
		fds, err := os.ReadDir(fdDir)
		if err != nil {
			if !errors.Is(err, os.ErrNotExist) && !errors.Is(err, syscall.ESRCH) {
				complete = false // not ours to look at
			}
			continue
		}
		for _, fd := range fds {
			var st syscall.Stat_t
			if syscall.Stat(filepath.Join(fdDir, fd.Name()), &st) != nil {
				continue
			}
			if fn(pid, &st, filepath.Join("/proc", p.Name(), "fdinfo", fd.Name())) {
				break
			}
		}
	}
	return complete
}

// OpenWriters returns the pids of other processes that hold the file with this device and
// inode open for writing (Linux: /proc/*/fd and /proc/*/fdinfo). Processes whose fds cannot
// be read (other users, when not root) are not seen.
func OpenWriters(dev, ino uint64) []int {
	var pids []int
	eachOpenFile(func(pid int, st *syscall.Stat_t, fdinfo string) bool {
		if uint64(st.Dev) == dev && st.Ino == ino && fdWritable(fdinfo) {
			pids = append(pids, pid)
			return true
		}
		return false
	})
	return pids
}

// fdWritable reads the access mode from an fdinfo file's "flags:" line (octal).
func fdWritable(fdinfo string) bool {
	b, err := os.ReadFile(fdinfo)
	if err != nil {
		return false
	}
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "flags:"); ok {
			flags, err := strconv.ParseUint(strings.TrimSpace(v), 8, 64)
			return err == nil && flags&syscall.O_ACCMODE != syscall.O_RDONLY
		}
	}
	return false
}

// OpenBy returns the pids of other processes that hold any of the files ids name open (for
// reading or writing), and whether the answer is complete: every process's descriptors could
// be read (run as root, or every process the caller's). An incomplete answer proves nothing
// about the processes it could not see.
func OpenBy(ids []Identity) (pids []int, complete bool) {
	complete = eachOpenFile(func(pid int, st *syscall.Stat_t, _ string) bool {
		for _, id := range ids {
			if uint64(st.Dev) == id.Dev && st.Ino == id.Ino {
				pids = append(pids, pid)
				return true
			}
		}
		return false
	})
	return pids, complete
}
