package heal

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/sessionmedic/sessionmedic/heal/jsonv"
	"github.com/sessionmedic/sessionmedic/policy"
)

func TestDropInvalidEntries(t *testing.T) {
	root := filepath.Join(t.TempDir(), "state")
	copyTree(t, filepath.Join(samples, "openclaw/10-bad-entries/state"), root)
	e := testEngine(t, "openclaw", root)
	r := &e.Policy.Rules[0]
	r.Strategies = []policy.Strategy{"salvage", "backup", "last-good", "drop-invalid-entries"}
	r.Limits.MaxLoss = 1
	p := filepath.Join(root, "agents/main/sessions/sessions.json")
	rep := e.Heal(context.Background(), Target{Path: p, Rule: r}, false)
	if rep.Action != ActionHealed || rep.Strategy != "drop-invalid-entries" || rep.LostRecords != 3 {
		t.Fatalf("%+v", rep)
	}
	want := "{\n  \"agent:main:main\": { \"sessionId\": \"0f9c1c7e-1111-4222-8333-444455556666\", \"updatedAt\": 1795247932466 }\n}\n"
	if got := read(t, p); string(got) != want {
		t.Fatalf("got %q", got)
	}
	// Without the opt-in (the preset's default), the same store is reported, not changed.
	copyTree(t, filepath.Join(samples, "openclaw/10-bad-entries/state"), root)
	e2 := testEngine(t, "openclaw", root)
	if rep := e2.Heal(context.Background(), Target{Path: p, Rule: &e2.Policy.Rules[0]}, false); rep.Action != ActionRefused {
		t.Fatalf("default policy: %+v", rep)
	}
}

func TestRestoreFieldsFromLastGood(t *testing.T) {
	root := filepath.Join(t.TempDir(), "case")
	copyTree(t, filepath.Join(samples, "praisonai/healthy"), root)
	e := testEngine(t, "praisonai", root)
	r := &e.Policy.Rules[0]
	r.Strategies = []policy.Strategy{"salvage", "last-good", "restore-fields", "reconcile"} // restore-fields first: it includes reconcile
	p := filepath.Join(root, "sessions/parent-chat.json")
	e.Heal(context.Background(), Target{Path: p, Rule: r}, false) // healthy: last-good kept
	wiped := read(t, filepath.Join(samples, "praisonai/extended_fields_wiped/sessions/parent-chat.json"))
	os.WriteFile(p, wiped, 0o600)
	rep := e.Heal(context.Background(), Target{Path: p, Rule: r}, false)
	if rep.Action != ActionHealed || rep.Strategy != "restore-fields" {
		t.Fatalf("%+v", rep)
	}
	got := read(t, p)
	v, err := jsonv.Parse(got, jsonv.Dialect{NonFinite: true})
	if err != nil {
		t.Fatal(err)
	}
	healthy, _ := jsonv.Parse(read(t, filepath.Join(samples, "praisonai/healthy/sessions/parent-chat.json")), jsonv.Dialect{NonFinite: true})
	for _, k := range []string{"parent_id", "forked_from_message_id", "snapshots", "is_shared", "title", "children_ids"} {
		if v.Get(k) == nil {
			t.Errorf("%s not restored", k)
		}
	}
	if strOf(v.Get("title")) != strOf(healthy.Get("title")) || len(v.Get("snapshots").Items) != len(healthy.Get("snapshots").Items) {
		t.Error("restored fields differ from last-good")
	}
	if strOf(v.Get("metadata").Get("note")) != "touched" || strOf(v.Get("updated_at")) == strOf(healthy.Get("updated_at")) {
		t.Error("the newer metadata.note and updated_at must be kept")
	}
	// The wiped file's own bytes are all still there, in order: only keys were added.
	w, _ := jsonv.Parse(wiped, jsonv.Dialect{NonFinite: true})
	if !bytes.HasPrefix(got, wiped[:w.Keys[len(w.Keys)-1].Val.End]) {
		t.Error("restore-fields changed bytes of the file it was given")
	}
}

func TestSkippedWithAReason(t *testing.T) {
	root := filepath.Join(t.TempDir(), "ws")
	copyTree(t, filepath.Join(samples, "openviking/healthy/workspace"), root)
	e := testEngine(t, "openviking", root)
	msgs := filepath.Join(root, "viking/default/user/default/sessions/demo-live/messages.jsonl")
	os.WriteFile(msgs, []byte("OVE1\x00\x01binary envelope"), 0o644)
	if r := e.Check(Target{Path: msgs, Rule: &e.Policy.Rules[0]}); r.Verdict != Skipped || r.Detail != "encrypted (OVE1 envelope)" {
		t.Fatalf("OVE1: %+v", r)
	}
	lockf := filepath.Join(root, "viking/default/user/default/sessions/demo-live/.path.ovlock")
	os.WriteFile(lockf, []byte("x:1:T"), 0o644)
	targets, errs := e.Targets([]string{lockf}, nil)
	if len(errs) != 0 || len(targets) != 1 {
		t.Fatalf("%v %v", targets, errs)
	}
	if r := e.Check(targets[0]); r.Verdict != Skipped || r.Detail != "a lock file, not session state" {
		t.Fatalf("lock file: %+v", r)
	}
}

func strOf(v *jsonv.Value) string {
	if v != nil && v.Type == jsonv.String {
		return v.Str
	}
	return ""
}
