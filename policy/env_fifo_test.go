package policy

import (
	"os"
	"path/filepath"
	"syscall"
	"testing"
)

// OpenViking's default location is read from its config; a FIFO there is refused at once,
// never read (reading it would block until a writer came).
func TestSystemEnvRefusesAFIFOConfig(t *testing.T) {
	home := t.TempDir()
	t.Setenv("HOME", home)
	t.Setenv("OPENVIKING_CONFIG_FILE", "")
	os.MkdirAll(filepath.Join(home, ".openviking"), 0o755)
	if err := syscall.Mkfifo(filepath.Join(home, ".openviking", "ov.conf"), 0o644); err != nil {
		t.Skip("no FIFO here:", err)
	}
	r, ok := PresetRule("openviking", SystemEnv())
	if !ok || len(r.Paths) != 0 {
		t.Fatalf("openviking paths from a FIFO config: %v", r.Paths)
	}
}
