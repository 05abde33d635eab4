package main

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"sync"
	"time"

	"github.com/sessionmedic/sessionmedic/heal/jsonv"
)

const (
	latSettle   = 100 * time.Millisecond
	latRate     = 1000 // writes per second
	damageEvery = 50   // every 50th write damages a file (20 damages per second)
	latWriters  = 4    // writer goroutines sharing the rate
)

// latFile is one session file the writer keeps.
type latFile struct {
	path    string
	jsonl   bool
	id      string
	msgs    [][]byte // JSON: the messages array
	content []byte   // what the file holds as the app last wrote it
	retired bool     // damaged: never written again, so it can settle
}

func (f *latFile) render() []byte {
	var buf bytes.Buffer
	fmt.Fprintf(&buf, `{"id":%q,"title":"bench session","updated":%d,"messages":[`, f.id, time.Now().UnixMilli())
	buf.Write(bytes.Join(f.msgs, []byte(",")))
	buf.WriteString("]}\n")
	return buf.Bytes()
}

// write is one save of the app: a JSON session replaced through a temp file and a rename,
// a JSONL session appended one record.
func (f *latFile) write(line []byte) error {
	if f.jsonl {
		if err := appendFile(f.path, append(append([]byte(nil), line...), '\n')); err != nil {
			return err
		}
		f.content = append(append(f.content, line...), '\n')
		return nil
	}
	f.msgs = append(f.msgs, line)
	if len(f.msgs) > 12 {
		f.msgs = f.msgs[len(f.msgs)-12:]
	}
	data := f.render()
	tmp := filepath.Join(filepath.Dir(f.path), "."+filepath.Base(f.path)+".tmp")
	if err := os.WriteFile(tmp, data, 0o644); err != nil {
		return err
	}
	if err := os.Rename(tmp, f.path); err != nil {
		return err
	}
	f.content = data
	return nil
}

// damage is what the apps do wrong: the tail of a longer old version left after a JSON
// value (two writers racing), or a torn last JSONL record (a crash mid-append).
func (f *latFile) damage(line []byte) error {
	var junk []byte
	if f.jsonl {
		junk = line[:len(line)/2]
	} else {
		junk = []byte("ntent\": \"an older, longer save\"}]}\n")
	}
	return appendFile(f.path, junk)
}

func appendFile(path string, data []byte) error {
	fh, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		return err
	}
	_, err = fh.Write(data)
	if cerr := fh.Close(); err == nil {
		err = cerr
	}
	return err
}

// validSession checks a healed file in full.
func validSession(data []byte, isJSONL bool) bool {
	if !isJSONL {
		return jsonv.Valid(data, jsonv.Dialect{}) == nil
	}
	return jsonvLines(data) == nil
}

// latParams is one run of the latency machinery: a writer at rate saves to nFiles session
// files in nDirs directories for dur, every damageEvery-th write damaging a file, while the
// daemon watches with settle.
type latParams struct {
	tag           string // log prefix and directory under the temp dir
	rate          int    // writes per second, damages included
	damageEvery   int
	dur           time.Duration
	nFiles, nDirs int
	settle        time.Duration
}

// latSample is one damaged file: when the damage was written, and how long until the
// daemon said it was healed.
type latSample struct {
	at  time.Time
	lat time.Duration
}

// latRun is what one run of the latency machinery measured.
type latRun struct {
	p                           latParams
	samples                     []latSample // healed damages, by damage time
	damaged, lost               int
	invalid, identical          int
	spurious, refused, reported int
	writes                      int
	start                       time.Time
	writeDur, drained           time.Duration
	maxLate                     time.Duration
	daemonCPU                   time.Duration
	rss, hwm                    int64
	unhealed                    bool // some damage was still not healed when the drain wait ended
}

// lats are the damage-to-healed latencies.
func (r *latRun) lats() []time.Duration {
	out := make([]time.Duration, len(r.samples))
	for i, s := range r.samples {
		out[i] = s.lat
	}
	return out
}

// third are the latencies of the damages written in the k-th third (0, 1, 2) of the run.
func (r *latRun) third(k int) []time.Duration {
	var out []time.Duration
	for _, s := range r.samples {
		if seg := int(s.at.Sub(r.start) * 3 / r.writeDur); min(seg, 2) == k {
			out = append(out, s.lat)
		}
	}
	return out
}

// achieved is the write rate the writer reached.
func (r *latRun) achieved() float64 { return float64(r.writes) / r.writeDur.Seconds() }

// cpuShare is the daemon's CPU over the writes and the drain, as a fraction of one core.
func (r *latRun) cpuShare() float64 {
	return r.daemonCPU.Seconds() / (r.writeDur + r.drained).Seconds()
}

func (b *bench) latency(ctx context.Context) ([]Row, error) {
	p := latParams{tag: "latency", rate: latRate, damageEvery: damageEvery, nFiles: 2000, nDirs: 100, dur: 20 * time.Second, settle: latSettle}
	if b.o.quick {
		p.nFiles, p.nDirs, p.dur = 500, 25, 5*time.Second
	}
	run, err := b.runLatency(ctx, p)
	if err != nil {
		return nil, err
	}
	all := run.lats()
	first, last := percentile(run.third(0), 50), percentile(run.third(2), 50)
	p50, p99, pmax := percentile(all, 50), percentile(all, 99), percentile(all, 100)
	bound := latSettle + 50*time.Millisecond
	rate := run.achieved()
	latRow := Row{
		Workload:     "latency",
		Goal:         fmt.Sprintf("damage-to-healed latency, %d writes/s over %d files, settle %s", latRate, p.nFiles, latSettle),
		Sessionmedic: fmt.Sprintf("p99 %s", fmtDur(p99.Round(100*time.Microsecond))),
		Peers:        "—",
		Ratio:        "—",
		Target:       fmt.Sprintf("p99 ≤ %s", fmtDur(bound)),
		Met:          metIf(len(all) > 0 && p99 <= bound),
	}
	latRow.addNote("p50 %s, max %s over %d heals", fmtDur(p50.Round(100*time.Microsecond)), fmtDur(pmax.Round(100*time.Microsecond)), len(all))
	latRow.addNote("heal time = arrival of the file.healed log line")
	latRow.addNote("daemon CPU %s over %s of writes (%.0f%% of a core), RSS %s, peak %s", fmtDur(run.daemonCPU), fmtDur(run.writeDur+run.drained), 100*run.cpuShare(), fmtBytes(run.rss), fmtBytes(run.hwm))
	latRow.metric("p50_s", p50.Seconds())
	latRow.metric("p99_s", p99.Seconds())
	latRow.metric("max_s", pmax.Seconds())
	latRow.metric("heals", float64(len(all)))
	latRow.metric("daemon_cpu_s", run.daemonCPU.Seconds())

	backlogOK := len(run.third(2)) > 0 && last <= first+50*time.Millisecond
	okRow := Row{
		Workload:     "latency",
		Goal:         "no event lost, no backlog growth",
		Sessionmedic: fmt.Sprintf("%d of %d damaged files healed", len(all), run.damaged),
		Peers:        "—",
		Ratio:        "—",
		Target:       "0 lost; last-third p50 ≤ first-third p50 + 50 ms",
		Met:          metIf(run.lost == 0 && run.invalid == 0 && backlogOK && rate >= 0.95*latRate),
	}
	okRow.addNote("p50 first third %s, last third %s", fmtDur(first.Round(100*time.Microsecond)), fmtDur(last.Round(100*time.Microsecond)))
	okRow.addNote("%d lost, %d invalid at the end, %d identical to the app's last save", run.lost, run.invalid, run.identical)
	okRow.addNote("writer achieved %.0f writes/s (max lateness %s)", rate, fmtDur(run.maxLate.Round(100*time.Microsecond)))
	if run.spurious+run.refused+run.reported > 0 {
		okRow.addNote("%d heals of undamaged files, %d refused, %d damaged-not-healed events", run.spurious, run.refused, run.reported)
	}
	if run.unhealed {
		okRow.addNote("still unhealed %s after the writer stopped", fmtDur(run.drained.Round(time.Millisecond)))
	}
	okRow.metric("damaged", float64(run.damaged))
	okRow.metric("lost", float64(run.lost))
	okRow.metric("invalid", float64(run.invalid))
	okRow.metric("identical", float64(run.identical))
	okRow.metric("p50_first_third_s", first.Seconds())
	okRow.metric("p50_last_third_s", last.Seconds())
	okRow.metric("write_rate", rate)
	okRow.metric("spurious_heals", float64(run.spurious))
	return []Row{latRow, okRow}, nil
}

// runLatency writes session files at p.rate under a daemon, damaging every p.damageEvery-th
// write, and measures when each damage is healed. Its files live under p.tag in the temp dir.
func (b *bench) runLatency(ctx context.Context, p latParams) (*latRun, error) {
	if p.rate <= 0 || p.damageEvery <= 0 || p.nFiles < latWriters || p.nDirs <= 0 {
		return nil, fmt.Errorf("latency: bad parameters %+v", p)
	}
	nFiles, nDirs, dur := p.nFiles, p.nDirs, p.dur
	dir, err := b.dir(p.tag)
	if err != nil {
		return nil, err
	}
	root := filepath.Join(dir, "sessions")
	g := newGen(6)
	pool := make([][]byte, 256)
	for i := range pool {
		pool[i] = g.sessionLine(i, 20)
	}
	files := make([]*latFile, nFiles)
	byPath := map[string]*latFile{}
	for i := range files {
		d := filepath.Join(root, fmt.Sprintf("agent-%03d", i%nDirs))
		if err := os.MkdirAll(d, 0o755); err != nil {
			return nil, err
		}
		f := &latFile{jsonl: i%2 == 1, id: fmt.Sprintf("%016x", g.r.Uint64())}
		if f.jsonl {
			f.path = filepath.Join(d, fmt.Sprintf("s%05d.jsonl", i))
			for k := 0; k < 3; k++ {
				f.content = append(append(f.content, pool[g.r.IntN(len(pool))]...), '\n')
			}
		} else {
			f.path = filepath.Join(d, fmt.Sprintf("s%05d.json", i))
			for k := 0; k < 3; k++ {
				f.msgs = append(f.msgs, pool[g.r.IntN(len(pool))])
			}
			f.content = f.render()
		}
		if err := os.WriteFile(f.path, f.content, 0o644); err != nil {
			return nil, err
		}
		files[i], byPath[f.path] = f, f
	}
	pol := filepath.Join(dir, "policy.yaml")
	if err := writePolicy(pol, root, filepath.Join(dir, "state"), p.settle.String()); err != nil {
		return nil, err
	}

	var mu sync.Mutex
	scans := map[string]bool{}
	damagedAt := map[string]time.Time{}
	healedAt := map[string]time.Time{}
	spurious, refused, reported := 0, 0, 0
	d, err := startDaemon(b.bin, pol, b.env(), func(ev logEvent) {
		mu.Lock()
		defer mu.Unlock()
		switch ev.Msg {
		case "scan.finished":
			scans[ev.str("rule")] = true
		case "file.healed":
			path := ev.str("path")
			if _, dmg := damagedAt[path]; !dmg {
				spurious++
				return
			}
			if _, seen := healedAt[path]; !seen {
				healedAt[path] = ev.At
			}
		case "file.heal_refused":
			refused++
		case "file.damaged":
			reported++
		}
	})
	if err != nil {
		return nil, err
	}
	defer d.stop()
	if err := d.waitFor(ctx, "the first scan", func() bool {
		mu.Lock()
		defer mu.Unlock()
		return len(scans) >= 2
	}); err != nil {
		return nil, err
	}
	b.logf("[%s] daemon ready over %d files; writing %d/s for %s, every %dth write a damage", p.tag, nFiles, p.rate, dur, p.damageEvery)
	cpu0, _ := procCPU(d.pid())

	// The writers: a steady p.rate writes per second against absolute due times (a late
	// write is caught up at once). Write i belongs to writer i%latWriters, which owns the
	// files k with k%latWriters == i%latWriters, so no file has two writers; every
	// p.damageEvery-th write damages a file not damaged before, which is then left alone.
	total := int(dur.Seconds() * float64(p.rate))
	interval := time.Second / time.Duration(p.rate)
	var damages []string
	var lateMu sync.Mutex
	var maxLate time.Duration
	start := time.Now()
	errs := make(chan error, latWriters)
	var wg sync.WaitGroup
	for w := 0; w < latWriters; w++ {
		var own []*latFile
		for k := w; k < len(files); k += latWriters {
			own = append(own, files[k])
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			cursor, undamaged := 0, len(own)
			var late time.Duration
			defer func() {
				lateMu.Lock()
				maxLate = max(maxLate, late)
				lateMu.Unlock()
			}()
			for i := w; i < total; i += latWriters {
				due := start.Add(time.Duration(i) * interval)
				if wait := time.Until(due); wait > 0 {
					time.Sleep(wait)
				} else {
					late = max(late, -wait)
				}
				if ctx.Err() != nil {
					errs <- ctx.Err()
					return
				}
				if undamaged < 2 {
					errs <- fmt.Errorf("ran out of undamaged files")
					return
				}
				var f *latFile
				for f == nil || f.retired {
					f = own[cursor%len(own)]
					cursor += 7 // co-prime with the share sizes used here: spreads writes over dirs
				}
				line := pool[(i*31)%len(pool)]
				if i%p.damageEvery == p.damageEvery-1 {
					if err := f.damage(line); err != nil {
						errs <- err
						return
					}
					now := time.Now()
					mu.Lock()
					damagedAt[f.path] = now
					damages = append(damages, f.path)
					mu.Unlock()
					f.retired = true
					undamaged--
					continue
				}
				if err := f.write(line); err != nil {
					errs <- err
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	if err := <-errs; err != nil {
		return nil, err
	}
	writeDur := time.Since(start)
	b.logf("[%s] %d writes in %s (%d damages); waiting for the last heals", p.tag, total, fmtDur(writeDur), len(damages))
	drain := time.Now()
	waitCtx, cancel := context.WithTimeout(ctx, 30*time.Second)
	healedAll := func() bool {
		mu.Lock()
		defer mu.Unlock()
		return len(healedAt) >= len(damagedAt)
	}
	werr := d.waitFor(waitCtx, "every damaged file to be healed", healedAll)
	cancel()
	drained := time.Since(drain)
	cpu1, _ := procCPU(d.pid())
	rss, hwm, _ := procMem(d.pid())
	if err := d.stop(); err != nil {
		b.logf("[%s] %v", p.tag, err)
	}
	if werr != nil && ctx.Err() != nil {
		return nil, ctx.Err()
	}

	mu.Lock()
	defer mu.Unlock()
	run := &latRun{p: p, damaged: len(damages), spurious: spurious, refused: refused, reported: reported,
		writes: total, start: start, writeDur: writeDur, drained: drained, maxLate: maxLate,
		daemonCPU: cpu1 - cpu0, rss: rss, hwm: hwm, unhealed: werr != nil}
	for _, path := range damages {
		h, ok := healedAt[path]
		if !ok {
			run.lost++
			continue
		}
		run.samples = append(run.samples, latSample{damagedAt[path], h.Sub(damagedAt[path])})
	}
	sort.Slice(run.samples, func(i, j int) bool { return run.samples[i].at.Before(run.samples[j].at) })
	differ := 0
	for _, path := range damages {
		f := byPath[path]
		data, err := os.ReadFile(path)
		if err != nil || !validSession(data, f.jsonl) {
			run.invalid++
			continue
		}
		want := f.content
		if !f.jsonl {
			// salvage keeps the value's bytes; the newline after it may go
			data, want = bytes.TrimRight(data, "\n"), bytes.TrimRight(want, "\n")
		}
		if bytes.Equal(data, want) {
			run.identical++
			continue
		}
		if differ++; differ <= 3 {
			b.logf("[%s] %s healed to %d bytes, the last save had %d", p.tag, path, len(data), len(want))
		}
	}
	return run, nil
}
