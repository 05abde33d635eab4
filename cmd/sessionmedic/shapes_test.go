package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// shapeTree is one rule of the policy these tests write: a sample's sessions directory
// copied into a layout, and the rule's path pointing at it in some shape.
type shapeTree struct {
	name, preset string
	src          string      // sample directory copied to place
	place        string      // relative to the test's tree
	links        [][2]string // {link, target} relative to the tree
	root         string      // the rule's path, relative to the tree
	below        string      // the placed directory as seen below root ("" = root itself)
	damaged      string      // the damaged file, relative to place
	strategy     string      // how heal repairs it
	want         string      // sample file the healed file must equal
	files        int         // files check must report under the root
}

var shapeTrees = []shapeTree{
	{name: "copaw-home-link", preset: "copaw", src: "copaw/corrupt_extra_data_race/sessions",
		place: "data/.copaw/workspaces/default/sessions", links: [][2]string{{"srv/app", "data/.copaw"}}, root: "srv/app", below: "workspaces/default/sessions",
		damaged: "console/default_console--default.json", strategy: "salvage",
		want: "copaw/healthy/sessions/console/default_console--default.json", files: 3},
	{name: "copaw-legacy-dir", preset: "copaw", src: "copaw/corrupt_extra_data_race/sessions_legacy_layout",
		place: "srv/sessions_legacy_layout", root: "srv/sessions_legacy_layout",
		damaged: "default_console--default.json", strategy: "salvage",
		want: "copaw/healthy/sessions/console/default_console--default.json", files: 1},
	{name: "praisonai-sessions-link", preset: "praisonai", src: "praisonai/corrupt_trailing_garbage/sessions",
		place: "data/.praisonai/sessions", links: [][2]string{{"srv/chats", "data/.praisonai/sessions"}}, root: "srv/chats",
		damaged: "parent-chat.json", strategy: "salvage", want: "praisonai/healthy/sessions/parent-chat.json", files: 3},
	{name: "openclaw-sessions-link", preset: "openclaw", src: "openclaw/05-missing-newest-bak-corrupt/state/agents/main/sessions",
		place: "data/.openclaw/agents/main/sessions", links: [][2]string{{"srv/oc", "data/.openclaw/agents/main/sessions"}}, root: "srv/oc",
		damaged: "sessions.json", strategy: "backup",
		want: "openclaw/05-missing-newest-bak-corrupt/state/agents/main/sessions/sessions.json.bak.1795247923574", files: 5},
	{name: "claude-code-config-link", preset: "claude-code", src: "claude-code/glued_two_complete/home/.claude",
		place: "data/.claude", links: [][2]string{{"srv/cc", "data/.claude"}}, root: "srv/cc",
		damaged: "projects/-tmp-demo-proj/7c2e1b4a-9d3f-4e8a-b6c1-2f5a8d9e0b13.jsonl", strategy: "salvage",
		want: "claude-code/healthy/home/.claude/projects/-tmp-demo-proj/7c2e1b4a-9d3f-4e8a-b6c1-2f5a8d9e0b13.jsonl", files: 1},
	{name: "codex-home-link", preset: "codex", src: "codex/last_record_missing_ordinal/home/.codex",
		place: "data/.codex", links: [][2]string{{"srv/codex", "data/.codex"}}, root: "srv/codex",
		damaged: "sessions/2026/11/22/rollout-2026-11-22T21-46-17-01a20539-677f-7710-87e4-54a740761238.jsonl", strategy: "add-ordinals",
		want: "codex/healthy/home/.codex/sessions/2026/11/22/rollout-2026-11-22T21-46-17-01a20539-677f-7710-87e4-54a740761238.jsonl", files: 1},
}

// buildShapeTrees lays the trees out and returns the policy file naming them.
func buildShapeTrees(t *testing.T, home string, trees []shapeTree, extra string) (tree, policyFile string) {
	t.Helper()
	tree = t.TempDir()
	var rules strings.Builder
	for _, s := range trees {
		copyDir(t, filepath.Join(samples, s.src), filepath.Join(tree, s.place))
		for _, l := range s.links {
			link := filepath.Join(tree, l[0])
			os.MkdirAll(filepath.Dir(link), 0o755)
			if err := os.Symlink(filepath.Join(tree, l[1]), link); err != nil {
				t.Fatal(err)
			}
		}
		fmt.Fprintf(&rules, "  - {name: %s, preset: %s, paths: [%s]%s}\n", s.name, s.preset, filepath.Join(tree, s.root), extra)
	}
	policyFile = filepath.Join(home, "policy.yaml")
	body := fmt.Sprintf("version: 1\nstate_dir: %s\nrules:\n%s", filepath.Join(home, "state"), rules.String())
	if err := os.WriteFile(policyFile, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	return tree, policyFile
}

// reportsByPath parses `-json` output keyed by the full path.
func reportsByPath(t *testing.T, out string) map[string]jsonReport {
	t.Helper()
	m := map[string]jsonReport{}
	sc := bufio.NewScanner(strings.NewReader(out))
	for sc.Scan() {
		var r jsonReport
		if err := json.Unmarshal(sc.Bytes(), &r); err != nil {
			t.Fatalf("bad -json line %q: %v", sc.Text(), err)
		}
		m[r.Path] = r
	}
	return m
}

// TestCheckAndHealThroughEveryShape runs the real binary with a policy whose rules point
// through a symlink (to an app home, to a sessions directory) and at a sessions directory
// under another name: check reports every session file there under the rule's path, heal
// repairs the damaged one to the expected bytes, and a second check finds nothing.
func TestCheckAndHealThroughEveryShape(t *testing.T) {
	home := t.TempDir()
	tree, policyFile := buildShapeTrees(t, home, shapeTrees, "")

	out, errOut, code := sm(t, home, "check", "-config", policyFile, "-json")
	if code != 1 {
		t.Fatalf("check: exit %d, want 1\n%s\n%s", code, out, errOut)
	}
	reports := reportsByPath(t, out)
	for _, s := range shapeTrees {
		root := filepath.Join(tree, s.root)
		n := 0
		for p, r := range reports {
			if r.Rule == s.name {
				n++
				if !strings.HasPrefix(p, root+"/") {
					t.Errorf("%s: %s is not reported under the rule's path %s", s.name, p, root)
				}
			}
		}
		if n != s.files {
			t.Errorf("%s: check reported %d files, want %d", s.name, n, s.files)
		}
		if r := reports[filepath.Join(root, s.below, s.damaged)]; r.Verdict != "damaged" {
			t.Errorf("%s: %s: verdict %q, want damaged", s.name, s.damaged, r.Verdict)
		}
	}

	out, errOut, code = sm(t, home, "heal", "-config", policyFile, "-json")
	if code != 0 {
		t.Fatalf("heal: exit %d\n%s\n%s", code, out, errOut)
	}
	reports = reportsByPath(t, out)
	for _, s := range shapeTrees {
		r := reports[filepath.Join(tree, s.root, s.below, s.damaged)]
		if r.Action != "healed" || r.Strategy != s.strategy {
			t.Errorf("%s: heal %s with %q (%s), want healed with %s", s.name, r.Action, r.Strategy, r.Detail, s.strategy)
		}
		// The bytes landed in the real directory, through the symlink, not beside it.
		got, err := os.ReadFile(filepath.Join(tree, s.place, s.damaged))
		if err != nil {
			t.Fatalf("%s: %v", s.name, err)
		}
		if !bytes.Equal(got, read(t, filepath.Join(samples, s.want))) {
			t.Errorf("%s: healed file differs from %s", s.name, s.want)
		}
		for _, l := range s.links {
			if fi, err := os.Lstat(filepath.Join(tree, l[0])); err != nil || fi.Mode()&os.ModeSymlink == 0 {
				t.Errorf("%s: the root symlink %s was replaced", s.name, l[0])
			}
		}
	}

	out, errOut, code = sm(t, home, "check", "-config", policyFile)
	if code != 0 || !strings.Contains(out, "0 damaged") {
		t.Fatalf("check after heal: exit %d\n%s\n%s", code, out, errOut)
	}

	// A symlinked directory named on the command line is walked as well.
	out, _, code = sm(t, home, "check", "-preset", "copaw", "-json", filepath.Join(tree, "srv/app"))
	if r := reportsByPath(t, out); code != 0 || len(r) != 3 {
		t.Errorf("check -preset copaw through the symlink: exit %d, %d files\n%s", code, len(r), out)
	}
}

// TestDaemonInitialScanHealsBelowASymlinkedRoot: the daemon's first scan finds and heals
// damaged files already there below a root that is a symlink, and one that is a sessions
// directory under another name.
func TestDaemonInitialScanHealsBelowASymlinkedRoot(t *testing.T) {
	home := t.TempDir()
	trees := []shapeTree{shapeTrees[0], shapeTrees[1], shapeTrees[2]}
	tree, policyFile := buildShapeTrees(t, home, trees, ", settle: 100ms, max_wait: 1s")
	d := startDaemon(t, home, "-config", policyFile)
	eventually(t, 20*time.Second, "the initial scan's heals", func() bool { return len(d.events("file.healed")) >= len(trees) })
	healed := map[string]map[string]any{}
	for _, ev := range d.events("file.healed") {
		p, _ := ev["path"].(string)
		healed[p] = ev
	}
	for _, s := range trees {
		p := filepath.Join(tree, s.root, s.below, s.damaged)
		ev := healed[p]
		if ev == nil || ev["strategy"] != s.strategy {
			t.Errorf("%s: no file.healed for %s with %s (got %v)", s.name, p, s.strategy, ev)
			continue
		}
		if got := read(t, filepath.Join(tree, s.place, s.damaged)); !bytes.Equal(got, read(t, filepath.Join(samples, s.want))) {
			t.Errorf("%s: healed file differs from %s", s.name, s.want)
		}
	}
	for _, ev := range d.events("scan.finished") {
		if ev["rule"] == trees[0].name {
			if n, _ := ev["files"].(float64); int(n) != trees[0].files {
				t.Errorf("scan.finished for %s: %v files, want %d", trees[0].name, ev["files"], trees[0].files)
			}
		}
	}
}
