package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/sessionmedic/sessionmedic/internal/damage"
)

// apps: the apps' own formats at the sizes heavy users reach. A Claude Code transcript and a
// Codex rollout with a glued middle record (two records on one line), an OpenClaw transcript
// and a Gemini CLI chat with a torn last line, and a CoPaw and a PraisonAI session document
// with another write's bytes after it, of 100 MB (and Claude's of 300 MB; -quick: 16 MB
// each), are checked and healed by
// the CLI (`check -json`, `heal -json`: wall time and peak RSS, sampled), beside the
// physical reference of one `cp` of the file with an fsync. Then a Claude Code transcript
// healed beside a last-good copy, in three shapes (appsLastGood). Then the daemon's first scan of
// a healthy 20 MB OpenClaw transcript under the sidecar's GOMEMLIMIT, as a Kubernetes
// sidecar meets it. Peak RSS is given above the idle size of the same command on an empty
// tree.
func (b *bench) appsBench(ctx context.Context) ([]Row, error) {
	dir, err := b.dir("apps")
	if err != nil {
		return nil, err
	}
	type appCase struct {
		app, preset string
		size        int64
	}
	cases := []appCase{{"Claude Code", "claude-code", 100e6}, {"Claude Code", "claude-code", 300e6}, {"Codex", "codex", 100e6}, {"OpenClaw", "openclaw", 100e6},
		{"Gemini CLI", "gemini-cli", 100e6}, {"CoPaw", "copaw", 100e6}, {"PraisonAI", "praisonai", 100e6}}
	if b.o.quick {
		cases = []appCase{{"Claude Code", "claude-code", 16e6}, {"Codex", "codex", 16e6}, {"OpenClaw", "openclaw", 16e6},
			{"Gemini CLI", "gemini-cli", 16e6}, {"CoPaw", "copaw", 16e6}, {"PraisonAI", "praisonai", 16e6}}
	}
	idle, err := b.idleRSS(ctx, dir)
	if err != nil {
		return nil, err
	}
	b.logf("[apps] idle peak RSS (check of an empty tree): %s", fmtBytes(idle))
	const above = 64 << 20
	var rows []Row
	for _, c := range cases {
		run := filepath.Join(dir, fmt.Sprintf("%s-%d", c.preset, c.size))
		path, healthy, damage, err := writeAppTranscript(run, c.preset, c.size)
		if err != nil {
			return rows, err
		}
		noun := map[string]string{"copaw": "session document", "praisonai": "session document", "gemini-cli": "chat"}[c.preset]
		if noun == "" {
			noun = "transcript"
		}
		what := fmt.Sprintf("a %s %s %s, %s", fmtMB(c.size), c.app, noun, damage)
		cp, err := cpFsync(path, filepath.Join(run, "cp-reference"))
		if err != nil {
			return rows, err
		}
		env := childEnv(filepath.Join(run, "home"), filepath.Join(run, "state"))
		every := 5 * time.Millisecond
		resetPeakRSS()
		res, peaks, err := runSampled(ctx, run, env, &every, b.bin, "check", "-json", "-preset", c.preset, path)
		if err != nil {
			return rows, fmt.Errorf("check %s: %w (stderr: %s)", what, err, res.Stderr)
		}
		r := Row{Workload: "apps", Goal: "peak RSS checking " + what, Sessionmedic: fmt.Sprintf("peak RSS %s (%s above idle)", fmtBytes(peaks.HWM), fmtBytes(peaks.HWM-idle)),
			Peers: "—", Target: "≤ idle + 64 MiB", Met: metIf(peaks.HWM-idle <= above)}
		r.Ratio = fmt.Sprintf("%.2f× file", float64(peaks.HWM)/float64(c.size))
		r.addNote("check in %s (%.0f MB/s; target ≥ 1 GB/s); verdict %s", fmtDur(res.Wall), float64(c.size)/res.Wall.Seconds()/1e6, firstField(res.Stdout.text(), "verdict"))
		r.metric("max_rss_bytes", float64(peaks.HWM))
		r.metric("wall_s", res.Wall.Seconds())
		rows = append(rows, r)
		resetPeakRSS()
		res, peaks, err = runSampled(ctx, run, env, &every, b.bin, "heal", "-json", "-preset", c.preset, path)
		if err != nil {
			return rows, fmt.Errorf("heal %s: %w (stderr: %s)", what, err, res.Stderr)
		}
		action, strategy := firstField(res.Stdout.text(), "action"), firstField(res.Stdout.text(), "strategy")
		got, _ := os.ReadFile(path)
		same := bytes.Equal(got, healthy)
		got = nil
		r = Row{Workload: "apps", Goal: "healing " + what, Sessionmedic: fmt.Sprintf("%s, peak RSS %s (%s above idle)", fmtDur(res.Wall), fmtBytes(peaks.HWM), fmtBytes(peaks.HWM-idle)),
			Peers: "cp + fsync " + fmtDur(cp), Target: "≤ idle + 64 MiB; ≤ 1.0 s and ≤ 2× cp + fsync",
			Met: metIf(action == "healed" && peaks.HWM-idle <= above && res.Wall <= time.Second && res.Wall <= 2*cp)}
		r.setRatio(res.Wall.Seconds() / cp.Seconds())
		r.addNote("%s %s; the result %s the file before the damage", action, strategy, map[bool]string{true: "is byte for byte", false: "differs from"}[same])
		r.addNote("memory met: %v; time met: %v", peaks.HWM-idle <= above, res.Wall <= time.Second && res.Wall <= 2*cp)
		r.metric("max_rss_bytes", float64(peaks.HWM))
		r.metric("wall_s", res.Wall.Seconds())
		r.metric("cp_fsync_s", cp.Seconds())
		rows = append(rows, r)
		b.logf("[apps] %s: check and heal done (%s, %s)", what, action, fmtDur(res.Wall))
		os.RemoveAll(run)
		if err := ctx.Err(); err != nil {
			return rows, err
		}
	}
	lg, err := b.appsLastGood(ctx, dir, idle)
	rows = append(rows, lg...)
	if err != nil {
		return rows, err
	}
	lr, err := b.appsLongRecords(ctx, dir, idle)
	rows = append(rows, lr...)
	if err != nil {
		return rows, err
	}
	r, err := b.appsFirstScan(ctx, dir, idle)
	if err != nil {
		return rows, err
	}
	return append(rows, r), nil
}

// appsLastGood: a Claude Code transcript of 50 MB (-quick: 8 MB) healed beside the last-good
// copy a heal of an older version of it kept, in four shapes: rewritten with a record glued
// (the copy is the version before: the salvage keeps as much), cut short by a lost write with
// a record glued and without (the copy holds what it lost: healed from the copy; the second a
// strict line-aligned prefix of the copy, sound in its own bytes), and with a record turned
// to NULs since a copy of its first 80 % (healed by the union of the copy and the salvage).
func (b *bench) appsLastGood(ctx context.Context, dir string, idle int64) ([]Row, error) {
	size := int64(50e6)
	if b.o.quick {
		size = 8e6
	}
	run := filepath.Join(dir, "last-good")
	defer os.RemoveAll(run)
	path, healthy, _, err := writeAppTranscript(run, "claude-code", size)
	if err != nil {
		return nil, err
	}
	lines := bytes.SplitAfter(healthy, []byte("\n"))
	lines = lines[:len(lines)-1]        // the empty piece after the last '\n'
	glued := func(ls [][]byte) []byte { // the record at a quarter glued to the next
		i := len(ls) / 4
		out := bytes.Join(ls[:i], nil)
		out = append(out, bytes.TrimSuffix(ls[i], []byte("\n"))...)
		return append(out, bytes.Join(ls[i+1:], nil)...)
	}
	nuled := slices.Clone(lines)
	i := len(nuled)/4 + 1
	nuled[i] = append(bytes.Repeat([]byte{0}, len(nuled[i])-1), '\n')
	shapes := []struct {
		what          string
		copy, damaged []byte
		want          []byte // the file healed
	}{
		{"rewritten with a record glued, beside the version before", healthy, glued(lines), healthy},
		{"cut short by a lost write (its last third) and a record glued, beside the version before", healthy, glued(lines[:2*len(lines)/3]), healthy},
		{"cut short by a lost write (its last third), beside the version before", healthy, bytes.Join(lines[:2*len(lines)/3], nil), healthy},
		{"with a record turned to NULs and one glued, beside a copy of its first 80 %", bytes.Join(lines[:4*len(lines)/5], nil), glued(nuled), healthy},
	}
	cp, err := cpFsync(path, filepath.Join(run, "cp-reference"))
	if err != nil {
		return nil, err
	}
	var rows []Row
	for k, sh := range shapes {
		state := filepath.Join(run, fmt.Sprintf("state-%d", k))
		env := childEnv(filepath.Join(run, "home"), state)
		if err := os.WriteFile(path, sh.copy, 0o600); err != nil {
			return rows, err
		}
		if res, err := runTimed(ctx, run, env, b.bin, "heal", "-json", "-preset", "claude-code", path); err != nil {
			return rows, fmt.Errorf("heal of the healthy version: %w (stderr: %s)", err, res.Stderr)
		}
		tmp := path + ".tmp"
		if err := os.WriteFile(tmp, sh.damaged, 0o600); err != nil {
			return rows, err
		}
		if err := os.Rename(tmp, path); err != nil {
			return rows, err
		}
		every := 5 * time.Millisecond
		resetPeakRSS()
		res, peaks, err := runSampled(ctx, run, env, &every, b.bin, "heal", "-json", "-preset", "claude-code", path)
		if err != nil {
			return rows, fmt.Errorf("heal %s: %w (stderr: %s)", sh.what, err, res.Stderr)
		}
		action, strategy := firstField(res.Stdout.text(), "action"), firstField(res.Stdout.text(), "strategy")
		got, _ := os.ReadFile(path)
		same := bytes.Equal(got, sh.want)
		got = nil
		what := fmt.Sprintf("a %s Claude Code transcript %s", fmtMB(size), sh.what)
		r := Row{Workload: "apps", Goal: "healing " + what, Sessionmedic: fmt.Sprintf("%s, peak RSS %s (%s above idle)", fmtDur(res.Wall), fmtBytes(peaks.HWM), fmtBytes(peaks.HWM-idle)),
			Peers: "cp + fsync " + fmtDur(cp), Target: "≤ idle + 64 MiB",
			Met: metIf(action == "healed" && same && peaks.HWM-idle <= 64<<20)}
		r.setRatio(res.Wall.Seconds() / cp.Seconds())
		r.addNote("%s %s; the result %s the transcript before the damage", action, strategy, map[bool]string{true: "is byte for byte", false: "differs from"}[same])
		r.metric("max_rss_bytes", float64(peaks.HWM))
		r.metric("wall_s", res.Wall.Seconds())
		r.metric("cp_fsync_s", cp.Seconds())
		rows = append(rows, r)
		b.logf("[apps] %s: %s %s (%s, %s)", what, action, strategy, fmtDur(res.Wall), fmtBytes(peaks.HWM))
		if err := ctx.Err(); err != nil {
			return rows, err
		}
	}
	return rows, nil
}

// appsLongRecords: a Claude Code transcript of 100 MB (-quick: 16 MB) with records longer
// than the line window: two adjacent ones grown to 5 MiB each (a member of 5 MiB) and glued
// into one 10.5 MiB line, healed (the salvage splits them: the result is the transcript
// before the damage); and, healthy, checked: one holding an array of 40 strings of 512 KiB
// — a 20 MiB record whose skeleton (its members, each string cut at 1 MiB) is over 16 MiB,
// its strings cut at 64 KiB instead —; one of 100 such strings (50 MiB); and ones holding
// 500,000 and 1,400,000 strings of 40 bytes (21 and 60 MiB records whose skeletons at any
// cut are over 16 MiB: judged on what Claude Code's checks read of them, else read whole).
func (b *bench) appsLongRecords(ctx context.Context, dir string, idle int64) ([]Row, error) {
	size := int64(100e6)
	if b.o.quick {
		size = 16e6
	}
	run := filepath.Join(dir, "long-records")
	defer os.RemoveAll(run)
	path, healthy, _, err := writeAppTranscript(run, "claude-code", size)
	if err != nil {
		return nil, err
	}
	lines := bytes.SplitAfter(healthy, []byte("\n"))
	grow := func(l, member []byte) []byte { // member inserted after the record's first one
		k := bytes.Index(l, []byte(`",`)) + 2
		return append(append(append(bytes.Clone(l[:k]), member...), ','), l[k:]...)
	}
	i := len(lines) / 2
	for !bytes.HasPrefix(lines[i], []byte(`{"parentUuid"`)) || !bytes.HasPrefix(lines[i+1], []byte(`{"parentUuid"`)) {
		i++
	}
	five := []byte(`"toolUseResult":"` + strings.Repeat("y", 5<<20) + `"`)
	big := slices.Clone(lines)
	big[i], big[i+1] = grow(lines[i], five), grow(lines[i+1], five)
	before := bytes.Join(big, nil)
	glued := bytes.Join(append(append(slices.Clone(big[:i]), bytes.TrimSuffix(big[i], []byte("\n"))), big[i+1:]...), nil)
	strs := make([]string, 40)
	for k := range strs {
		strs[k] = `"` + strings.Repeat("z", 512<<10) + `"`
	}
	skel := slices.Clone(lines)
	skel[i] = grow(lines[i], []byte(`"toolUseResult":[`+strings.Join(strs, ",")+`]`))
	skel50 := slices.Clone(lines)
	skel50[i] = grow(lines[i], []byte(`"toolUseResult":[`+strings.Repeat(strs[0]+",", 99)+strs[0]+`]`))
	short := `"` + strings.Repeat("s", 40) + `"`
	many := slices.Clone(lines)
	many[i] = grow(lines[i], []byte(`"toolUseResult":[`+strings.Repeat(short+",", 499_999)+short+`]`))
	many60 := slices.Clone(lines)
	many60[i] = grow(lines[i], []byte(`"toolUseResult":[`+strings.Repeat(short+",", 1_399_999)+short+`]`))
	shapes := []struct {
		what, cmd     string
		damaged, want []byte
	}{
		{"two records of 5 MiB glued into one 10.5 MiB line", "heal", glued, before},
		{"healthy, holding a 20 MiB record of 40 strings of 512 KiB (its skeleton over 16 MiB at the first cut)", "check", bytes.Join(skel, nil), nil},
		{"healthy, holding a 50 MiB record of 100 strings of 512 KiB (its skeleton over 16 MiB at the first cut)", "check", bytes.Join(skel50, nil), nil},
		{"healthy, holding a 21 MiB record of 500,000 strings of 40 bytes (its skeleton over 16 MiB at any cut)", "check", bytes.Join(many, nil), nil},
		{"healthy, holding a 60 MiB record of 1,400,000 strings of 40 bytes (its skeleton over 16 MiB at any cut)", "check", bytes.Join(many60, nil), nil},
	}
	var rows []Row
	for k, sh := range shapes {
		env := childEnv(filepath.Join(run, "home"), filepath.Join(run, fmt.Sprintf("state-%d", k)))
		if err := os.WriteFile(path, sh.damaged, 0o600); err != nil {
			return rows, err
		}
		every := 5 * time.Millisecond
		resetPeakRSS()
		res, peaks, err := runSampled(ctx, run, env, &every, b.bin, sh.cmd, "-json", "-preset", "claude-code", path)
		if err != nil {
			return rows, fmt.Errorf("%s %s: %w (stderr: %s)", sh.cmd, sh.what, err, res.Stderr)
		}
		verdict, action, strategy := firstField(res.Stdout.text(), "verdict"), firstField(res.Stdout.text(), "action"), firstField(res.Stdout.text(), "strategy")
		ok := verdict == "healthy"
		note := "verdict " + verdict
		if sh.want != nil {
			got, _ := os.ReadFile(path)
			ok = action == "healed" && bytes.Equal(got, sh.want)
			note = fmt.Sprintf("%s %s; the result %s the transcript before the damage", action, strategy, map[bool]string{true: "is byte for byte", false: "differs from"}[ok])
		}
		what := fmt.Sprintf("%s a %s Claude Code transcript, %s", map[string]string{"heal": "healing", "check": "checking"}[sh.cmd], fmtMB(size), sh.what)
		r := Row{Workload: "apps", Goal: what, Sessionmedic: fmt.Sprintf("%s, peak RSS %s (%s above idle)", fmtDur(res.Wall), fmtBytes(peaks.HWM), fmtBytes(peaks.HWM-idle)),
			Peers: "—", Target: "≤ idle + 64 MiB", Met: metIf(ok && peaks.HWM-idle <= 64<<20)}
		r.addNote("%s", note)
		r.metric("max_rss_bytes", float64(peaks.HWM))
		r.metric("wall_s", res.Wall.Seconds())
		rows = append(rows, r)
		b.logf("[apps] %s: %s (%s, %s)", what, note, fmtDur(res.Wall), fmtBytes(peaks.HWM))
		if err := ctx.Err(); err != nil {
			return rows, err
		}
	}
	return rows, nil
}

// idleRSS is the peak RSS of `check -json` of an empty tree: the process's own size.
func (b *bench) idleRSS(ctx context.Context, dir string) (int64, error) {
	empty := filepath.Join(dir, "empty")
	if err := os.MkdirAll(empty, 0o755); err != nil {
		return 0, err
	}
	resetPeakRSS()
	res, err := runTimed(ctx, dir, childEnv(filepath.Join(dir, "home"), filepath.Join(dir, "state")), b.bin, "check", "-json", empty)
	if err != nil && res.Code != 0 {
		return 0, fmt.Errorf("check of an empty tree: %w", err)
	}
	return res.MaxRSS, nil
}

// appsFirstScan: the daemon's first scan of one healthy 20 MB OpenClaw transcript (the
// sidecar's case), under GOMEMLIMIT=56MiB.
func (b *bench) appsFirstScan(ctx context.Context, dir string, idle int64) (Row, error) {
	run := filepath.Join(dir, "first-scan")
	defer os.RemoveAll(run)
	path, healthy, _, err := writeAppTranscript(run, "openclaw", 20e6)
	if err != nil {
		return Row{}, err
	}
	if err := os.WriteFile(path, healthy, 0o600); err != nil { // the healthy version
		return Row{}, err
	}
	store := filepath.Join(filepath.Dir(path), "sessions.json")
	sid := strings.TrimSuffix(filepath.Base(path), ".jsonl")
	if err := os.WriteFile(store, []byte(fmt.Sprintf(`{"agent:main:main":{"sessionId":%q,"updatedAt":1795247915694,"sessionFile":%q}}`, sid, path)), 0o600); err != nil {
		return Row{}, err
	}
	pol := filepath.Join(run, "policy.yaml")
	p := fmt.Sprintf("version: 1\nstate_dir: %q\nlog: {format: json, level: info}\nrules:\n  - name: openclaw\n    preset: openclaw\n    paths: [%q]\n",
		filepath.Join(run, "state"), filepath.Join(run, "state-oc"))
	if err := os.WriteFile(pol, []byte(p), 0o644); err != nil {
		return Row{}, err
	}
	env := append(childEnv(filepath.Join(run, "home"), filepath.Join(run, "state")), "GOMEMLIMIT=56MiB")
	start := time.Now()
	d, err := startDaemon(b.bin, pol, env, func(logEvent) {})
	if err != nil {
		return Row{}, err
	}
	defer d.stop()
	if err := d.waitFor(ctx, "the first scan", func() bool { return d.count("scan.finished") > 0 }); err != nil {
		return Row{}, err
	}
	wall := time.Since(start)
	time.Sleep(200 * time.Millisecond)
	_, hwm, err := procMem(d.pid())
	if err != nil {
		return Row{}, err
	}
	r := Row{Workload: "apps", Goal: "daemon first scan of a healthy 20 MB OpenClaw transcript (GOMEMLIMIT=56MiB)",
		Sessionmedic: fmt.Sprintf("peak RSS %s (%s above the CLI's idle)", fmtBytes(hwm), fmtBytes(hwm-idle)), Peers: "—",
		Target: "≤ idle + 64 MiB", Met: metIf(hwm-idle <= 64<<20)}
	r.Ratio = fmt.Sprintf("%.2f× file", float64(hwm)/20e6)
	r.addNote("first scan finished %s after start; VmHWM read after it", fmtDur(wall))
	r.metric("max_rss_bytes", float64(hwm))
	return r, nil
}

// writeAppTranscript writes, under run, a transcript of the preset's app of about size bytes
// where the app keeps it, damaged (Claude Code: a middle record glued to the next; OpenClaw:
// its last line torn), and returns its path, its bytes before the damage, and what the
// damage is.
func writeAppTranscript(run, preset string, size int64) (path string, healthy []byte, what string, err error) {
	var buf bytes.Buffer
	switch preset {
	case "claude-code":
		s := newClaudeSession(newClaudePools(21), 21, "/home/user/src/demo")
		dir := filepath.Join(run, "home", ".claude", "projects", claudeSlug("/home/user/src/demo"))
		path = filepath.Join(dir, "7c2e1b4a-9d3f-4e8a-b6c1-2f5a8d9e0b13.jsonl")
		healthy = s.fill(nil, int(size))
		what = "a middle record glued to the next"
	case "codex":
		// A paginated rollout (codex.md): session_meta, then response items numbered on.
		const id = "01a20539-677f-7710-87e4-54a740761238"
		path = filepath.Join(run, "home", ".codex", "sessions", "2026", "11", "22", "rollout-2026-11-22T21-46-17-"+id+".jsonl")
		g := newGen(23)
		fmt.Fprintf(&buf, `{"timestamp":"2026-11-22T21:46:17.895Z","ordinal":0,"type":"session_meta","payload":{"id":%q,"timestamp":"2026-11-22T21:46:17.862Z","cwd":"/tmp/demo/proj","originator":"codex_exec","cli_version":"0.169.0","source":"exec","model_provider":"mock"}}`+"\n", id)
		for i := 1; int64(buf.Len()) < size; i++ {
			role, kind := "user", "input_text"
			if i%2 == 0 {
				role, kind = "assistant", "output_text"
			}
			text, _ := json.Marshal(g.content(role, 20+i%200))
			fmt.Fprintf(&buf, `{"timestamp":"2026-11-22T21:46:18.000Z","ordinal":%d,"type":"response_item","payload":{"type":"message","id":"msg_%08x","role":%q,"content":[{"type":%q,"text":%s}]}}`+"\n", i, i, role, kind, text)
		}
		healthy = buf.Bytes()
		what = "a middle record glued to the next"
	case "openclaw":
		dir := filepath.Join(run, "state-oc", "agents", "main", "sessions")
		path = filepath.Join(dir, "5dbda090-2ac0-44ad-b015-c3eca97cfdce.jsonl")
		g := newGen(22)
		buf.WriteString(`{"type":"session","version":3,"id":"5dbda090-2ac0-44ad-b015-c3eca97cfdce","timestamp":"2026-11-21T07:58:37.464Z","cwd":"/home/app/.openclaw/workspace"}` + "\n")
		parent := "null"
		for i := 0; int64(buf.Len()) < size; i++ {
			role := "user"
			if i%2 == 1 {
				role = "assistant"
			}
			text, _ := json.Marshal(g.content(role, 20+i%200))
			id := fmt.Sprintf("%08x", i)
			fmt.Fprintf(&buf, `{"type":"message","id":%q,"parentId":%s,"timestamp":"2026-11-21T07:58:37.464Z","message":{"role":%q,"content":[{"type":"text","text":%s}],"timestamp":1795247914694}}`+"\n", id, parent, role, text)
			parent = fmt.Sprintf("%q", id)
		}
		healthy = buf.Bytes()
		what = "its last line torn"
	case "gemini-cli":
		// A chat as Gemini CLI appends it (gemini-cli.md): the metadata record, then messages
		// each followed by a $set of lastUpdated; its project's .project_root beside it.
		gemini := filepath.Join(run, "home", ".gemini")
		path = filepath.Join(gemini, "tmp", "proj", "chats", "session-2026-11-22T21-40-7759d9fe.jsonl")
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			return "", nil, "", err
		}
		if err := os.WriteFile(filepath.Join(gemini, "tmp", "proj", ".project_root"), []byte("/tmp/demo/proj"), 0o644); err != nil {
			return "", nil, "", err
		}
		g := newGen(24)
		buf.WriteString(`{"sessionId":"7759d9fe-6f50-4824-9ae2-297b0ba46ecd","projectHash":"342670b99fa44fb66b2f3d357f6058dc84472b699facf440efe047fbfb07d363","startTime":"2026-11-22T21:40:53.398Z","lastUpdated":"2026-11-22T21:40:53.398Z","kind":"main"}` + "\n")
		for i := 0; int64(buf.Len()) < size; i++ {
			text, _ := json.Marshal(g.content("user", 20+i%200))
			if i%2 == 0 {
				fmt.Fprintf(&buf, `{"id":"%08x-0000-4000-8000-000000000000","timestamp":"2026-11-22T21:41:58.581Z","type":"user","content":[{"text":%s}]}`+"\n", i, text)
			} else {
				fmt.Fprintf(&buf, `{"id":"%08x-0000-4000-8000-000000000000","timestamp":"2026-11-22T21:41:58.658Z","type":"gemini","content":%s,"thoughts":[],"model":"gemini-3.1-pro-preview"}`+"\n", i, text)
			}
			buf.WriteString(`{"$set":{"lastUpdated":"2026-11-22T21:41:58.658Z"}}` + "\n")
		}
		healthy = buf.Bytes()
		what = "its last line torn"
	case "copaw", "praisonai":
		// One JSON document a session (copaw.md: one line, agent.memory.content pairs;
		// praisonai.md: indented, messages), and another write's bytes after it.
		g := newGen(25)
		if preset == "copaw" {
			path = filepath.Join(run, "copaw", "sessions", "console", "default_console--default.json")
			buf.WriteString(`{"agent": {"memory": {"_compressed_summary": "", "content": [`)
			for i := 0; int64(buf.Len()) < size; i++ {
				role := map[bool]string{true: "user", false: "assistant"}[i%2 == 0]
				text, _ := json.Marshal(g.content(role, 20+i%200))
				if i > 0 {
					buf.WriteString(", ")
				}
				fmt.Fprintf(&buf, `[{"id": "m%07d", "name": %q, "role": %q, "content": %s, "metadata": {}, "timestamp": "2026-11-21 07:42:09.662"}, []]`, i, role, role, text)
			}
			buf.WriteString(`]}, "toolkit": {"active_groups": []}, "name": "QwenPaw", "_sys_prompt": "You are QwenPaw.", "plan_notebook": {"current_plan": null, "storage": {"plans": {}}}}}`)
		} else {
			path = filepath.Join(run, "praisonai", "sessions", "c86cb912-1e05-4283-90df-f0a7cc101d65.json")
			buf.WriteString("{\n  \"session_id\": \"c86cb912-1e05-4283-90df-f0a7cc101d65\",\n  \"messages\": [")
			for i := 0; int64(buf.Len()) < size; i++ {
				role := map[bool]string{true: "user", false: "assistant"}[i%2 == 0]
				text, _ := json.Marshal(g.content(role, 20+i%200))
				if i > 0 {
					buf.WriteString(",")
				}
				fmt.Fprintf(&buf, "\n    {\n      \"role\": %q,\n      \"content\": %s,\n      \"timestamp\": 1795246942.6978495,\n      \"metadata\": {}\n    }", role, text)
			}
			buf.WriteString("\n  ],\n  \"created_at\": \"2026-11-21T07:42:22.707896+00:00\",\n  \"updated_at\": \"2026-11-21T07:42:22.711724+00:00\",\n  \"agent_id\": null,\n  \"user_id\": null,\n  \"metadata\": {}\n}")
		}
		healthy = buf.Bytes()
		what = "another write's bytes after it"
	default:
		return "", nil, "", fmt.Errorf("no transcript for %s", preset)
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return "", nil, "", err
	}
	var damaged []byte
	switch preset {
	case "openclaw", "gemini-cli":
		// The heal cuts the torn line: the file before the damage is the rest.
		damaged, healthy = damage.TearLast(healthy)
	case "copaw", "praisonai":
		// Two writers: the longer one's tail after the shorter one's document.
		damaged = append(bytes.Clone(healthy), "ion-2\"}]}}\n"...)
	default:
		damaged = damage.GlueMiddle(healthy)
	}
	if err := os.WriteFile(path, damaged, 0o600); err != nil {
		return "", nil, "", err
	}
	return path, healthy, what, nil
}

// cpFsync is the time of one copy of src to dst with an fsync: the physical reference.
func cpFsync(src, dst string) (time.Duration, error) {
	start := time.Now()
	in, err := os.Open(src)
	if err != nil {
		return 0, err
	}
	defer in.Close()
	out, err := os.Create(dst)
	if err != nil {
		return 0, err
	}
	if _, err := io.Copy(out, in); err != nil {
		out.Close()
		return 0, err
	}
	if err := out.Sync(); err != nil {
		out.Close()
		return 0, err
	}
	d := time.Since(start)
	out.Close()
	return d, os.Remove(dst)
}

// firstField is a string member of the first JSON line of out.
func firstField(out, key string) string {
	line, _, _ := strings.Cut(strings.TrimSpace(out), "\n")
	var m map[string]any
	if json.Unmarshal([]byte(line), &m) != nil {
		return ""
	}
	s, _ := m[key].(string)
	return s
}
