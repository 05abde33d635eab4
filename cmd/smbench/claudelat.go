package main

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"sync"
	"time"
)

const (
	claudeFlush        = 100 * time.Millisecond // Claude drains its write queue every 100 ms
	claudeBatchRecords = 5                      // records per batch: 50 records/s
	// claudeDamageEvery: every 5th batch is followed by a damage, 2 damages/s. A heal costs
	// the daemon much more than the appends; at this rate it keeps up on 2 cores, so the
	// latency is the heal's, not a queue's.
	claudeDamageEvery = 5
	// claudeDamagesPerFile bounds the damages of one transcript: the daemon stops healing a
	// file healed more than a few times within minutes (file.flapping), and a benchmark of
	// heal latency must stay below that.
	claudeDamagesPerFile = 2
)

// claudeLive is a transcript the writer keeps.
type claudeLive struct {
	path    string
	s       *claudeSession
	size    int64 // bytes written: the file's length while it is whole
	damages int
	waiting bool // damaged and not yet healed: its writer crashed, nothing is written to it
	retired bool // healed into something else than what was written: left alone
}

// claudeLatency: a Claude-style writer appends 50 records/s to a few live transcripts, a
// batch every 100 ms (open O_APPEND, one write, close, no lock), while the daemon watches
// with the claude-code preset (settle latSettle). After every claudeDamageEvery-th batch the
// transcript just written is damaged as a crash leaves it: a torn stub of its next record
// without '\n', or a run of NULs; or as two writers' appends interleaved leave it: a stub of
// its next record, then that record whole on the same line (the heal keeps the record). That
// transcript gets no more batches until the daemon says it healed it (file.healed); then the
// writer resumes it where it was. A transcript
// damaged claudeDamagesPerFile times is finished once healed, and the next of p.latFiles
// takes its place. The latency is from the damage write to the arrival of the file.healed
// line (latency.go's method).
func (b *bench) claudeLatency(ctx context.Context, p claudeParams) (Row, error) {
	dir, err := b.dir("claude-latency")
	if err != nil {
		return Row{}, err
	}
	defer os.RemoveAll(dir)
	home := filepath.Join(dir, "home")
	projects := filepath.Join(home, ".claude", "projects")
	pools := newClaudePools(12)
	buf := make([]byte, 0, claudeChunk+256<<10)
	files := make([]*claudeLive, p.latFiles)
	for i := range files {
		cwd := claudeCwd(i % 7)
		if err := os.MkdirAll(filepath.Join(projects, claudeSlug(cwd)), 0o700); err != nil {
			return Row{}, err
		}
		f := &claudeLive{s: newClaudeSession(pools, uint64(100+i), cwd)}
		f.path = filepath.Join(projects, claudeSlug(cwd), f.s.id+".jsonl")
		if f.size, err = writeTranscript(f.path, f.s, p.liveSize, buf); err != nil {
			return Row{}, err
		}
		files[i] = f
		// A transcript this long was written over hours, and the kernel wrote it back long
		// before it was damaged; one generated seconds ago is still dirty in the page cache,
		// and a heal's flush before its cut (apply.go, truncateLeased) would write it out
		// (~70 ms for 95 MB here): a cost of the generator, not of a heal.
		if err := syncFile(f.path); err != nil {
			return Row{}, err
		}
	}
	live := append([]*claudeLive(nil), files[:p.liveFiles]...)
	spare := files[p.liveFiles:]
	pol := filepath.Join(dir, "policy.yaml")
	state := filepath.Join(dir, "state")
	if err := writeClaudePolicy(pol, state, latSettle); err != nil {
		return Row{}, err
	}

	var mu sync.Mutex
	scanned := false
	damagedAt := map[string]time.Time{}
	shapeOf := map[string]string{}         // the damage a transcript waits on
	shapeMax := map[string]time.Duration{} // the longest latency of each damage
	var lats []time.Duration
	spurious, refused, reported := 0, 0, 0
	d, err := startDaemon(b.bin, pol, childEnv(home, state), func(ev logEvent) {
		mu.Lock()
		defer mu.Unlock()
		switch ev.Msg {
		case "scan.finished":
			scanned = true
		case "file.healed":
			t, ok := damagedAt[ev.str("path")]
			if !ok {
				spurious++
				return
			}
			lats = append(lats, ev.At.Sub(t))
			sh := shapeOf[ev.str("path")]
			shapeMax[sh] = max(shapeMax[sh], ev.At.Sub(t))
			delete(damagedAt, ev.str("path"))
		case "file.heal_refused":
			refused++
		case "file.damaged":
			reported++
		}
	})
	if err != nil {
		return Row{}, err
	}
	defer d.stop()
	if err := d.waitFor(ctx, "the first scan", func() bool {
		mu.Lock()
		defer mu.Unlock()
		return scanned
	}); err != nil {
		return Row{}, err
	}
	if _, err := waitQuiet(ctx, d, 10*time.Second); err != nil {
		return Row{}, err
	}
	b.logf("[claude] daemon ready over %d transcripts, %d live at once; writing %d records every %s for %s, a damage after one batch in %d",
		len(files), len(live), claudeBatchRecords, claudeFlush, p.latDur, claudeDamageEvery)
	cpu0, _ := procCPU(d.pid())

	r := rand.New(rand.NewPCG(14, 0))
	ticks := int(p.latDur / claudeFlush)
	records, skipped, torn, nuls, glued, cursor := 0, 0, 0, 0, 0, 0
	var maxLate time.Duration
	start := time.Now()
	for i := 0; i < ticks; i++ {
		if wait := time.Until(start.Add(time.Duration(i) * claudeFlush)); wait > 0 {
			select {
			case <-time.After(wait):
			case <-ctx.Done():
				return Row{}, ctx.Err()
			}
		} else {
			maxLate = max(maxLate, -wait)
		}
		mu.Lock()
		for _, f := range files {
			if _, still := damagedAt[f.path]; f.waiting && !still {
				f.waiting = false
				if fi, err := os.Stat(f.path); err != nil || fi.Size() != f.size {
					f.retired = true // healed into something else: the writer cannot go on
				}
			}
		}
		mu.Unlock()
		var f *claudeLive
		slot := 0
		for k := 0; k < len(live) && f == nil; k++ {
			slot = (cursor + k) % len(live)
			if c := live[slot]; !c.waiting && !c.retired {
				f = c
				cursor += k + 1
			}
		}
		if f == nil {
			skipped++
			continue
		}
		batch := f.s.take(claudeBatchRecords)
		if err := appendFile(f.path, batch); err != nil {
			return Row{}, err
		}
		f.size += int64(len(batch))
		records += claudeBatchRecords
		if i%claudeDamageEvery != claudeDamageEvery-1 || f.damages >= claudeDamagesPerFile {
			continue // (a transcript left live when no spare replaces it is written, never damaged again)
		}
		var junk []byte
		shape := [3]string{"torn tail", "NUL run", "stub glued before a record"}[(torn+nuls+glued)%3]
		switch shape {
		case "torn tail":
			next := f.s.peek()
			junk = next[:len(next)/2]
			torn++
		case "NUL run":
			junk = make([]byte, 512+r.IntN(3585))
			nuls++
		default:
			// Two writers' appends interleaved: one's stub, then the other's whole record
			// on the same line. The heal keeps the record: the transcript goes on after it.
			next := f.s.take(1)
			junk = append(append([]byte(nil), next[:len(next)/2]...), next...)
			f.size += int64(len(next))
			glued++
		}
		if err := appendFile(f.path, junk); err != nil {
			return Row{}, err
		}
		now := time.Now()
		mu.Lock()
		damagedAt[f.path], shapeOf[f.path] = now, shape
		mu.Unlock()
		f.waiting = true
		if f.damages++; f.damages == claudeDamagesPerFile && len(spare) > 0 {
			live[slot], spare = spare[0], spare[1:]
		}
	}
	writeDur := time.Since(start)
	drain := time.Now()
	waitCtx, cancel := context.WithTimeout(ctx, 30*time.Second)
	werr := d.waitFor(waitCtx, "every damaged transcript to be healed", func() bool {
		mu.Lock()
		defer mu.Unlock()
		return len(damagedAt) == 0
	})
	cancel()
	drained := time.Since(drain)
	cpu1, _ := procCPU(d.pid())
	rss, hwm, _ := procMem(d.pid())
	if err := d.stop(); err != nil {
		b.logf("[claude] %v", err)
	}
	if werr != nil && ctx.Err() != nil {
		return Row{}, ctx.Err()
	}

	mu.Lock()
	defer mu.Unlock()
	lost := len(damagedAt)
	invalid, retired, used := 0, 0, 0
	for _, f := range files {
		if f.damages > 0 {
			used++
		}
		if f.retired {
			retired++
			continue
		}
		if _, waiting := damagedAt[f.path]; waiting {
			continue
		}
		data, err := os.ReadFile(f.path)
		if err != nil || int64(len(data)) != f.size || (f.damages > 0 && claudeCheck(data, f.path) != nil) {
			invalid++
		}
	}
	p50, p99, pmax := percentile(lats, 50), percentile(lats, 99), percentile(lats, 100)
	rate := float64(records) / writeDur.Seconds()
	row := Row{
		Workload: "claude",
		Goal: fmt.Sprintf("damage-to-healed latency, Claude-style writer %d records/s in batches to %d live transcripts of %s, settle %s",
			claudeBatchRecords*int(time.Second/claudeFlush), len(live), fmtBytes(p.liveSize), fmtDur(latSettle)),
		Sessionmedic: fmt.Sprintf("p99 %s", fmtDur(p99.Round(100*time.Microsecond))),
		Peers:        "—",
		Ratio:        "—",
		Target:       "—",
		Met:          metNA,
	}
	row.addNote("p50 %s, max %s over %d heals of %d damages (%d torn tails, %d NUL runs, %d stubs glued before a record)",
		fmtDur(p50.Round(100*time.Microsecond)), fmtDur(pmax.Round(100*time.Microsecond)), len(lats), torn+nuls+glued, torn, nuls, glued)
	row.addNote("max by damage: torn tail %s, NUL run %s, stub glued before a record %s", fmtDur(shapeMax["torn tail"].Round(100*time.Microsecond)),
		fmtDur(shapeMax["NUL run"].Round(100*time.Microsecond)), fmtDur(shapeMax["stub glued before a record"].Round(100*time.Microsecond)))
	row.addNote("heal time = arrival of the file.healed log line; a damaged transcript is resumed once healed, %d damages at most; %d transcripts of %s damaged", claudeDamagesPerFile, used, fmtBytes(p.liveSize))
	row.addNote("%d lost, %d not as written after their heal, %d invalid at the end", lost, retired, invalid)
	row.addNote("writer achieved %.1f records/s (%d batches skipped: every live transcript damaged; max lateness %s)", rate, skipped, fmtDur(maxLate.Round(100*time.Microsecond)))
	row.addNote("daemon CPU %s over %s (%.0f%% of a core), RSS %s, peak %s", fmtDur(cpu1-cpu0), fmtDur(writeDur+drained), 100*(cpu1-cpu0).Seconds()/(writeDur+drained).Seconds(), fmtBytes(rss), fmtBytes(hwm))
	if spurious+refused+reported > 0 {
		row.addNote("%d heals of undamaged transcripts, %d refused, %d damaged-not-healed events", spurious, refused, reported)
	}
	if werr != nil {
		row.addNote("still unhealed %s after the writer stopped", fmtDur(drained.Round(time.Millisecond)))
	}
	row.metric("p50_s", p50.Seconds())
	row.metric("p99_s", p99.Seconds())
	row.metric("max_s", pmax.Seconds())
	row.metric("heals", float64(len(lats)))
	row.metric("damages", float64(torn+nuls+glued))
	row.metric("lost", float64(lost))
	row.metric("not_as_written", float64(retired))
	row.metric("invalid", float64(invalid))
	row.metric("records_per_s", rate)
	row.metric("spurious_heals", float64(spurious))
	row.metric("daemon_cpu_s", (cpu1 - cpu0).Seconds())
	if len(lats) > 0 {
		row.metric("daemon_cpu_per_heal_s", (cpu1-cpu0).Seconds()/float64(len(lats)))
	}
	return row, nil
}

// syncFile flushes the file at path to disk.
func syncFile(path string) error {
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	return f.Sync()
}
