package heal

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"

	"github.com/sessionmedic/sessionmedic/policy"
)

// faultSwitch is the fault function a test builds its engine with (Options.Faults) and sets
// once the engine, and so where its files are, is known.
type faultSwitch struct {
	f atomic.Pointer[func(op, path string) error]
}

func (s *faultSwitch) fault(op, path string) error {
	if f := s.f.Load(); f != nil {
		return (*f)(op, path)
	}
	return nil
}

// set arms f (nil: no fault).
func (s *faultSwitch) set(f func(op, path string) error) {
	if f == nil {
		s.f.Store(nil)
		return
	}
	s.f.Store(&f)
}

// TestIOFaults fails each file operation of a heal in turn (including ENOSPC on write): the
// session file holds its old bytes (or, after the rename, the healed ones), the failure is
// reported, nothing stray is left, and a heal after the fault clears succeeds.
func TestIOFaults(t *testing.T) {
	healed := []byte(`{"session_id": "s", "messages": []}`)
	ops := []string{"create", "chown", "chmod", "write", "fsync", "close", "rename", "fsync-dir", "mkdir"}
	for _, op := range ops {
		for _, where := range []string{"session", "state"} {
			t.Run(op+"/"+where, func(t *testing.T) {
				var faults faultSwitch
				e, p := praisonEngineWith(t, Options{Faults: faults.fault})
				os.WriteFile(p, []byte(garbage), 0o600)
				errno := syscall.EIO
				if op == "write" {
					errno = syscall.ENOSPC
				}
				fired := 0
				faults.set(func(o, path string) error {
					inState := strings.HasPrefix(path, e.StateDir)
					if o == op && inState == (where == "state") {
						fired++
						return errno
					}
					return nil
				})
				if op == "chown" {
					// chown runs only when the owner differs from ours: make it differ.
					os.Chown(p, 65534, 65534)
				}
				r := e.Heal(context.Background(), Target{Path: p, Rule: &e.Policy.Rules[0]}, false)
				faults.set(nil)
				now, _ := os.ReadFile(p)
				if fired == 0 {
					if r.Action != ActionHealed {
						t.Fatalf("no fault fired but not healed: %+v", r)
					}
					return
				}
				switch {
				case bytes.Equal(now, []byte(garbage)):
					if r.Action == ActionHealed {
						t.Fatalf("reported healed but the file is unchanged")
					}
					if r.Reason == "" {
						t.Fatalf("a failed heal must say why: %+v", r)
					}
				case bytes.Equal(now, healed):
					// The fault hit after the rename (directory fsync): the heal took effect.
				default:
					t.Fatalf("after a %s fault the file holds neither old nor healed bytes: %q", op, now)
				}
				ents, _ := os.ReadDir(filepath.Dir(p))
				for _, en := range ents {
					if policy.IsOwnTemp(en.Name()) {
						t.Fatalf("stray temp %s", en.Name())
					}
				}
				if js, _ := os.ReadDir(e.Journal.Root); len(js) != 0 {
					t.Fatalf("journal entry left behind")
				}
				r = e.Heal(context.Background(), Target{Path: p, Rule: &e.Policy.Rules[0]}, false)
				if b, _ := os.ReadFile(p); !bytes.Equal(b, healed) {
					t.Fatalf("retry after the fault cleared: %+v", r)
				}
			})
		}
	}
}
