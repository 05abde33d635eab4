//go:build linux

package hostile

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
	"unicode/utf8"
)

// TestHostileNames: file names with newlines, tabs, quotes, backslashes, a leading dash,
// non-UTF-8 bytes, right-to-left overrides and 255 bytes are each reported once, under a
// path that names that file and no other; damaged ones are healed with their bytes in
// quarantine; the daemon heals them too.
func TestHostileNames(t *testing.T) {
	base := t.TempDir()
	root, state := filepath.Join(base, "root"), filepath.Join(base, "state")
	names := map[string]bool{ // name → damaged
		"new\nline.jsonl":                   true,
		"two\nnew\nlines\n.jsonl":           false,
		"tab\there.jsonl":                   true,
		"quote\"and'apos.jsonl":             true,
		"back\\slash.jsonl":                 false,
		"-rf --json.jsonl":                  true,
		" leading space.jsonl":              false,
		"\xff\xfe latin1.jsonl":             true,
		"\xfe\xff latin1.jsonl":             false,
		"bad \xc3\x28 utf8.jsonl":           true,
		"rtl \u202egnp.jsonl":               true,
		"データ.jsonl":                         true,
		"esc \x1b[31mred.jsonl":             true,
		strings.Repeat("n", 249) + ".jsonl": true,
	}
	for n, bad := range names {
		content := healthyLine
		if bad {
			content = tornTail
		}
		mustWrite(t, filepath.Join(root, n), []byte(content))
	}
	pol := writePolicy(t, state, fmt.Sprintf("  - {name: j, format: jsonl, paths: [%s], settle: 50ms, max_wait: 500ms}\n", root))
	before := snapshot(t, []string{state}, root)

	// Every file must be named by exactly one report, and each report must name one file.
	identify := func(cmd string, reps []report) map[string]report {
		out := map[string]report{}
		seen := map[string]int{}
		for _, rep := range reps {
			seen[rep.Path]++
		}
		for n := range names {
			p := filepath.Join(root, n)
			var hits []report
			for _, rep := range reps {
				if rep.Path == p {
					hits = append(hits, rep)
				}
			}
			switch {
			case len(hits) == 1:
				out[n] = hits[0]
			case !utf8.ValidString(p):
				lossy := jsonLossy(p)
				var near []report
				for _, rep := range reps {
					if rep.Path == lossy {
						near = append(near, rep)
					}
				}
				if len(near) == 1 {
					out[n] = near[0]
					t.Logf("%s: %q is reported as %q: a consumer cannot open it by that path", cmd, p, near[0].Path)
				} else {
					t.Errorf("%s: the file %q (not UTF-8) cannot be told apart in -json output: %d reports carry the path %q", cmd, p, len(near), lossy)
				}
			default:
				t.Errorf("%s: %q reported %d times", cmd, p, len(hits))
			}
		}
		return out
	}

	c := sm(t, runOpts{}, "check", "-config", pol, "-json")
	got := identify("check", reports(t, c))
	for n, bad := range names {
		want := "healthy"
		if bad {
			want = "damaged"
		}
		if rep, ok := got[n]; ok && rep.Verdict != want {
			t.Errorf("check %q: %s %s, want %s", n, rep.Verdict, rep.Kind, want)
		}
	}
	if c.code != 1 {
		t.Errorf("check: exit %d, want 1", c.code)
	}

	h := sm(t, runOpts{}, "heal", "-config", pol, "-json")
	got = identify("heal", reports(t, h))
	allowed := map[string]bool{}
	for n, bad := range names {
		p := filepath.Join(root, n)
		b, _ := os.ReadFile(p)
		if !bad {
			if !bytes.Equal(b, []byte(healthyLine)) {
				t.Errorf("heal changed the healthy %q", n)
			}
			continue
		}
		allowed[p] = true
		if !bytes.Equal(b, []byte(healthyLine)) {
			t.Errorf("heal: %q (a %d-byte name) not healed: %q; %s %s: %s", n, len(n), b, got[n].Action, got[n].Strategy, got[n].Reason)
		}
	}
	if diff := changed(before, snapshot(t, []string{state}, root), allowed); len(diff) > 0 {
		t.Errorf("heal wrote: %v", diff)
	}
	// The quarantine keeps each damaged original under its own name.
	qs, _ := filepath.Glob(filepath.Join(state, "quarantine", "*", "*"))
	kept := map[string]bool{}
	for _, q := range qs {
		ents, _ := os.ReadDir(q)
		for _, e := range ents {
			if e.Name() != "manifest.json" {
				if b, _ := os.ReadFile(filepath.Join(q, e.Name())); string(b) == tornTail {
					kept[e.Name()] = true
				}
			}
		}
	}
	for n, bad := range names {
		if bad && !kept[n] {
			t.Errorf("quarantine lacks the original of %q", n)
		}
	}
	l := sm(t, runOpts{}, "quarantine", "list", "-config", pol, "-json")
	if got := strings.Count(l.stdout, "\n"); got != len(qs) {
		t.Errorf("quarantine list: %d lines for %d entries", got, len(qs))
	}

	// The daemon heals such names live, and its log names them.
	d := startDaemon(t, pol)
	eventually(t, 20*time.Second, "the first scan", func() bool { return len(d.events("scan.finished")) > 0 })
	for _, n := range []string{"new\nline.jsonl", "\xff\xfe latin1.jsonl", "tab\there.jsonl"} {
		p := filepath.Join(root, n)
		mustWrite(t, p, []byte(tornTail))
		eventually(t, 10*time.Second, fmt.Sprintf("the daemon heals %q", n), func() bool {
			b, _ := os.ReadFile(p)
			return string(b) == healthyLine
		})
	}
	paths := map[string]bool{}
	for _, ev := range d.events("file.healed") {
		paths[fmt.Sprint(ev["path"])] = true
	}
	if !paths[filepath.Join(root, "new\nline.jsonl")] {
		t.Errorf("file.healed does not name %q: %v", "new\nline.jsonl", paths)
	}
	d.stop(t)
}

// jsonLossy is what encoding/json makes of a string that is not UTF-8: every invalid byte
// becomes U+FFFD.
func jsonLossy(s string) string {
	var b strings.Builder
	for len(s) > 0 {
		r, size := utf8.DecodeRuneInString(s)
		if r == utf8.RuneError && size == 1 {
			b.WriteString("\uFFFD")
		} else {
			b.WriteString(s[:size])
		}
		s = s[size:]
	}
	return b.String()
}
