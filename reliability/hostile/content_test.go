//go:build linux

package hostile

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"
)

// pathological are contents a parser chokes on, keyed by file name.
func pathological() map[string][]byte {
	good := []byte(`{"role": "user", "content": "fine"}` + "\n")
	rep := func(s string, n int) []byte { return []byte(strings.Repeat(s, n)) }
	cat := func(parts ...[]byte) []byte { return bytes.Join(parts, nil) }
	return map[string][]byte{
		"deep-array.json":         cat(rep("[", 100_000), rep("]", 100_000)),
		"deep-object.json":        cat(rep(`{"a":`, 100_000), []byte("1"), rep("}", 100_000)),
		"deep-unclosed.json":      rep("[", 100_000),
		"deep-line.jsonl":         cat(good, rep("[", 100_000), rep("]", 100_000), []byte("\n"), good),
		"deep-last-line.jsonl":    cat(good, good, rep(`{"a":`, 100_000)),
		"invalid-utf8.json":       []byte("{\"a\": \"\xff\xfe\"}"),
		"invalid-utf8.jsonl":      cat(good, []byte("{\"a\": \"\xc3\x28\"}\n"), good),
		"overlong-utf8.jsonl":     cat(good, []byte("{\"a\": \"\xc0\xaf\"}\n")),
		"raw-surrogate.jsonl":     cat(good, []byte("{\"a\": \"\xed\xa0\x80\"}\n")),
		"escaped-surrogate.jsonl": cat(good, []byte(`{"a": "\ud800"}`+"\n")),
		"nul-filled.json":         make([]byte, 4096),
		"nul-filled.jsonl":        make([]byte, 4096),
		"nul-line.jsonl":          cat(good, make([]byte, 100), []byte("\n"), good),
		"nul-tail.jsonl":          cat(good, good, make([]byte, 512)),
		"empty.json":              nil,
		"empty.jsonl":             nil,
		"only-newlines.jsonl":     []byte("\n\n\n"),
		"bom.json":                []byte("\xef\xbb\xbf{\"a\": 1}"),
		"huge-number.json":        cat([]byte(`{"n": 1`), rep("0", 100_000), []byte("}")),
		"escapes.json":            cat([]byte(`{"s": "`), rep(`\u0000`, 100_000), []byte(`"}`)),
		"many-keys.json":          manyKeys(200_000),
		"crlf.jsonl":              []byte("{\"a\": 1}\r\n{\"b\": 2}\r\n"),
		"trailing-comma.json":     []byte(`{"a": 1,}`),
		"nan.json":                []byte(`{"a": NaN}`),
		"two-values.json":         []byte(`{"a": 1}{"a": 2}`),
		"array-top.jsonl":         cat(good, []byte("[1, 2]\n")),
		"string-top.json":         []byte(`"just a string"`),
		"control-chars.json":      []byte("{\"a\": \"\x01\x02\"}"),
		"torn-escape.jsonl":       cat(good, []byte(`{"a": "\u12`)),
	}
}

func manyKeys(n int) []byte {
	var b bytes.Buffer
	b.WriteString("{")
	for i := 0; i < n; i++ {
		if i > 0 {
			b.WriteString(", ")
		}
		fmt.Fprintf(&b, `"k%d": %d`, i, i)
	}
	b.WriteString("}")
	return b.Bytes()
}

// TestPathologicalContent checks and heals a tree of files a parser chokes on: each gets one
// clear verdict, nothing crashes or runs out of memory, heal changes only the files it says
// it healed (and keeps their bytes in quarantine), a healed file checks healthy, and a second
// heal changes nothing.
func TestPathologicalContent(t *testing.T) {
	base := t.TempDir()
	root, state := filepath.Join(base, "root"), filepath.Join(base, "state")
	files := pathological()
	for n, b := range files {
		mustWrite(t, filepath.Join(root, n), b)
	}
	pol := writePolicy(t, state, fmt.Sprintf("  - {name: j, format: jsonl, paths: [%s]}\n  - {name: o, format: json, paths: [%s]}\n", root, root))
	before := snapshot(t, []string{state}, root)

	c := sm(t, runOpts{bin: plainBinary}, "check", "-config", pol, "-json")
	got := byPath(t, reports(t, c))
	verdicts := map[string]string{}
	for n := range files {
		rep, ok := got[filepath.Join(root, n)]
		if !ok {
			t.Errorf("check: %s not reported", n)
			continue
		}
		verdicts[n] = rep.Verdict + " " + rep.Kind
	}
	if c.maxRSS > rssLimit {
		t.Errorf("check: peak RSS %s", mib(c.maxRSS))
	}
	if diff := changed(before, snapshot(t, []string{state}, root), nil); len(diff) > 0 {
		t.Errorf("check wrote: %v", diff)
	}

	h := sm(t, runOpts{bin: plainBinary}, "heal", "-config", pol, "-json")
	healed := map[string]bool{}
	actions := map[string]int{}
	for _, rep := range reports(t, h) {
		actions[rep.Action]++
		if rep.Action != "healed" {
			continue
		}
		healed[rep.Path] = true
		orig := files[filepath.Base(rep.Path)]
		q := filepath.Join(rep.Quarantine, filepath.Base(rep.Path))
		if b, err := os.ReadFile(q); err != nil || !bytes.Equal(b, orig) {
			t.Errorf("heal: %s: the quarantine %s does not hold the original bytes (%v)", rep.Path, q, err)
		}
	}
	if h.maxRSS > rssLimit {
		t.Errorf("heal: peak RSS %s", mib(h.maxRSS))
	}
	if diff := changed(before, snapshot(t, []string{state}, root), healed); len(diff) > 0 {
		t.Errorf("heal wrote files it did not report healed: %v", diff)
	}
	after := snapshot(t, []string{state}, root)

	c2 := sm(t, runOpts{bin: plainBinary}, "check", "-config", pol, "-json")
	for _, rep := range reports(t, c2) {
		if healed[rep.Path] && rep.Verdict != "healthy" {
			t.Errorf("a healed file does not check healthy: %s: %s %s %s", rep.Path, rep.Verdict, rep.Kind, rep.Detail)
		}
	}
	h2 := sm(t, runOpts{bin: plainBinary}, "heal", "-config", pol, "-json")
	for _, rep := range reports(t, h2) {
		if rep.Action == "healed" {
			t.Errorf("a second heal healed %s again (%s)", rep.Path, rep.Kind)
		}
	}
	if diff := changed(after, snapshot(t, []string{state}, root), nil); len(diff) > 0 {
		t.Errorf("a second heal wrote: %v", diff)
	}
	// The daemon over a fresh copy: every damaged file is healed or its refusal logged, and
	// it survives the lot.
	droot := filepath.Join(base, "droot")
	for n, b := range files {
		mustWrite(t, filepath.Join(droot, n), b)
	}
	dpol := writePolicy(t, filepath.Join(base, "dstate"), fmt.Sprintf("  - {name: j, format: jsonl, paths: [%s], settle: 50ms, max_wait: 500ms}\n  - {name: o, format: json, paths: [%s], settle: 50ms, max_wait: 500ms}\n", droot, droot))
	d := startDaemonBin(t, plainBinary, dpol)
	eventually(t, 30*time.Second, "the first scan", func() bool { return len(d.events("scan.finished")) >= 2 })
	var hwm int64
	for _, n := range sortedNames(files) {
		if !strings.HasPrefix(verdicts[n], "damaged") {
			continue
		}
		p := filepath.Join(droot, n)
		eventually(t, 10*time.Second, "a verdict on "+n, func() bool {
			hwm = max(hwm, vmHWM(d.cmd.Process.Pid))
			for _, ev := range d.events("") {
				if ev["path"] == p && (ev["msg"] == "file.healed" || ev["msg"] == "file.heal_refused" || ev["msg"] == "file.damaged") {
					return true
				}
			}
			return false
		})
	}
	if hwm > rssLimit {
		t.Errorf("daemon: peak RSS %s", mib(hwm))
	}
	d.stop(t)

	var lines []string
	for _, n := range sortedNames(files) {
		lines = append(lines, fmt.Sprintf("%-24s %s", n, verdicts[n]))
	}
	t.Logf("verdicts:\n%s\nheal actions %v; check %v (RSS %s), heal %v (RSS %s), daemon RSS %s", strings.Join(lines, "\n"), actions,
		c.dur.Round(time.Millisecond), mib(c.maxRSS), h.dur.Round(time.Millisecond), mib(h.maxRSS), mib(hwm))
	figure("pathological-content", map[string]any{"files": len(files), "verdicts": verdicts, "heal_actions": actions,
		"check_rss_mib": float64(c.maxRSS) / (1 << 20), "heal_rss_mib": float64(h.maxRSS) / (1 << 20), "daemon_rss_mib": float64(hwm) / (1 << 20)})
}

func sortedNames[V any](m map[string]V) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}
