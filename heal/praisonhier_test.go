package heal

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"testing"
)

// A hierarchical PraisonAI session (a title, snapshots or a parent) whose children_ids is
// gone (its name's bytes changed) while a child still names it as its parent is damage
// (dangling-reference), never a crash: checked, it is said; healed by reconcile, the list
// is put back with the child in it, and the session is healthy after.
func TestPraisonHierarchyWithoutChildrenList(t *testing.T) {
	src := "testdata/samples/praisonai/healthy/sessions"
	e, root := bigEngine(t, 0)
	for _, name := range []string{"parent-chat.json", "c86cb912-1e05-4283-90df-f0a7cc101d65.json"} {
		b, err := os.ReadFile(filepath.Join(src, name))
		if err != nil {
			t.Fatal(err)
		}
		if name == "parent-chat.json" {
			if !bytes.Contains(b, []byte(`"children_ids"`)) || !bytes.Contains(b, []byte(`"title"`)) {
				t.Fatal("the sample is not a hierarchical parent")
			}
			b = bytes.Replace(b, []byte(`"children_ids"`), []byte(`"children_idz"`), 1)
		}
		if err := os.WriteFile(filepath.Join(root, name), b, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	tg := Target{Path: filepath.Join(root, "parent-chat.json"), Rule: appRule(t, "praisonai", root)}
	r := e.Check(tg)
	if r.Verdict != Damaged || r.Kind != "dangling-reference" {
		t.Fatalf("checked: %+v", r)
	}
	if r := e.Heal(context.Background(), tg, false); r.Action != ActionHealed || r.Strategy != "reconcile" {
		t.Fatalf("healed: %+v", r)
	}
	b, _ := os.ReadFile(tg.Path)
	var doc struct {
		Children []string `json:"children_ids"`
	}
	if err := json.Unmarshal(b, &doc); err != nil || !slices.Contains(doc.Children, "c86cb912-1e05-4283-90df-f0a7cc101d65") {
		t.Fatalf("children_ids after the heal: %v (%v)", doc.Children, err)
	}
	if r := e.Check(tg); r.Verdict != Healthy {
		t.Fatalf("after the heal: %+v", r)
	}
}
