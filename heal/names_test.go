package heal

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/sessionmedic/sessionmedic/heal/format"
	"github.com/sessionmedic/sessionmedic/policy"
)

// Every strategy the policy accepts is implemented here: by a planner, or (clean-temp) by
// the temp-file path, or (a SQLite store's) by the store's own path (sqlite.go).
func TestEveryStrategyThePolicyAcceptsIsImplemented(t *testing.T) {
	for _, s := range policy.Strategies {
		if _, ok := planners[s]; !ok && s != policy.CleanTemp && !s.SQLite() {
			t.Errorf("strategy %q is accepted by the policy but has no planner", s)
		}
	}
	for s := range planners {
		found := false
		for _, p := range policy.Strategies {
			found = found || p == s
		}
		if !found {
			t.Errorf("planner %q is not a strategy the policy accepts", s)
		}
	}
}

// Every lock protocol the policy accepts is taken by takeLock (none of them is "unknown").
func TestEveryLockProtocolThePolicyAcceptsIsImplemented(t *testing.T) {
	dir := t.TempDir()
	e := New(&policy.Config{Version: 1, StateDir: filepath.Join(dir, "state")}, Options{})
	path := filepath.Join(dir, "s.json")
	for _, p := range policy.LockProtocols {
		path := filepath.Join(t.TempDir(), "s.json") // each protocol its own lock files
		r := &policy.Rule{Name: "r", Lock: policy.Lock{Protocol: p, Path: "{file}.lock"}}
		h, err := e.takeLock(context.Background(), r, path, format.JSON, false)
		if err != nil {
			t.Errorf("lock protocol %q: %v", p, err)
			continue
		}
		h.Release()
	}
	r := &policy.Rule{Name: "r", Lock: policy.Lock{Protocol: "no-such-protocol"}}
	if _, err := e.takeLock(context.Background(), r, path, format.JSON, false); err == nil {
		t.Error("an unknown lock protocol must be an error")
	}
}
