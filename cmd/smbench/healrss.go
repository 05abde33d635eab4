package main

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"
)

// healrss: heal peak RSS by size. A damaged JSONL file (torn last line), a damaged JSON
// document (trailing garbage) and a JSONL file whose one record is the whole size (a line
// never held: judged and copied streaming), with a torn last line, of 1, 16 and 200 MB are
// healed by `sessionmedic heal` (the CLI)
// and by `sessionmedic run` (the daemon, the file appearing in a watched directory); the
// figure is the process's peak RSS (VmHWM). -quick stops at 16 MB.
func (b *bench) healrss(ctx context.Context) ([]Row, error) {
	sizes := []int64{1e6, 16e6, 200e6}
	if b.o.quick {
		sizes = sizes[:2]
	}
	dir, err := b.dir("healrss")
	if err != nil {
		return nil, err
	}
	const bound = 128 << 20
	var rows []Row
	for _, format := range []string{"jsonl", "json", "longline"} {
		ext := format
		if format == "longline" {
			ext = "jsonl"
		}
		for _, size := range sizes {
			src := filepath.Join(dir, fmt.Sprintf("damaged-%d-%s.%s", size, format, ext))
			if err := writeDamaged(src, format, size); err != nil {
				return nil, err
			}
			for _, mode := range []string{"cli", "daemon"} {
				var m healRun
				var err error
				if mode == "cli" {
					m, err = b.healCLI(ctx, dir, src, ext)
				} else {
					m, err = b.healDaemon(ctx, dir, src, ext)
				}
				if err != nil {
					os.Remove(src)
					return nil, fmt.Errorf("%s %s %s: %w", mode, fmtBytes(size), format, err)
				}
				what := map[string]string{"jsonl": "JSONL, torn last line", "json": "JSON, trailing garbage",
					"longline": "JSONL of one record that long, torn last line"}[format]
				r := Row{
					Workload:     "healrss",
					Goal:         fmt.Sprintf("peak RSS healing a %s %s (%s)", fmtMB(size), what, mode),
					Sessionmedic: "peak RSS " + fmtBytes(m.peak),
					Peers:        "—",
					Target:       "≤ 128 MiB",
					Met:          metIf(m.peak <= bound && m.action == "healed"),
				}
				r.Ratio = fmt.Sprintf("%.2f× file", float64(m.peak)/float64(size))
				r.addNote("%s: %s %s in %s", mode, m.action, m.strategy, fmtDur(m.wall))
				if m.action != "healed" {
					r.addNote("NOT healed: %s", m.reason)
				}
				r.addNote("%s", m.how)
				r.metric("max_rss_bytes", float64(m.peak))
				r.metric("file_bytes", float64(size))
				r.metric("wall_s", m.wall.Seconds())
				rows = append(rows, r)
				b.logf("[healrss] %s %s %s: peak RSS %s, %s", mode, fmtMB(size), format, fmtBytes(m.peak), m.action)
			}
			os.Remove(src)
		}
	}
	return rows, nil
}

func fmtMB(n int64) string { return strconv.FormatInt(n/1e6, 10) + " MB" }

// writeDamaged writes a session of about size bytes: JSONL records with a torn last line, or
// one JSON document (an object holding a message array) followed by trailing garbage.
func writeDamaged(path, format string, size int64) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	w := bufio.NewWriterSize(f, 1<<20)
	var n int64
	rec := func(i int) string {
		role := "user"
		if i%2 == 1 {
			role = "assistant"
		}
		return fmt.Sprintf(`{"role":%q,"content":"message %d: %s","ts":%d}`, role, i, strings.Repeat("lorem ipsum dolor sit amet ", 6), 1700000000+i)
	}
	switch format {
	case "longline":
		w.WriteString(`{"role":"tool","content":"`)
		for n < size {
			k, _ := w.WriteString(strings.Repeat("lorem ipsum dolor sit amet ", 1<<10))
			n += int64(k)
		}
		w.WriteString(`"}` + "\n" + `{"role":"user","content":"torn`)
	case "jsonl":
		for i := 0; n < size; i++ {
			k, _ := w.WriteString(rec(i) + "\n")
			n += int64(k)
		}
		w.WriteString(`{"role":"user","content":"torn`)
	default:
		k, _ := w.WriteString(`{"messages":[`)
		n += int64(k)
		for i := 0; n < size; i++ {
			s := rec(i)
			if i > 0 {
				s = "," + s
			}
			k, _ := w.WriteString(s)
			n += int64(k)
		}
		w.WriteString("]}\n}garbage{\"x\":")
	}
	if err := w.Flush(); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

type healRun struct {
	peak                     int64
	action, strategy, reason string
	wall                     time.Duration
	how                      string
}

// healCLI copies src into a fresh directory and runs `sessionmedic heal -json` on it.
func (b *bench) healCLI(ctx context.Context, dir, src, format string) (healRun, error) {
	run, err := os.MkdirTemp(dir, "cli-")
	if err != nil {
		return healRun{}, err
	}
	defer os.RemoveAll(run)
	path := filepath.Join(run, "session."+format)
	if err := copyFile(src, path); err != nil {
		return healRun{}, err
	}
	env := childEnv(filepath.Join(run, "home"), filepath.Join(run, "state"))
	resetPeakRSS()
	every := 2 * time.Millisecond
	res, peaks, err := runSampled(ctx, run, env, &every, b.bin, "heal", "-json", path)
	if err != nil {
		return healRun{}, fmt.Errorf("sessionmedic heal: %w (stderr: %s)", err, res.Stderr)
	}
	var rep struct{ Action, Strategy, Reason, Detail string }
	out := strings.TrimSpace(res.Stdout.text())
	if err := json.Unmarshal([]byte(out), &rep); err != nil {
		return healRun{}, fmt.Errorf("sessionmedic heal: exit %d, output %q (stderr: %s)", res.Code, out, res.Stderr)
	}
	m := healRun{action: rep.Action, strategy: rep.Strategy, reason: rep.Reason + rep.Detail, wall: res.Wall}
	m.peak, m.how = peaks.HWM, fmt.Sprintf("VmHWM sampled every %s until exit (%d samples)", every, peaks.Samples)
	if peaks.Samples == 0 {
		m.peak, m.how = res.MaxRSS, "wait4 maxrss"
	}
	return m, nil
}

// healDaemon starts the daemon on an empty watched directory, moves a copy of src into it,
// waits for the heal and reads the daemon's VmHWM.
func (b *bench) healDaemon(ctx context.Context, dir, src, format string) (healRun, error) {
	run, err := os.MkdirTemp(dir, "daemon-")
	if err != nil {
		return healRun{}, err
	}
	defer os.RemoveAll(run)
	root := filepath.Join(run, "sessions")
	if err := os.MkdirAll(root, 0o755); err != nil {
		return healRun{}, err
	}
	staged := filepath.Join(run, "staged."+format)
	if err := copyFile(src, staged); err != nil {
		return healRun{}, err
	}
	pol := filepath.Join(run, "policy.yaml")
	if err := writePolicy(pol, root, filepath.Join(run, "state"), ""); err != nil {
		return healRun{}, err
	}
	path := filepath.Join(root, "session."+format)
	var mu sync.Mutex
	scans := map[string]bool{}
	var done *logEvent
	d, err := startDaemon(b.bin, pol, childEnv(filepath.Join(run, "home"), filepath.Join(run, "state")), func(ev logEvent) {
		mu.Lock()
		defer mu.Unlock()
		switch ev.Msg {
		case "scan.finished":
			scans[ev.str("rule")] = true
		case "file.healed", "file.heal_refused":
			if ev.str("path") == path && done == nil {
				e := ev
				done = &e
			}
		}
	})
	if err != nil {
		return healRun{}, err
	}
	defer d.stop()
	if err := d.waitFor(ctx, "the first scan", func() bool {
		mu.Lock()
		defer mu.Unlock()
		return len(scans) >= 2
	}); err != nil {
		return healRun{}, err
	}
	_, before, _ := procMem(d.pid())
	start := time.Now()
	if err := os.Rename(staged, path); err != nil {
		return healRun{}, err
	}
	if err := d.waitFor(ctx, "the heal of "+path, func() bool {
		mu.Lock()
		defer mu.Unlock()
		return done != nil
	}); err != nil {
		return healRun{}, err
	}
	wall := time.Since(start)
	time.Sleep(200 * time.Millisecond) // the verification and last-good copy after the event
	_, hwm, err := procMem(d.pid())
	if err != nil {
		return healRun{}, err
	}
	m := healRun{peak: hwm, wall: wall, how: fmt.Sprintf("daemon VmHWM after the heal (%s before the file appeared); wall from the rename into the watched directory to the heal event", fmtBytes(before))}
	m.action = strings.TrimPrefix(done.Msg, "file.")
	if m.action == "heal_refused" {
		m.action, m.reason = "refused", done.str("reason")
	}
	m.strategy = done.str("strategy")
	return m, nil
}

func copyFile(src, dst string) error {
	in, err := os.Open(src)
	if err != nil {
		return err
	}
	defer in.Close()
	out, err := os.Create(dst)
	if err != nil {
		return err
	}
	if _, err := bufio.NewReaderSize(in, 1<<20).WriteTo(out); err != nil {
		out.Close()
		return err
	}
	return out.Close()
}
