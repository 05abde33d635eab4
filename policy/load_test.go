package policy

import (
	"bytes"
	"net"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestLoadRefusesHostileFiles: only a regular file of at most 1 MiB is read. Each case is
// made on disk (a FIFO or a device cannot be a committed fixture) and paired with its exact
// error.
func TestLoadRefusesHostileFiles(t *testing.T) {
	dir := t.TempDir()
	good := []byte("version: 1\nrules:\n  - {name: j, format: jsonl, paths: [/srv/s]}\n")
	fifo := filepath.Join(dir, "policy.fifo")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	big := filepath.Join(dir, "big.yaml")
	// Valid YAML padded with a comment: only the size is wrong.
	pad := bytes.Repeat([]byte("#"), MaxFileBytes+1-len(good)-1)
	os.WriteFile(big, append(append(good, pad...), '\n'), 0o644)
	atLimit := filepath.Join(dir, "at-limit.yaml")
	os.WriteFile(atLimit, append(append(good, pad[1:]...), '\n'), 0o644)
	zeroLink := filepath.Join(dir, "zero.yaml")
	os.Symlink("/dev/zero", zeroLink)
	sock := filepath.Join(dir, "s.sock")
	l, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()

	for _, tc := range []struct{ path, want string }{
		{fifo, "read policy: " + fifo + ": not a regular file (a named pipe)"},
		{"/dev/zero", "read policy: /dev/zero: not a regular file (a character device)"},
		{zeroLink, "read policy: " + zeroLink + ": not a regular file (a character device)"},
		{dir, "read policy: " + dir + ": not a regular file (a directory)"},
		{sock, "read policy: " + sock + ": not a regular file (a socket)"},
		{big, "read policy: " + big + ": larger than 1 MiB"},
	} {
		start := time.Now()
		_, err := LoadEnv(tc.path, fakeEnv(nil))
		if err == nil || err.Error() != tc.want {
			t.Errorf("LoadEnv(%s):\n got %v\nwant %s", tc.path, err, tc.want)
		}
		if strings.Contains(err.Error(), "\n") {
			t.Errorf("LoadEnv(%s): the error is not one line: %q", tc.path, err)
		}
		if d := time.Since(start); d > 5*time.Second {
			t.Errorf("LoadEnv(%s) took %v", tc.path, d)
		}
	}
	if _, err := LoadEnv(atLimit, fakeEnv(nil)); err != nil {
		t.Errorf("a policy of exactly 1 MiB: %v", err)
	}
}
