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
)

// rssLimit bounds the peak RSS of one check of any single file, whatever its size (DESIGN
// §10: validation streams; memory stays bounded for any file size).
const rssLimit = 256 << 20

// realJSONL writes size bytes of valid JSONL lines quickly (a 4 MiB block written again and
// again, the last line padded to land exactly on size).
func realJSONL(t *testing.T, p string, size int64) {
	t.Helper()
	var blk bytes.Buffer
	for i := 0; blk.Len() < 4<<20; i++ {
		fmt.Fprintf(&blk, `{"id": "m%07d", "role": "user", "content": "%s"}`+"\n", i, strings.Repeat("x", 180))
	}
	f, err := os.Create(p)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var n int64
	for n+int64(blk.Len()) <= size-64 {
		if _, err := f.Write(blk.Bytes()); err != nil {
			t.Fatal(err)
		}
		n += int64(blk.Len())
	}
	pad := size - n - int64(len(`{"pad": ""}`+"\n"))
	if _, err := fmt.Fprintf(f, `{"pad": "%s"}`+"\n", strings.Repeat("y", int(pad))); err != nil {
		t.Fatal(err)
	}
}

func sparse(t *testing.T, p string, size int64) {
	t.Helper()
	f, err := os.Create(p)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if err := f.Truncate(size); err != nil {
		t.Fatal(err)
	}
}

type hugeCase struct {
	name, file string
	make       func(t *testing.T, p string)
	want       string // verdict
	limit      int64  // peak RSS bound; 0: rssLimit
}

func hc(name, file string, make func(t *testing.T, p string), want string) hugeCase {
	return hugeCase{name: name, file: file, make: make, want: want}
}

var hugeCases = []hugeCase{
	hc("1GiB-sparse-jsonl", "sparse.jsonl", func(t *testing.T, p string) { sparse(t, p, 1<<30) }, "damaged"),
	hc("1GiB-real-jsonl", "real.jsonl", func(t *testing.T, p string) { realJSONL(t, p, 1<<30) }, "healthy"),
	hc("1GiB-real-jsonl-torn-tail", "torn.jsonl", func(t *testing.T, p string) {
		realJSONL(t, p, 1<<30-40)
		f, err := os.OpenFile(p, os.O_WRONLY|os.O_APPEND, 0)
		if err != nil {
			t.Fatal(err)
		}
		defer f.Close()
		f.WriteString(`{"id": "torn", "role": "user", "con`)
	}, "damaged"),
	{name: "100MB-single-line", file: "line.jsonl", make: func(t *testing.T, p string) {
		f, err := os.Create(p)
		if err != nil {
			t.Fatal(err)
		}
		defer f.Close()
		chunk := bytes.Repeat([]byte("z"), 1_000_000)
		f.WriteString(`{"c": "`)
		for i := 0; i < 100; i++ {
			f.Write(chunk)
		}
		f.WriteString(`"}` + "\n")
		// One line is held whole while it is validated: the bound allows that line a few
		// times over, not the file.
	}, want: "healthy", limit: 512 << 20},
	hc("1GiB-sparse-json", "sparse.json", func(t *testing.T, p string) { sparse(t, p, 1<<30) }, "damaged"),
	hc("1GiB+1-over-max_file_size", "over.jsonl", func(t *testing.T, p string) { sparse(t, p, 1<<30+1) }, "skipped"),
}

// TestHugeFiles checks (and with -long heals, and runs the daemon over) gigabyte files one at
// a time and measures the binary's peak RSS for each.
func TestHugeFiles(t *testing.T) {
	figs := map[string]any{}
	start := time.Now()
	for _, c := range hugeCases {
		t.Run(c.name, func(t *testing.T) {
			dir := t.TempDir()
			p := filepath.Join(dir, c.file)
			mk := time.Now()
			c.make(t, p)
			made := time.Since(mk)
			limit := c.limit
			if limit == 0 {
				limit = rssLimit
			}
			fig := map[string]any{"make_ms": made.Milliseconds()}
			defer func() { figs[c.name] = fig }()

			before := snapshot(t, nil, dir)
			r := sm(t, runOpts{bin: plainBinary, timeout: 3 * time.Minute}, "check", "-json", p)
			if diff := changed(before, snapshot(t, nil, dir), nil); len(diff) > 0 {
				t.Errorf("check wrote: %v", diff)
			}
			reps := reports(t, r)
			fig["check_ms"], fig["check_rss_mib"] = r.dur.Milliseconds(), float64(r.maxRSS)/(1<<20)
			if len(reps) != 1 || reps[0].Verdict != c.want {
				t.Errorf("check: %+v, want one %s report", reps, c.want)
			} else {
				fig["verdict"], fig["kind"] = reps[0].Verdict, reps[0].Kind
			}
			t.Logf("check %s: %s %s in %v, peak RSS %s", c.name, fig["verdict"], fig["kind"], r.dur.Round(time.Millisecond), mib(r.maxRSS))
			if r.maxRSS > limit {
				t.Errorf("check %s: peak RSS %s, over %s", c.name, mib(r.maxRSS), mib(limit))
			}
			if !*long {
				return
			}
			state := filepath.Join(t.TempDir(), "state")
			pol := writePolicy(t, state, fmt.Sprintf("  - {name: big, format: %s, paths: [%s], settle: 100ms, max_wait: 1s}\n",
				strings.TrimPrefix(filepath.Ext(c.file), "."), dir))
			h := sm(t, runOpts{bin: plainBinary, timeout: 5 * time.Minute}, "heal", "-config", pol, "-json")
			hr := reports(t, h)
			fig["heal_ms"], fig["heal_rss_mib"] = h.dur.Milliseconds(), float64(h.maxRSS)/(1<<20)
			if len(hr) == 1 {
				fig["heal_action"], fig["heal_reason"] = hr[0].Action, hr[0].Reason
				if hr[0].Action != "healed" {
					if diff := changed(before, snapshot(t, nil, dir), nil); len(diff) > 0 {
						t.Errorf("heal (%s) wrote: %v", hr[0].Action, diff)
					}
				}
			}
			t.Logf("heal %s: %+v in %v, peak RSS %s", c.name, hr, h.dur.Round(time.Millisecond), mib(h.maxRSS))
			if h.maxRSS > limit {
				t.Errorf("heal %s: peak RSS %s, over %s", c.name, mib(h.maxRSS), mib(limit))
			}

			d := startDaemonBin(t, plainBinary, pol)
			var hwm int64
			ok := eventually(t, 5*time.Minute, "the daemon's first scan", func() bool {
				hwm = max(hwm, vmHWM(d.cmd.Process.Pid))
				return len(d.events("scan.finished")) > 0
			})
			hwm = max(hwm, vmHWM(d.cmd.Process.Pid))
			fig["daemon_rss_mib"] = float64(hwm) / (1 << 20)
			t.Logf("daemon %s: first scan done=%v, peak RSS %s", c.name, ok, mib(hwm))
			if hwm > limit {
				t.Errorf("daemon %s: peak RSS %s, over %s", c.name, mib(hwm), mib(limit))
			}
			d.stop(t)
		})
	}
	figs["total_ms"] = time.Since(start).Milliseconds()
	figure("huge-files", figs)
}

func startDaemonBin(t *testing.T, bin, pol string) *daemon {
	saved := binary
	binary = bin
	defer func() { binary = saved }()
	return startDaemon(t, pol)
}
