package lock

import (
	"bytes"
	"io"
	"os"
	"path/filepath"
	"strconv"
)

// maxCmdline bounds how much of a process's command line is read.
const maxCmdline = 64 << 10

// geminiLive scans /proc for a Gemini process whose current directory is root. Processes
// whose directory cannot be read (another user's) do not count: Gemini runs as the user
// whose home holds its files.
func geminiLive(root string) bool {
	ents, err := os.ReadDir("/proc")
	if err != nil {
		return false
	}
	alt := root
	if r, err := filepath.EvalSymlinks(root); err == nil {
		alt = r
	}
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil || pid <= 0 {
			continue
		}
		dir := "/proc/" + e.Name()
		if !GeminiArgv(procArgv(dir)) {
			continue
		}
		cwd, err := os.Readlink(dir + "/cwd")
		if err == nil && (cwd == root || cwd == alt) && !procZombie(pid) {
			return true
		}
	}
	return false
}

// procArgv reads a process's arguments from /proc/<pid>/cmdline (bounded).
func procArgv(dir string) []string {
	f, err := os.Open(dir + "/cmdline")
	if err != nil {
		return nil
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, maxCmdline))
	if err != nil || len(b) == 0 {
		return nil
	}
	var out []string
	for _, a := range bytes.Split(bytes.TrimSuffix(b, []byte{0}), []byte{0}) {
		out = append(out, string(a))
	}
	return out
}
