package main

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestBigTailCutCrashAtEveryStep kills the real binary — a heal, and the daemon — at each
// step of a big file's tail cut made in place under its write lease ("leased" is the lease
// held, the cut not made; "renamed" the cut made and synced), and restarts it: the file
// holds the damaged or the healed bytes, the restart heals it, and the quarantine keeps the
// original as the cut's protocol says — the bytes it removed in an entry that starts where
// the healed file ends. No lease is left held: the restart and an app can open the file.
func TestBigTailCutCrashAtEveryStep(t *testing.T) {
	bin := crashBinary(t)
	var b bytes.Buffer
	for i := 0; b.Len() < 9<<20; i++ {
		fmt.Fprintf(&b, "{\"n\":%d,\"text\":%q}\n", i, strings.Repeat("x", 100+i%50))
	}
	healed := bytes.Clone(b.Bytes())
	damaged := append(bytes.Clone(healed), `{"n":-1,"text":"torn`...)
	sum := func(p []byte) string { s := sha256.Sum256(p); return hex.EncodeToString(s[:]) }
	for _, mode := range []string{"heal", "run"} {
		for _, step := range []string{"locked", "journaled", "quarantined", "leased", "renamed", "done"} {
			t.Run(mode+"/"+step, func(t *testing.T) {
				home := t.TempDir()
				dir := filepath.Join(home, "sessions")
				os.MkdirAll(dir, 0o755)
				target := filepath.Join(dir, "s.jsonl")
				if err := os.WriteFile(target, damaged, 0o600); err != nil {
					t.Fatal(err)
				}
				state := filepath.Join(home, "state")
				policyFile := filepath.Join(home, "policy.yaml")
				os.WriteFile(policyFile, fmt.Appendf(nil, "version: 1\nstate_dir: %s\nrules:\n  - {name: j, format: jsonl, paths: [%s], strategies: [salvage], settle: 50ms, lock: {protocol: none}}\n", state, dir), 0o644)
				crashAt(t, bin, mode, step, home, state, policyFile)
				cur, _ := os.ReadFile(target)
				if !bytes.Equal(cur, damaged) && !bytes.Equal(cur, healed) {
					t.Fatalf("killed at %s: the file holds %d bytes, neither the damaged %d nor the healed %d", step, len(cur), len(damaged), len(healed))
				}
				// An app opens the file at once: the dead process's lease went with it.
				app, err := os.OpenFile(target, os.O_WRONLY|os.O_APPEND, 0)
				if err != nil {
					t.Fatal(err)
				}
				app.Close()

				if mode == "heal" {
					if out, errOut, code := sm(t, home, "heal", "-config", policyFile, "-json"); code != 0 && code != 1 {
						t.Fatalf("restart: exit %d\n%s%s", code, out, errOut)
					}
				} else {
					d := startDaemon(t, home, "-config", policyFile)
					eventually(t, 30*time.Second, "the restarted daemon's heal", func() bool {
						b, _ := os.ReadFile(target)
						return bytes.Equal(b, healed) && len(d.events("sessionmedic.started")) == 1
					})
				}
				if cur, _ := os.ReadFile(target); !bytes.Equal(cur, healed) {
					t.Fatalf("after the restart the file holds %d bytes, want the healed %d", len(cur), len(healed))
				}
				// Some entry keeps what the cut removed, from where the healed file ends,
				// with the sums of the original and of the bytes left.
				out, _, _ := sm(t, home, "quarantine", "list", "-json", "-config", policyFile)
				kept := false
				for _, l := range strings.Split(strings.TrimSpace(out), "\n") {
					var m struct {
						ID           string `json:"id"`
						Prefix       int64  `json:"prefix"`
						PrefixSHA256 string `json:"prefix_sha256"`
						SHA256       string `json:"sha256"`
						File         string `json:"file"`
						Status       string `json:"status"`
					}
					if json.Unmarshal([]byte(l), &m) != nil || m.Status != "healed" || m.Prefix != int64(len(healed)) ||
						m.PrefixSHA256 != sum(healed) || m.SHA256 != sum(damaged) {
						continue
					}
					files, _ := filepath.Glob(filepath.Join(state, "quarantine", "*", m.ID, m.File))
					if len(files) == 1 {
						tail, _ := os.ReadFile(files[0])
						kept = kept || bytes.Equal(tail, damaged[len(healed):])
					}
				}
				if !kept {
					t.Fatalf("after the restart no healed entry keeps the cut's bytes:\n%s", out)
				}
			})
		}
	}
}
