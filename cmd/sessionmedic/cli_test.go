package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

var binary string

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "sessionmedic-bin")
	if err != nil {
		panic(err)
	}
	binary = filepath.Join(dir, "sessionmedic")
	out, err := exec.Command("go", "build", "-o", binary, ".").CombinedOutput()
	if err != nil {
		os.Stderr.Write(out)
		panic(err)
	}
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

const samples = "../../heal/testdata/samples"

// sm runs the built binary with a private HOME and state dir.
func sm(t *testing.T, home string, args ...string) (stdout, stderr string, code int) {
	t.Helper()
	cmd := exec.Command(binary, args...)
	cmd.Env = []string{"HOME=" + home, "XDG_STATE_HOME=" + filepath.Join(home, "state"), "PATH=" + os.Getenv("PATH")}
	var o, e bytes.Buffer
	cmd.Stdout, cmd.Stderr = &o, &e
	err := cmd.Run()
	code = 0
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatal(err)
	}
	return o.String(), e.String(), code
}

func copyDir(t *testing.T, src, dst string) {
	t.Helper()
	filepath.WalkDir(src, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			t.Fatal(err)
		}
		rel, _ := filepath.Rel(src, p)
		out := filepath.Join(dst, rel)
		if d.IsDir() {
			return os.MkdirAll(out, 0o755)
		}
		b, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		return os.WriteFile(out, b, 0o644)
	})
}

type jsonReport struct {
	Path, Rule, Format, Verdict, Kind, Detail, Action, Strategy, Quarantine string
	Offset                                                                  int64
	LostBytes                                                               int64 `json:"lost_bytes"`
	LostRecords                                                             int   `json:"lost_records"`
}

func parseReports(t *testing.T, out string) map[string]jsonReport {
	t.Helper()
	m := map[string]jsonReport{}
	sc := bufio.NewScanner(strings.NewReader(out))
	for sc.Scan() {
		var r jsonReport
		if err := json.Unmarshal(sc.Bytes(), &r); err != nil {
			t.Fatalf("bad -json line %q: %v", sc.Text(), err)
		}
		m[filepath.Base(r.Path)] = r
	}
	return m
}

func TestCheckHealQuarantineCycle(t *testing.T) {
	home := t.TempDir()
	dir := filepath.Join(t.TempDir(), "sessions")
	copyDir(t, filepath.Join(samples, "praisonai/corrupt_trailing_garbage/sessions"), dir)
	target := filepath.Join(dir, "parent-chat.json")
	orig, _ := os.ReadFile(target)

	out, _, code := sm(t, home, "check", "-preset", "praisonai", "-json", dir)
	if code != 1 {
		t.Fatalf("check on damage: exit %d, want 1\n%s", code, out)
	}
	r := parseReports(t, out)
	if got := r["parent-chat.json"]; got.Verdict != "damaged" || got.Kind != "trailing-garbage" || got.Offset != 1036 {
		t.Fatalf("check report: %+v", got)
	}
	if r["my-session-123.json"].Verdict != "healthy" {
		t.Fatalf("healthy file reported %+v", r["my-session-123.json"])
	}

	out, _, code = sm(t, home, "heal", "-dry-run", "-preset", "praisonai", "-json", dir)
	if code != 1 || parseReports(t, out)["parent-chat.json"].Action != "would-heal" {
		t.Fatalf("dry-run: exit %d\n%s", code, out)
	}
	if now, _ := os.ReadFile(target); !bytes.Equal(now, orig) {
		t.Fatal("dry-run wrote the file")
	}

	out, stderr, code := sm(t, home, "heal", "-preset", "praisonai", "-json", dir)
	if code != 0 {
		t.Fatalf("heal: exit %d\n%s\n%s", code, out, stderr)
	}
	hr := parseReports(t, out)["parent-chat.json"]
	if hr.Action != "healed" || hr.Strategy != "salvage" || hr.LostBytes != int64(len(orig)-1033) {
		t.Fatalf("heal report: %+v", hr)
	}
	healed, _ := os.ReadFile(target)
	want, _ := os.ReadFile(filepath.Join(samples, "praisonai/healthy/sessions/parent-chat.json"))
	if !bytes.Equal(healed, want) {
		t.Fatal("healed file is not the salvaged prefix")
	}
	if !strings.Contains(stderr, `"msg":"file.healed"`) {
		t.Errorf("no file.healed event in the JSON log:\n%s", stderr)
	}

	out, _, code = sm(t, home, "check", "-preset", "praisonai", dir)
	if code != 0 || !strings.Contains(out, "0 damaged") {
		t.Fatalf("check after heal: exit %d\n%s", code, out)
	}

	out, _, code = sm(t, home, "quarantine", "list")
	if code != 0 || !strings.Contains(out, "parent-chat.json") {
		t.Fatalf("quarantine list: exit %d\n%s", code, out)
	}
	id := strings.Fields(out)[0]
	out, _, code = sm(t, home, "quarantine", "show", id, "-json")
	if code != 0 || !strings.Contains(out, `"kind":"trailing-garbage"`) || strings.Count(out, "\n") != 1 {
		t.Fatalf("quarantine show -json: exit %d, want one compact line\n%s", code, out)
	}
	if out, _, code = sm(t, home, "quarantine", "show", id); code != 0 || !strings.Contains(out, `"kind": "trailing-garbage"`) || !strings.Contains(out, "bytes: ") {
		t.Fatalf("quarantine show: exit %d\n%s", code, out)
	}
	// The file is guarded by no rule of the policy (the embedded default): a restore refuses
	// to write there, unless the rule the heal used is named again.
	out, errOut, code := sm(t, home, "quarantine", "restore", id)
	if code != 2 || !strings.Contains(errOut, target+" is guarded by no rule of the current policy") {
		t.Fatalf("quarantine restore outside every rule: exit %d\n%s%s", code, out, errOut)
	}
	out, _, code = sm(t, home, "quarantine", "restore", id, "-preset", "praisonai", dir)
	if code != 0 {
		t.Fatalf("quarantine restore: exit %d\n%s", code, out)
	}
	if now, _ := os.ReadFile(target); !bytes.Equal(now, orig) {
		t.Fatal("restore did not put the original bytes back")
	}
	out, _, _ = sm(t, home, "quarantine", "list")
	if n := strings.Count(out, "parent-chat.json"); n != 2 {
		t.Fatalf("restore must quarantine what it replaced: %d entries\n%s", n, out)
	}
}

func TestFormatDetectionWithoutPolicy(t *testing.T) {
	home := t.TempDir()
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "a.json"), []byte(`{"a": 1}{"a":`), 0o644)
	os.WriteFile(filepath.Join(dir, "b.jsonl"), []byte("{\"x\":1}\n{\"x\":2}\n{\"x\""), 0o644)
	os.WriteFile(filepath.Join(dir, "ok.json"), []byte(`{"ok": true}`), 0o644)
	os.WriteFile(filepath.Join(dir, "notes.txt"), []byte(`{`), 0o644)
	out, _, code := sm(t, home, "check", "-json", dir)
	r := parseReports(t, out)
	if code != 1 || r["a.json"].Kind != "trailing-garbage" || r["b.jsonl"].Kind != "truncated" || r["ok.json"].Verdict != "healthy" {
		t.Fatalf("exit %d\n%s", code, out)
	}
	if _, ok := r["notes.txt"]; ok {
		t.Fatal("a .txt file was inspected")
	}
	if _, _, code := sm(t, home, "heal", dir); code != 0 {
		t.Fatalf("heal: exit %d", code)
	}
	if b, _ := os.ReadFile(filepath.Join(dir, "b.jsonl")); string(b) != "{\"x\":1}\n{\"x\":2}\n" {
		t.Fatalf("jsonl salvage: %q", b)
	}
}

func TestExitCodesAndErrors(t *testing.T) {
	home := t.TempDir()
	bad := filepath.Join(t.TempDir(), "bad.yaml")
	os.WriteFile(bad, []byte("version: 1\nrules:\n  - name: x\n    paths: [/tmp]\n    format: json\n    settle: 2x\n"), 0o644)
	cases := []struct {
		args []string
		code int
		text string
	}{
		{[]string{"version"}, 0, "sessionmedic "},
		{[]string{"version", "extra"}, 2, "version takes no arguments"},
		{nil, 2, "usage"},
		{[]string{"frobnicate"}, 2, `unknown command "frobnicate"`},
		{[]string{"check", "-nope"}, 2, "flag provided but not defined"},
		{[]string{"check", "-config", bad}, 2, bad + ":6: rules[0].settle"},
		{[]string{"policy", "-config", bad}, 2, bad + ":6:"},
		{[]string{"check", "-config", "/nonexistent/policy.yaml"}, 2, "/nonexistent/policy.yaml"},
		{[]string{"check", "-preset", "nosuch", "."}, 2, `unknown preset "nosuch"`},
		{[]string{"quarantine", "show", "nosuch"}, 2, "no quarantine entry"},
	}
	for _, c := range cases {
		out, errOut, code := sm(t, home, c.args...)
		if code != c.code || !strings.Contains(out+errOut, c.text) {
			t.Errorf("%v: exit %d, want %d with %q\n%s%s", c.args, code, c.code, c.text, out, errOut)
		}
		if strings.Contains(errOut, "goroutine ") || strings.Contains(errOut, "panic") {
			t.Errorf("%v: stack trace on stderr", c.args)
		}
	}
}

func TestPolicyPrintsEffectiveDefault(t *testing.T) {
	out, _, code := sm(t, t.TempDir(), "policy")
	if code != 0 {
		t.Fatalf("exit %d", code)
	}
	for _, want := range []string{"openclaw", "nanobot", "praisonai", "openviking", "copaw", "strategies"} {
		if !strings.Contains(out, want) {
			t.Errorf("effective policy lacks %q", want)
		}
	}
	// What it prints is itself a valid policy.
	f := filepath.Join(t.TempDir(), "p.yaml")
	os.WriteFile(f, []byte(out), 0o644)
	if _, errOut, code := sm(t, t.TempDir(), "policy", "-config", f); code != 0 {
		t.Fatalf("printed policy does not load: %s", errOut)
	}
}

func TestDefaultPolicyCheckRuns(t *testing.T) {
	home := t.TempDir()
	copyDir(t, filepath.Join(samples, "openclaw/03-trailing-garbage/state"), filepath.Join(home, ".openclaw"))
	out, errOut, code := sm(t, home, "check")
	if code != 1 || !strings.Contains(out, "trailing-garbage") {
		t.Fatalf("check on the embedded default: exit %d\n%s\n%s", code, out, errOut)
	}
	if !strings.Contains(errOut, "skipped default locations") {
		t.Errorf("missing default locations are not reported:\n%s", errOut)
	}
}

// TestUndetectableFormatIsAUsageError: a file named on the command line that no rule covers
// and whose format cannot be detected from its name is the operator's to describe: exit 2
// (not 1: nothing was found damaged), one line naming the file and what to pass, and no file
// is inspected. In a tree, such a file is not a session file and is passed over.
func TestUndetectableFormatIsAUsageError(t *testing.T) {
	home := t.TempDir()
	dir := t.TempDir()
	notes := filepath.Join(dir, "notes.txt")
	os.WriteFile(notes, []byte(`{`), 0o644)
	os.WriteFile(filepath.Join(dir, "ok.json"), []byte(`{}`), 0o644)
	for _, args := range [][]string{
		{"check", notes}, {"check", "-json", notes}, {"heal", notes}, {"heal", "-dry-run", notes},
		{"check", filepath.Join(dir, "ok.json"), notes},
		{"check", "-preset", "nanobot", notes},
	} {
		out, errOut, code := sm(t, home, args...)
		if code != 2 || out != "" || strings.Count(errOut, "\n") != 1 ||
			!strings.HasPrefix(errOut, "sessionmedic: "+notes+": ") || !strings.Contains(errOut, "-preset") {
			t.Errorf("%q: exit %d, want 2 with one line naming the file and -preset\nstdout:\n%s\nstderr:\n%s", args, code, out, errOut)
		}
	}
	if b, _ := os.ReadFile(notes); string(b) != "{" {
		t.Errorf("heal wrote the file: %q", b)
	}
	if out, errOut, code := sm(t, home, "check", dir); code != 0 || strings.Contains(out, "notes.txt") {
		t.Errorf("check of the tree: exit %d\n%s%s", code, out, errOut)
	}
}
