package heal

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
)

// A rule's path may name an app's home, a workspace, the directory above the sessions
// directory, the sessions directory itself (under its own name or another), or a symlink to
// any of them, in every era's layout (DESIGN §4). TestPathShapes lays each sample case out in
// every such shape its format doc lists and asserts that check and heal see the same files,
// with the same verdicts and the same healed bytes, as with the case's canonical shape.

// shape is one way to lay out an app's sessions directory and point a rule at it.
type shape struct {
	name  string
	place string      // where the sessions directory's content goes, relative to the tree
	root  string      // the rule's path, relative to the tree
	links [][2]string // symlinks made after the copy: {link, target}, both relative to the tree
	// noDecoys: the layout itself makes the decoys' places session places (OpenViking's
	// legacy session/<user>/<sid>/ reads any ../<x>/<y>/messages.jsonl as a session).
	noDecoys bool
}

// shapeContent is one sample case's sessions directory.
type shapeContent struct {
	app, src, sub string            // samples/<app>/<src>/<sub> is a sessions directory's content
	layout        string            // which of the app's layouts that content is, for the figures
	shapes        []shape           // shapes[0] is canonical
	extra         map[string]string // files made relative to the placed directory (may climb with ..)
}

// shapeResult is what check and heal made of one file, keyed by its path relative to the
// sessions directory's real location.
type shapeResult struct {
	kind, action, strategy string
	healed                 string // the file's bytes after the heal; "-" when it is gone
}

var nsDir = "1a90ee6c483ef484075bb4aec4e29b33"

// decoys are files next to or inside an app's sessions directory that no shape may cover:
// indexes, logs, configs, archives and spills the format docs say are not session state.
// Each is damaged JSON, so a decoy judged by mistake also shows up as damage.
var decoys = map[string][]string{
	"copaw":      {"../chats.json", "../config.json", "../agent.json", "../dialog/2026-11-21.jsonl", ".weixin-legacy/weixin--x.json"},
	"nanobot":    {".migration-conflicts/a.jsonl.destination.0123456789ab.01234567.jsonl"},
	"praisonai":  {"../config.json", "../state/session_spill/parent-chat.1795246945167.42.0badcafe.json", "parent-chat.json.corrupt-1795246999999"},
	"openviking": {"../memories/m1/messages.jsonl", "../../../../../notes.jsonl", "demo-x/history/archive_001/messages.jsonl"},
	"claude-code": {"../.claude.json", "backups/.claude.json.backup.1795383639980", "projects/-tmp-demo-proj/7c2e1b4a-9d3f-4e8a-b6c1-2f5a8d9e0b13/archived.json",
		"projects/-tmp-demo-proj/7c2e1b4a-9d3f-4e8a-b6c1-2f5a8d9e0b13/remote-agents/r.jsonl", "sessions/99999999.json"},
	"openclaw": {"../../../workspace/notes.jsonl", "../../../openclaw.json", "x.trajectory.jsonl", "../agent/models.json"},
	"gemini-cli": {"tmp/proj/chats/session-2026-11-22T21-40-7759d9fe.jsonl.unreadable-1795247922317", "tmp/proj/chats/session-2026-11-22T21-40-7759d9fe.jsonl.tmp-4242",
		"tmp/proj/logs/session-7759d9fe-6f50-4824-9ae2-297b0ba46ecd.jsonl", "settings.json"},
}

func shapeMatrix() []shapeContent {
	// Each app's shapes. The symlinked ones point at a real tree under data/ from a name that
	// says nothing (srv/app, srv/chats), so only following the link can tell what it is.
	copaw := func(renamed string) []shape {
		ws := "data/.copaw/workspaces/default"
		return []shape{
			{name: "home, single-agent era", place: ".copaw/sessions", root: ".copaw"},
			{name: "sessions dir, single-agent era", place: ".copaw/sessions", root: ".copaw/sessions"},
			{name: "home, multi-agent era", place: ".copaw/workspaces/default/sessions", root: ".copaw"},
			{name: "workspaces dir", place: ".copaw/workspaces/default/sessions", root: ".copaw/workspaces"},
			{name: "workspace", place: ".copaw/workspaces/default/sessions", root: ".copaw/workspaces/default"},
			{name: "sessions dir", place: ".copaw/workspaces/default/sessions", root: ".copaw/workspaces/default/sessions"},
			{name: "sessions dir named " + renamed, place: "srv/" + renamed, root: "srv/" + renamed},
			{name: "symlink to the home", place: ws + "/sessions", root: "srv/app", links: [][2]string{{"srv/app", "data/.copaw"}}},
			{name: "symlink to the workspace", place: ws + "/sessions", root: "srv/agent", links: [][2]string{{"srv/agent", ws}}},
			{name: "symlink to the sessions dir", place: ws + "/sessions", root: "srv/chats", links: [][2]string{{"srv/chats", ws + "/sessions"}}},
			{name: "symlink on the way", place: ws + "/sessions", root: "srv/link/default", links: [][2]string{{"srv/link", "data/.copaw/workspaces"}}},
			{name: "symlink to a symlink to the home", place: ws + "/sessions", root: "srv/app2", links: [][2]string{{"srv/app1", "data/.copaw"}, {"srv/app2", "srv/app1"}}},
		}
	}
	nbFlat := []shape{
		{name: "home, era A-C", place: ".nanobot/workspace/sessions", root: ".nanobot"},
		{name: "workspace, era A-C", place: ".nanobot/workspace/sessions", root: ".nanobot/workspace"},
		{name: "sessions dir, era A-C", place: ".nanobot/workspace/sessions", root: ".nanobot/workspace/sessions"},
		{name: "home, era D", place: ".nanobot/sessions/" + nsDir, root: ".nanobot"},
		{name: "sessions root, era D", place: ".nanobot/sessions/" + nsDir, root: ".nanobot/sessions"},
		{name: "namespace, era D", place: ".nanobot/sessions/" + nsDir, root: ".nanobot/sessions/" + nsDir},
		{name: "home, pre-A global dir", place: ".nanobot/sessions", root: ".nanobot"},
		{name: "sessions dir named bot-sessions", place: "srv/bot-sessions", root: "srv/bot-sessions"},
		{name: "symlink to the home", place: "data/.nanobot/sessions/" + nsDir, root: "srv/app", links: [][2]string{{"srv/app", "data/.nanobot"}}},
		{name: "symlink to the namespace", place: "data/.nanobot/sessions/" + nsDir, root: "srv/chats", links: [][2]string{{"srv/chats", "data/.nanobot/sessions/" + nsDir}}},
		{name: "symlink on the way", place: "data/.nanobot/workspace/sessions", root: "srv/link/sessions", links: [][2]string{{"srv/link", "data/.nanobot/workspace"}}},
	}
	nbRoot := []shape{
		{name: "home, era D", place: ".nanobot/sessions", root: ".nanobot"},
		{name: "sessions root, era D", place: ".nanobot/sessions", root: ".nanobot/sessions"},
		{name: "sessions root named bot-sessions", place: "srv/bot-sessions", root: "srv/bot-sessions"},
		{name: "symlink to the home", place: "data/.nanobot/sessions", root: "srv/app", links: [][2]string{{"srv/app", "data/.nanobot"}}},
		{name: "symlink to the sessions root", place: "data/.nanobot/sessions", root: "srv/chats", links: [][2]string{{"srv/chats", "data/.nanobot/sessions"}}},
	}
	praison := []shape{
		{name: "data dir", place: ".praisonai/sessions", root: ".praisonai"},
		{name: "sessions dir", place: ".praisonai/sessions", root: ".praisonai/sessions"},
		{name: "legacy data dir ~/.praison", place: ".praison/sessions", root: ".praison"},
		{name: "XDG data home", place: "xdg/praisonai/sessions", root: "xdg"},
		{name: "sessions dir named bot-sessions", place: "srv/bot-sessions", root: "srv/bot-sessions"},
		{name: "symlink to the data dir", place: "data/.praisonai/sessions", root: "srv/app", links: [][2]string{{"srv/app", "data/.praisonai"}}},
		{name: "symlink to the sessions dir", place: "data/.praisonai/sessions", root: "srv/chats", links: [][2]string{{"srv/chats", "data/.praisonai/sessions"}}},
		{name: "symlink on the way", place: "data/.praisonai/sessions", root: "srv/link/sessions", links: [][2]string{{"srv/link", "data/.praisonai"}}},
	}
	ovUser := "data/viking/default/user/default"
	viking := []shape{
		{name: "workspace", place: ovUser + "/sessions", root: "data"},
		{name: "viking dir", place: ovUser + "/sessions", root: "data/viking"},
		{name: "account dir", place: ovUser + "/sessions", root: "data/viking/default"},
		{name: "user dir", place: ovUser + "/sessions", root: ovUser},
		{name: "sessions dir", place: ovUser + "/sessions", root: ovUser + "/sessions"},
		{name: "workspace, legacy account layout", place: "data/viking/default/session", root: "data"},
		{name: "legacy session dir", place: "data/viking/default/session", root: "data/viking/default/session"},
		{name: "workspace, legacy user layout", place: "data/viking/default/session/default", root: "data", noDecoys: true},
		{name: "sessions dir named ov-sessions", place: "srv/ov-sessions", root: "srv/ov-sessions"},
		{name: "symlink to the workspace", place: "real/" + ovUser + "/sessions", root: "srv/app", links: [][2]string{{"srv/app", "real/data"}}},
		{name: "symlink to the sessions dir", place: "real/" + ovUser + "/sessions", root: "srv/chats", links: [][2]string{{"srv/chats", "real/" + ovUser + "/sessions"}}},
		{name: "symlink on the way", place: "real/" + ovUser + "/sessions", root: "srv/link/default/user", links: [][2]string{{"srv/link", "real/data/viking"}}},
	}
	oc := ".openclaw/agents/main/sessions"
	claw := []shape{
		{name: "state dir", place: oc, root: ".openclaw"},
		{name: "agents dir", place: oc, root: ".openclaw/agents"},
		{name: "agent dir", place: oc, root: ".openclaw/agents/main"},
		{name: "sessions dir", place: oc, root: oc},
		{name: "legacy state dir ~/.clawdbot", place: ".clawdbot/agents/main/sessions", root: ".clawdbot"},
		{name: "symlink to the state dir", place: "data/" + oc, root: "srv/app", links: [][2]string{{"srv/app", "data/.openclaw"}}},
		{name: "symlink to the agent dir", place: "data/" + oc, root: "srv/agent", links: [][2]string{{"srv/agent", "data/.openclaw/agents/main"}}},
		{name: "symlink to the sessions dir", place: "data/" + oc, root: "srv/chats", links: [][2]string{{"srv/chats", "data/" + oc}}},
		{name: "symlink on the way", place: "data/" + oc, root: "srv/link/main", links: [][2]string{{"srv/link", "data/.openclaw/agents"}}},
	}

	cc := ".claude"
	claude := []shape{
		{name: "config dir", place: cc, root: cc},
		{name: "projects dir", place: cc, root: cc + "/projects"},
		{name: "project dir", place: cc, root: cc + "/projects/-tmp-demo-proj"},
		{name: "config dir named claude-config", place: "srv/claude-config", root: "srv/claude-config"},
		{name: "symlink to the config dir", place: "data/" + cc, root: "srv/app", links: [][2]string{{"srv/app", "data/" + cc}}},
		{name: "symlink to the project dir", place: "data/" + cc, root: "srv/chats", links: [][2]string{{"srv/chats", "data/" + cc + "/projects/-tmp-demo-proj"}}},
		{name: "symlink on the way", place: "data/" + cc, root: "srv/link/-tmp-demo-proj", links: [][2]string{{"srv/link", "data/" + cc + "/projects"}}},
	}

	day := "sessions/2026/11/22"
	codex := []shape{
		{name: "home", place: ".codex", root: ".codex"},
		{name: "sessions dir", place: ".codex", root: ".codex/sessions"},
		{name: "day dir", place: ".codex", root: ".codex/" + day},
		{name: "CODEX_HOME named codex-home", place: "srv/codex-home", root: "srv/codex-home"},
		{name: "symlink to the home", place: "data/.codex", root: "srv/app", links: [][2]string{{"srv/app", "data/.codex"}}},
		{name: "symlink to the sessions dir", place: "data/.codex", root: "srv/chats", links: [][2]string{{"srv/chats", "data/.codex/sessions"}}},
		{name: "symlink named sessions", place: "data/.codex", root: "srv/sessions", links: [][2]string{{"srv/sessions", "data/.codex/sessions"}}},
		{name: "symlink to the day dir", place: "data/.codex", root: "srv/day", links: [][2]string{{"srv/day", "data/.codex/" + day}}},
	}

	gem := "data/.gemini"
	gemini := []shape{
		{name: "home", place: ".gemini", root: ".gemini"},
		{name: "tmp dir", place: ".gemini", root: ".gemini/tmp"},
		{name: "project dir", place: ".gemini", root: ".gemini/tmp/proj"},
		{name: "chats dir", place: ".gemini", root: ".gemini/tmp/proj/chats"},
		{name: "symlink to the home", place: gem, root: "srv/app", links: [][2]string{{"srv/app", gem}}},
		{name: "symlink to the project dir", place: gem, root: "srv/proj", links: [][2]string{{"srv/proj", gem + "/tmp/proj"}}},
		{name: "symlink to the chats dir", place: gem, root: "srv/chats", links: [][2]string{{"srv/chats", gem + "/tmp/proj/chats"}}},
		{name: "symlink on the way", place: gem, root: "srv/link/proj", links: [][2]string{{"srv/link", gem + "/tmp"}}},
	}

	var out []shapeContent
	for _, sc := range sampleCases() {
		c := shapeContent{app: sc.app, src: sc.src, layout: "sessions dir"}
		switch sc.app {
		case "copaw":
			c.sub, c.shapes, c.layout = "sessions", copaw("bot-sessions"), "channel layout"
			if _, err := os.Stat(filepath.Join(samples, "copaw", sc.src, "sessions_legacy_layout")); err == nil {
				// The flat layout of CoPaw ≤ 1.1.2, in every shape, and as the sample's
				// own directory pointed at directly.
				out = append(out, shapeContent{app: sc.app, src: sc.src, sub: "sessions_legacy_layout", layout: "flat legacy layout", shapes: copaw("sessions_legacy_layout")})
			}
		case "nanobot":
			switch sc.src {
			case "healthy_head":
				c.sub, c.shapes, c.layout = "sessions", nbRoot, "era D sessions root"
			case "healthy_v0.3.0", "healthy_pr3312":
				c.sub, c.shapes, c.layout = "workspace/sessions", nbFlat, "one sessions dir"
			default:
				c.sub, c.shapes, c.layout = ".", nbFlat, "one sessions dir"
			}
		case "praisonai":
			c.sub, c.shapes = "sessions", praison
		case "openviking":
			c.sub, c.shapes = "workspace/viking/default/user/default/sessions", viking
		case "claude-code":
			c.sub, c.shapes, c.layout = "home/.claude", claude, "config dir"
		case "codex":
			// The home, not only its sessions directory: the thread writer locks are beside it.
			c.sub, c.shapes, c.layout = "home/.codex", codex, "home"
		case "gemini-cli":
			c.sub, c.shapes = "home/.gemini", gemini
		case "openclaw":
			c.sub, c.shapes = "state/agents/main/sessions", claw
			if sc.src == "21-sqlite-plus-legacy-json" {
				c.extra = map[string]string{"../agent/openclaw-agent.sqlite": ""}
			}
		}
		if len(c.shapes) == 0 {
			panic("no path shapes for " + c.app)
		}
		out = append(out, c)
	}
	return out
}

// buildShape lays the content out in the shape under a new tree and returns the tree, the
// placed sessions directory and the rule's path.
func buildShape(t *testing.T, c shapeContent, s shape) (tree, placed, root string) {
	t.Helper()
	tree = t.TempDir()
	placed = filepath.Join(tree, s.place)
	copyTree(t, filepath.Join(samples, c.app, c.src, c.sub), placed)
	for _, d := range decoys[c.app] {
		if s.noDecoys {
			break
		}
		p := filepath.Join(placed, d)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(`{"decoy": `), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	for rel, body := range c.extra {
		p := filepath.Join(placed, rel)
		os.MkdirAll(filepath.Dir(p), 0o755)
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	for _, l := range s.links {
		link := filepath.Join(tree, l[0])
		os.MkdirAll(filepath.Dir(link), 0o755)
		if err := os.Symlink(filepath.Join(tree, l[1]), link); err != nil {
			t.Fatal(err)
		}
	}
	ageTemps(t, tree)
	return tree, placed, filepath.Join(tree, s.root)
}

// realRel is p's path relative to dir, both read through every symlink; p may be missing.
func realRel(t *testing.T, dir, p string) string {
	t.Helper()
	rd, err := filepath.EvalSymlinks(dir)
	if err != nil {
		t.Fatal(err)
	}
	pd, err := filepath.EvalSymlinks(filepath.Dir(p))
	if err != nil {
		t.Fatalf("%s: %v", p, err)
	}
	rel, err := filepath.Rel(rd, filepath.Join(pd, filepath.Base(p)))
	if err != nil {
		t.Fatal(err)
	}
	return filepath.ToSlash(rel)
}

// runShape checks, then heals, the tree of one shape through the engine, and returns what
// each file got, keyed by its path relative to the placed sessions directory.
func runShape(t *testing.T, c shapeContent, s shape) map[string]shapeResult {
	t.Helper()
	_, placed, root := buildShape(t, c, s)
	e := testEngine(t, c.app, root)
	e.findWriters = nil // no other process writes the tree: not the /proc walk of every heal
	targets, errs := e.Targets(nil, nil)
	if len(errs) > 0 {
		t.Fatalf("targets: %v", errs)
	}
	out := map[string]shapeResult{}
	for _, tg := range targets {
		out[realRel(t, placed, tg.Path)] = shapeResult{kind: verdictKind(e.Check(tg))}
	}
	// Heal from a fresh walk: the daemon and `heal` both walk, then heal in that order.
	targets, _ = e.Targets(nil, nil)
	for _, tg := range targets {
		r := e.Heal(context.Background(), tg, false)
		rel := realRel(t, placed, tg.Path)
		res := out[rel]
		res.action, res.strategy = r.Action, r.Strategy
		out[rel] = res
	}
	for rel, res := range out {
		b, err := os.ReadFile(filepath.Join(placed, rel))
		switch {
		case os.IsNotExist(err):
			res.healed = "-"
		case err != nil:
			t.Fatal(err)
		default:
			res.healed = string(b)
		}
		out[rel] = res
	}
	return out
}

// knownGaps are divergences the matching cannot fix: code that reads an ancestor's name from
// the file's path as written, not through a symlinked root. Each is asserted exactly, so a
// fix shows up here as a failure to remove the entry.
//
// A rule pointed at the legacy sessions directory of an OpenClaw install of the SQLite era
// covers that directory: the era's store is beside it (../agent/openclaw-agent.sqlite),
// never below, and the legacy files' skip reason says where (openclawSQLiteEra).
var knownGaps = map[string]string{
	"openclaw/21-sqlite-plus-legacy-json/sessions dir":                "  ../agent/openclaw-agent.sqlite: not matched (want \"\")",
	"openclaw/21-sqlite-plus-legacy-json/symlink to the sessions dir": "  ../agent/openclaw-agent.sqlite: not matched (want \"\")",
}

// shapeFigures collects "files matched" per app and shape for the log.
type shapeFigure struct {
	app, shape string
	matched    int
	canonical  int
}

func TestPathShapes(t *testing.T) {
	var figures []shapeFigure
	var mu sync.Mutex
	// The cases in parallel (a heal's time is mostly its fsyncs), all done before the sums.
	t.Run("cases", func(t *testing.T) {
		for _, c := range shapeMatrix() {
			t.Run(c.app+"/"+c.src+"/"+c.sub, func(t *testing.T) {
				t.Parallel()
				var local []shapeFigure
				defer func() { mu.Lock(); figures = append(figures, local...); mu.Unlock() }()
				canon := runShape(t, c, c.shapes[0])
				if len(canon) == 0 {
					t.Fatalf("canonical shape %q matched no file", c.shapes[0].name)
				}
				for rel := range canon {
					// (OpenClaw's agent database is session state beside the legacy sessions
					// directory.)
					if (strings.HasPrefix(rel, "../") && rel != "../agent/openclaw-agent.sqlite") || slices.Contains(decoys[c.app], rel) {
						t.Errorf("canonical shape %q covers %s, not session state", c.shapes[0].name, rel)
					}
				}
				app := c.app + ", " + c.layout
				local = append(local, shapeFigure{app, c.shapes[0].name, len(canon), len(canon)})
				for _, s := range c.shapes[1:] {
					got := runShape(t, c, s)
					local = append(local, shapeFigure{app, s.name, len(got), len(canon)})
					diff := diffShapes(canon, got)
					if gap, ok := knownGaps[c.app+"/"+c.src+"/"+s.name]; ok {
						if diff != gap {
							t.Errorf("shape %q: known gap changed; got:\n%s\nwant:\n%s", s.name, diff, gap)
						}
						t.Logf("known gap, shape %q: %s", s.name, strings.TrimSpace(diff))
						continue
					}
					if diff != "" {
						t.Errorf("shape %q (rule path %s) differs from %q:\n%s", s.name, s.root, c.shapes[0].name, diff)
					}
				}
			})
		}
	})
	// Files matched per app and shape, summed over the cases.
	type key struct{ app, shape string }
	sums := map[key][2]int{}
	var order []key
	for _, f := range figures {
		k := key{f.app, f.shape}
		if _, ok := sums[k]; !ok {
			order = append(order, k)
		}
		s := sums[k]
		sums[k] = [2]int{s[0] + f.matched, s[1] + f.canonical}
	}
	var b strings.Builder
	for _, k := range order {
		fmt.Fprintf(&b, "\n  %-32s %-42s %4d of %4d", k.app, k.shape, sums[k][0], sums[k][1])
	}
	t.Logf("files matched per shape (of the canonical shape's):%s", b.String())
}

// diffShapes lists the files on which two shapes disagree.
func diffShapes(want, got map[string]shapeResult) string {
	var lines []string
	for rel, w := range want {
		g, ok := got[rel]
		switch {
		case !ok:
			lines = append(lines, fmt.Sprintf("  %s: not matched (want %q)", rel, w.kind))
		case g.kind != w.kind:
			lines = append(lines, fmt.Sprintf("  %s: check %q, want %q", rel, g.kind, w.kind))
		case g.action != w.action || g.strategy != w.strategy:
			lines = append(lines, fmt.Sprintf("  %s: heal %s/%s, want %s/%s", rel, g.action, g.strategy, w.action, w.strategy))
		case !bytes.Equal([]byte(g.healed), []byte(w.healed)):
			lines = append(lines, fmt.Sprintf("  %s: healed bytes differ (%d vs %d)", rel, len(g.healed), len(w.healed)))
		}
	}
	for rel, g := range got {
		if _, ok := want[rel]; !ok {
			lines = append(lines, fmt.Sprintf("  %s: matched (%q), the canonical shape does not", rel, g.kind))
		}
	}
	slices.Sort(lines)
	return strings.Join(lines, "\n")
}
