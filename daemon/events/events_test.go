package events

import (
	"bytes"
	"encoding/json"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/sessionmedic/sessionmedic/heal"
	"github.com/sessionmedic/sessionmedic/internal/layering"
	"github.com/sessionmedic/sessionmedic/policy"
)

// catalog is every string constant this package declares: the events.
func catalog(t *testing.T) []string {
	t.Helper()
	files, _ := filepath.Glob("*.go")
	var names []string
	fset := token.NewFileSet()
	for _, f := range files {
		if strings.HasSuffix(f, "_test.go") {
			continue
		}
		af, err := parser.ParseFile(fset, f, nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		for _, d := range af.Decls {
			gd, ok := d.(*ast.GenDecl)
			if !ok || gd.Tok != token.CONST {
				continue
			}
			for _, spec := range gd.Specs {
				for _, v := range spec.(*ast.ValueSpec).Values {
					if lit, ok := v.(*ast.BasicLit); ok && lit.Kind == token.STRING {
						s, _ := strconv.Unquote(lit.Value)
						names = append(names, s)
					}
				}
			}
		}
	}
	return names
}

// readmeEvents is every event README.md's "Logs as an alert source" table lists.
func readmeEvents(t *testing.T) []string {
	t.Helper()
	b, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	_, sec, ok := strings.Cut(string(b), "\n## Logs as an alert source\n")
	if !ok {
		t.Fatal(`README.md has no "## Logs as an alert source" section`)
	}
	sec, _, _ = strings.Cut(sec, "\n## ")
	name := regexp.MustCompile("`([a-z_]+\\.[a-z_]+)`")
	var names []string
	for line := range strings.Lines(sec) {
		cells := strings.Split(line, "|")
		if !strings.HasPrefix(line, "| `") || len(cells) < 3 {
			continue
		}
		for _, m := range name.FindAllStringSubmatch(cells[1], -1) {
			names = append(names, m[1])
		}
	}
	if len(names) == 0 {
		t.Fatal("README.md's event table lists no event")
	}
	return names
}

// The README table is the catalog's public copy: the two list the same events.
func TestCatalogIsREADMEsTable(t *testing.T) {
	consts, readme := catalog(t), readmeEvents(t)
	for _, c := range consts {
		if !slices.Contains(readme, c) {
			t.Errorf("event %s is not in README.md's event table", c)
		}
	}
	for _, r := range readme {
		if !slices.Contains(consts, r) {
			t.Errorf("README.md lists event %s, which is no constant of package events", r)
		}
	}
	slices.Sort(consts)
	if d := slices.Compact(slices.Clone(consts)); len(d) != len(consts) {
		t.Errorf("an event is declared twice: %v", consts)
	}
}

// No log line names its event with a literal: every message is a constant of the catalog.
func TestNoLiteralEventNames(t *testing.T) {
	fset := token.NewFileSet()
	err := filepath.WalkDir("../..", func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && (d.Name() == "testdata" || strings.HasPrefix(d.Name(), ".")) && p != "../.." {
			return filepath.SkipDir
		}
		if d.IsDir() || !strings.HasSuffix(p, ".go") || strings.HasSuffix(p, "_test.go") {
			return nil
		}
		af, err := parser.ParseFile(fset, p, nil, 0)
		if err != nil {
			return err
		}
		ast.Inspect(af, func(n ast.Node) bool {
			call, ok := n.(*ast.CallExpr)
			if !ok || len(call.Args) == 0 {
				return true
			}
			sel, ok := call.Fun.(*ast.SelectorExpr)
			if !ok || !slices.Contains([]string{"Debug", "Info", "Warn", "Error"}, sel.Sel.Name) {
				return true
			}
			if lit, ok := call.Args[0].(*ast.BasicLit); ok && lit.Kind == token.STRING {
				t.Errorf("%s: %s(%s): name the event with a constant of package events", fset.Position(call.Pos()), sel.Sel.Name, lit.Value)
			}
			return true
		})
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

// Report's lines, key by key: the contract alerts are written against.
func TestReportLines(t *testing.T) {
	base := heal.Report{Path: "/s/a.jsonl", Rule: "r", Verdict: heal.Damaged, Kind: "torn-tail", Offset: 7,
		Detail: "d", Strategy: "truncate-tail", Quarantine: "/q/1", LostBytes: 3, LostRecords: 1, Reason: "why"}
	with := func(f func(*heal.Report)) heal.Report { r := base; f(&r); return r }
	for _, c := range []struct {
		name string
		r    heal.Report
		want string // the line without its time
	}{
		{"healed", with(func(r *heal.Report) { r.Action = heal.ActionHealed }),
			`{"level":"WARN","msg":"file.healed","rule":"r","path":"/s/a.jsonl","kind":"torn-tail","strategy":"truncate-tail","quarantine":"/q/1","lost_bytes":3,"lost_records":1}`},
		{"healed, a snapshot restored", with(func(r *heal.Report) { r.Action, r.Discarded = heal.ActionHealed, "every transaction since T" }),
			`{"level":"WARN","msg":"file.healed","rule":"r","path":"/s/a.jsonl","kind":"torn-tail","strategy":"truncate-tail","quarantine":"/q/1","lost_bytes":3,"lost_records":1,"discarded":"every transaction since T"}`},
		{"refused", with(func(r *heal.Report) {
			r.Action, r.Tried = heal.ActionRefused, []string{"salvage: nothing to drop", "last-good: no copy kept"}
		}),
			`{"level":"ERROR","msg":"file.heal_refused","rule":"r","path":"/s/a.jsonl","kind":"torn-tail","offset":7,"detail":"d","reason":"why","tried":["salvage: nothing to drop","last-good: no copy kept"]}`},
		{"refused, nothing tried", with(func(r *heal.Report) { r.Action = heal.ActionRefused }),
			`{"level":"ERROR","msg":"file.heal_refused","rule":"r","path":"/s/a.jsonl","kind":"torn-tail","offset":7,"detail":"d","reason":"why","tried":[]}`},
		{"hands off", with(func(r *heal.Report) { r.Action, r.HandsOff = heal.ActionNone, true }),
			`{"level":"WARN","msg":"file.damaged","rule":"r","path":"/s/a.jsonl","kind":"torn-tail","offset":7,"detail":"d","hands_off":true,"quarantine":"/q/1"}`},
		{"checked", base,
			`{"level":"WARN","msg":"file.damaged","rule":"r","path":"/s/a.jsonl","kind":"torn-tail","offset":7,"detail":"d"}`},
		{"would heal", with(func(r *heal.Report) { r.Action = heal.ActionWouldHeal }),
			`{"level":"WARN","msg":"file.damaged","rule":"r","path":"/s/a.jsonl","kind":"torn-tail","offset":7,"detail":"d"}`},
		{"healthy", with(func(r *heal.Report) { r.Verdict = heal.Healthy }), ``},
		{"busy", with(func(r *heal.Report) { r.Verdict = heal.Busy }), ``},
	} {
		var buf bytes.Buffer
		Report(slog.New(slog.NewJSONHandler(&buf, &slog.HandlerOptions{
			Level: slog.LevelDebug,
			ReplaceAttr: func(groups []string, a slog.Attr) slog.Attr {
				if a.Key == slog.TimeKey && len(groups) == 0 {
					return slog.Attr{}
				}
				return a
			},
		})), c.r)
		if got := strings.TrimSpace(buf.String()); got != c.want {
			t.Errorf("%s:\n got %s\nwant %s", c.name, got, c.want)
		}
		if buf.Len() > 0 && !json.Valid(buf.Bytes()) {
			t.Errorf("%s: not JSON: %s", c.name, buf.Bytes())
		}
	}
}

// TestImports keeps the layering of DESIGN.md §2: the catalog below the daemon and the
// commands: it imports heal (for the report it logs) and policy (for the rule paths whose
// coverage it announces), and no other package of ours.
func TestImports(t *testing.T) {
	layering.Check(t, ".", false, func(own string) bool { return own == "heal" || own == "policy" || layering.Leaf(own) })
}

// TestAnnounceShadowedBy: rule.no_files names the earlier rule that takes every file of a
// rule path (shadowed_by), and only where the policy says so for certain.
func TestAnnounceShadowedBy(t *testing.T) {
	dir := t.TempDir()
	other := t.TempDir()
	os.WriteFile(filepath.Join(dir, "s.json"), []byte("{}"), 0o644)
	cfg, err := policy.ParseEnv("p.yaml", []byte(fmt.Sprintf("version: 1\nrules:\n"+
		"  - {name: all, format: json, paths: [%[1]s]}\n  - {name: bot, format: json, paths: [%[1]s]}\n  - {name: logs, format: jsonl, paths: [%[1]s, %[2]s]}\n",
		dir, other)), policy.Env{Home: dir, Getenv: func(string) string { return "" }, Exists: func(string) bool { return true }})
	if err != nil {
		t.Fatal(err)
	}
	targets := []heal.Target{{Path: filepath.Join(dir, "s.json"), Rule: &cfg.Rules[0]}}
	var buf bytes.Buffer
	log := slog.New(slog.NewJSONHandler(&buf, &slog.HandlerOptions{ReplaceAttr: func(groups []string, a slog.Attr) slog.Attr {
		if a.Key == slog.TimeKey && len(groups) == 0 {
			return slog.Attr{}
		}
		return a
	}}))
	if n := Announce(log, Coverage(cfg, targets)); n != 3 {
		t.Errorf("announced %d paths, want 3", n)
	}
	want := fmt.Sprintf(`{"level":"WARN","msg":"rule.no_files","rule":"bot","path":%q,"patterns":["*.json"],"shadowed_by":"all"}`+"\n"+
		`{"level":"WARN","msg":"rule.no_files","rule":"logs","path":%q,"patterns":["*.jsonl"]}`+"\n"+
		`{"level":"WARN","msg":"rule.no_files","rule":"logs","path":%q,"patterns":["*.jsonl"]}`, dir, dir, other)
	if got := strings.TrimSpace(buf.String()); got != want {
		t.Errorf("got\n%s\nwant\n%s", got, want)
	}
}
