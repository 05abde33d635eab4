package main

import (
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/lmittmann/tint"
)

// hostileNames are file names a tree's user may choose to forge report lines or drive the
// operator's terminal.
var hostileNames = []string{
	"a\nhealthy\tj\tfake.jsonl",
	"\x1b[31mred\x1b[0m.jsonl",
	"cr\rhealthy.jsonl",
	"bad\xffutf8.jsonl",
	"sep\u2028line.jsonl",
	"\"quoted\".jsonl",
}

// TestTextOutputCannotBeForged: whatever names the files have, `check`, `heal` and
// `quarantine list` print one line per file or entry, with no control character in it, and
// name each file so that it can be told apart from every other.
func TestTextOutputCannotBeForged(t *testing.T) {
	base := t.TempDir()
	sessions := filepath.Join(base, "sessions")
	os.Mkdir(sessions, 0o755)
	for _, n := range hostileNames {
		if err := os.WriteFile(filepath.Join(sessions, n), []byte("{\"a\":1}\n{\"a\""), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	policyFile := filepath.Join(base, "policy.yaml")
	os.WriteFile(policyFile, []byte(fmt.Sprintf("version: 1\nstate_dir: %s\nrules:\n  - {name: j, format: jsonl, paths: [%s]}\n", filepath.Join(base, "state"), sessions)), 0o644)
	home := t.TempDir()
	clean := func(what, out string, lines int) {
		t.Helper()
		if strings.ContainsAny(out, "\r\x1b\u2028") || !strings.HasSuffix(out, "\n") {
			t.Errorf("%s: a control character reached the output:\n%q", what, out)
		}
		got := strings.Split(strings.TrimSuffix(out, "\n"), "\n")
		if len(got) != lines {
			t.Errorf("%s: %d lines, want %d:\n%s", what, len(got), lines, out)
		}
	}
	out, _, code := sm(t, home, "check", "-config", policyFile)
	if code != 1 {
		t.Fatalf("check: exit %d\n%s", code, out)
	}
	clean("check", out, len(hostileNames)+1)
	for _, n := range hostileNames {
		if !strings.Contains(out, quoteName(filepath.Join(sessions, n))) {
			t.Errorf("check does not name %q as %s:\n%s", n, quoteName(filepath.Join(sessions, n)), out)
		}
	}
	if strings.Count(out, "\nhealthy") != 0 || strings.HasPrefix(out, "healthy") {
		t.Errorf("a forged healthy line:\n%s", out)
	}
	out, _, code = sm(t, home, "heal", "-config", policyFile)
	if code != 0 {
		t.Fatalf("heal: exit %d\n%s", code, out)
	}
	clean("heal", out, len(hostileNames)+1)
	out, _, _ = sm(t, home, "quarantine", "list", "-config", policyFile)
	clean("quarantine list", out, len(hostileNames))
}

func TestQuoteName(t *testing.T) {
	for in, want := range map[string]string{
		"/s/plain name.jsonl": "/s/plain name.jsonl",
		"/s/a\nb":             `"/s/a\nb"`,
		"/s/\x1b[31m":         `"/s/\x1b[31m"`,
		"/s/\xff":             `"/s/\xff"`,
		`"/s/q"`:              `"\"/s/q\""`,
	} {
		if got := quoteName(in); got != want {
			t.Errorf("quoteName(%q) = %s, want %s", in, got, want)
		}
	}
	if got := escapeText("open /s/a\nb: \x1b[31m \xff ok"); got != `open /s/a\nb: \x1b[31m \xff ok` {
		t.Errorf("escapeText: %s", got)
	}
}

// TestTerminalLogEscapesNames: on a terminal (tint, in colour), a name's escape sequence
// is written escaped, never as the sequence itself.
func TestTerminalLogEscapesNames(t *testing.T) {
	var b strings.Builder
	log := slog.New(tint.NewHandler(&b, &tint.Options{NoColor: false, ReplaceAttr: escapeAttrs}))
	log.Warn("file.damaged", "path", "/s/\x1b[2J\x1b[31mfake.jsonl", "err", errors.New("open /s/\x1b]0;title\x07"),
		"other", `/s/a name\x1b[2J`) // the text \x1b, which tint turns into ESC when it quotes
	if strings.Contains(b.String(), "\x1b[2J") || strings.Contains(b.String(), "\x1b]0;") {
		t.Fatalf("an escape sequence of a name reached the terminal: %q", b.String())
	}
	if !strings.Contains(b.String(), `\u001b[2J`) {
		t.Fatalf("the name is not shown escaped: %q", b.String())
	}
}

// TestRestoreKeepsAnExactName: a file whose name is not UTF-8 is quarantined by a heal and
// put back by `quarantine restore` at exactly that name, with exactly its bytes.
func TestRestoreKeepsAnExactName(t *testing.T) {
	base := t.TempDir()
	sessions := filepath.Join(base, "sessions")
	os.Mkdir(sessions, 0o755)
	f := filepath.Join(sessions, "bad\xff\xfe.jsonl")
	const torn = "{\"a\":1}\n{\"a\""
	os.WriteFile(f, []byte(torn), 0o644)
	policyFile := filepath.Join(base, "policy.yaml")
	os.WriteFile(policyFile, []byte(fmt.Sprintf("version: 1\nstate_dir: %s\nrules:\n  - {name: j, format: jsonl, paths: [%s]}\n", filepath.Join(base, "state"), sessions)), 0o644)
	home := t.TempDir()
	if out, errOut, code := sm(t, home, "heal", "-config", policyFile); code != 0 {
		t.Fatalf("heal: exit %d\n%s%s", code, out, errOut)
	}
	out, _, _ := sm(t, home, "quarantine", "list", "-config", policyFile)
	id := strings.Fields(out)[0]
	os.Remove(f)
	if out, errOut, code := sm(t, home, "quarantine", "restore", id, "-config", policyFile); code != 0 {
		t.Fatalf("restore: exit %d\n%s%s", code, out, errOut)
	}
	if b, err := os.ReadFile(f); err != nil || string(b) != torn {
		t.Fatalf("at the exact name after the restore: %q %v", b, err)
	}
	ents, _ := os.ReadDir(sessions)
	if len(ents) != 1 {
		t.Fatalf("%d files in the directory, want the one restored", len(ents))
	}
}
