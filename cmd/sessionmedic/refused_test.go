package main

import (
	"bufio"
	"encoding/json"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// TestHealRefusedSaysWhy: a file no strategy heals is refused with where its damage is, as
// check says it, and why each strategy of the rule did not apply — in the text line, in the
// -json report (tried) and in the file.heal_refused log line.
func TestHealRefusedSaysWhy(t *testing.T) {
	home := t.TempDir()
	dir := filepath.Join(t.TempDir(), "sessions")
	copyDir(t, filepath.Join(samples, "nanobot/corrupt_truncated_in_metadata"), dir)
	const file = "dGVsZWdyYW06MTIzNDU2Nzg5.jsonl"
	tried := []string{"salvage: no valid record to keep", "last-good: no copy kept"}
	reason := "no strategy of the rule yields a valid file: " + strings.Join(tried, "; ")

	out, _, code := sm(t, home, "check", "-preset", "nanobot", "-json", dir)
	c := parseReports(t, out)[file]
	if code != 1 || c.Verdict != "damaged" || c.Detail == "" {
		t.Fatalf("check: exit %d: %+v", code, c)
	}
	where := c.Kind + " at 0: " + c.Detail
	if c.Offset != 0 {
		t.Fatalf("check: offset %d", c.Offset)
	}

	out, _, code = sm(t, home, "heal", "-preset", "nanobot", dir)
	var line string
	for l := range strings.Lines(out) {
		if strings.Contains(l, file) {
			line = strings.TrimSpace(l)
		}
	}
	if code != 1 || !strings.HasPrefix(line, "refused") || !strings.HasSuffix(line, where+"; not healed: "+reason) {
		t.Fatalf("heal: exit %d, line %q, want it to end %q\n%s", code, line, where+"; not healed: "+reason, out)
	}

	out, stderr, _ := sm(t, home, "heal", "-preset", "nanobot", "-json", dir)
	var r struct {
		Path, Kind, Detail, Action, Reason string
		Offset                             int64
		Tried                              []string
	}
	sc := bufio.NewScanner(strings.NewReader(out))
	for sc.Scan() {
		if strings.Contains(sc.Text(), file) {
			json.Unmarshal(sc.Bytes(), &r)
		}
	}
	if r.Action != "refused" || r.Kind != c.Kind || r.Offset != c.Offset || r.Detail != c.Detail || r.Reason != reason || !slices.Equal(r.Tried, tried) {
		t.Errorf("heal -json: %+v", r)
	}
	var logged bool
	for l := range strings.Lines(stderr) {
		var ev struct {
			Msg, Path, Kind, Detail string
			Offset                  int64
			Tried                   []string
		}
		if json.Unmarshal([]byte(l), &ev) == nil && ev.Msg == "file.heal_refused" && strings.HasSuffix(ev.Path, file) {
			logged = ev.Kind == c.Kind && ev.Offset == c.Offset && ev.Detail == c.Detail && slices.Equal(ev.Tried, tried)
		}
	}
	if !logged {
		t.Errorf("no file.heal_refused with the damage and tried in the JSON log:\n%s", stderr)
	}
}
