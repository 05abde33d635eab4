// Package figures writes the reliability suites' published figures: each suite stores its
// own under its name in the JSON object in the file named by RELIABILITY_OUT, so that
// `RELIABILITY_OUT=figures.json go test ./reliability/...` collects every suite's in one file
// while the suites run at once.
package figures

import (
	"encoding/json"
	"io"
	"os"
	"path/filepath"
	"syscall"
)

// Write stores v under key suite in the JSON object in the file named by RELIABILITY_OUT
// (under an exclusive flock, keeping the other suites' figures); a directory gets
// <suite>.json instead. Without RELIABILITY_OUT it does nothing.
func Write(suite string, v any) error {
	out := os.Getenv("RELIABILITY_OUT")
	if out == "" {
		return nil
	}
	if fi, err := os.Stat(out); err == nil && fi.IsDir() {
		b, err := json.MarshalIndent(v, "", "  ")
		if err != nil {
			return err
		}
		return os.WriteFile(filepath.Join(out, suite+".json"), append(b, '\n'), 0o644)
	}
	f, err := os.OpenFile(out, os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		return err
	}
	defer f.Close()
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX); err != nil {
		return err
	}
	all := map[string]json.RawMessage{}
	if old, err := io.ReadAll(f); err == nil && len(old) > 0 {
		if json.Unmarshal(old, &all) != nil {
			all = map[string]json.RawMessage{} // not ours: start again
		}
	}
	b, err := json.Marshal(v)
	if err != nil {
		return err
	}
	all[suite] = b
	b, err = json.MarshalIndent(all, "", "  ")
	if err != nil {
		return err
	}
	if err := f.Truncate(0); err != nil {
		return err
	}
	_, err = f.WriteAt(append(b, '\n'), 0)
	return err
}
