package lock

import (
	"os"
	"path/filepath"
	"strconv"
	"syscall"
)

// appLive scans /proc for a process of the app (isApp of its command line; app names it in
// the reason) that has the session (see [PiLive]). Processes whose directory, descriptors or
// command line cannot be read (another user's) do not count: the apps run as the user whose
// home holds their sessions.
func appLive(s AppSession, app string, isApp func([]string) bool) (bool, string) {
	ents, err := os.ReadDir("/proc")
	if err != nil {
		return false, ""
	}
	var st syscall.Stat_t
	haveFile := syscall.Stat(s.Path, &st) == nil
	resolved := ""
	if s.Cwd != "" {
		if r, err := filepath.EvalSymlinks(s.Cwd); err == nil && r != s.Cwd {
			resolved = r
		}
	}
	self := os.Getpid()
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil || pid <= 0 || pid == self {
			continue
		}
		dir := "/proc/" + e.Name()
		argv := procArgv(dir)
		if !isApp(argv) || procZombie(pid) {
			continue
		}
		cwd, _ := os.Readlink(dir + "/cwd")
		switch {
		case PiNamesSession(argv, cwd, s):
			return true, app + " process " + e.Name() + " names the session in its arguments"
		case PiWorksIn(cwd, s, resolved):
			return true, app + " process " + e.Name() + " works in the session's directory " + s.Cwd
		case haveFile && procHolds(pid, uint64(st.Dev), st.Ino):
			return true, app + " process " + e.Name() + " has the session file open"
		}
	}
	return false, ""
}

// procHolds reports whether the process pid has a descriptor open on the file with this
// device and inode (through /proc/<pid>/fd, whose entries stat as the files they are open on).
func procHolds(pid int, dev, ino uint64) bool {
	fdDir := "/proc/" + strconv.Itoa(pid) + "/fd"
	fds, err := os.ReadDir(fdDir)
	if err != nil {
		return false
	}
	for _, fd := range fds {
		var st syscall.Stat_t
		if syscall.Stat(fdDir+"/"+fd.Name(), &st) == nil && uint64(st.Dev) == dev && st.Ino == ino {
			return true
		}
	}
	return false
}
