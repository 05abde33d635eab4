package fsio

import (
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"testing"
	"time"
)

// OpenWriters finds a real process holding the file open for writing (through /proc).
func TestOpenWritersSeesARealWriter(t *testing.T) {
	p := filepath.Join(t.TempDir(), "f")
	os.WriteFile(p, nil, 0o644)
	fi, _ := os.Stat(p)
	id := IdentityOf(fi)
	cmd := exec.Command("sh", "-c", "exec 3>>\"$1\"; sleep 30", "sh", p)
	if err := cmd.Start(); err != nil {
		t.Skip("no sh:", err)
	}
	defer cmd.Process.Kill()
	deadline := time.Now().Add(5 * time.Second)
	for {
		pids := OpenWriters(id.Dev, id.Ino)
		if slices.Contains(pids, cmd.Process.Pid) {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("writer not found: %v", pids)
		}
		time.Sleep(20 * time.Millisecond)
	}
}
