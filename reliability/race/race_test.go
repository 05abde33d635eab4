package race

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/sessionmedic/sessionmedic/reliability/figures"
)

// result is the figure of one daemon mode, as written to RELIABILITY_OUT.
type result struct {
	Mode             string           `json:"mode"`
	Seed             int64            `json:"seed"`
	Seconds          float64          `json:"seconds"`
	Procs            int              `json:"gomaxprocs"`
	Race             bool             `json:"race"`
	Sessions         int64            `json:"sessions"`
	AppWrites        int64            `json:"app_writes"`
	Damages          int64            `json:"damages"`
	Healed           int64            `json:"damages_healed"`
	Refused          int64            `json:"damages_refused"`
	ReportedOnly     int64            `json:"damages_reported_only"`
	Unreported       int64            `json:"damages_unreported"`
	Heals            int              `json:"heals"`
	Manifests        int              `json:"quarantine_manifests"`
	Lost             int64            `json:"lost_app_writes"`
	Unexpected       int64            `json:"unexpected_changes"`
	HealsInLock      int64            `json:"heals_inside_app_lock"`
	BadResults       int64            `json:"bad_heal_results"`
	Spurious         int              `json:"spurious_heals"`
	LockTimeouts     int64            `json:"app_lock_timeouts"`
	MaxLockWaitMs    float64          `json:"max_app_lock_wait_ms"`
	BusyEvents       int              `json:"file_busy_events"`
	DamagedEvents    int              `json:"file_damaged_events"`
	Racing           int64            `json:"racing_damages"`
	RacingHealed     int64            `json:"racing_healed_before_next_write"`
	RacingSuperseded int64            `json:"racing_superseded_by_app_write"`
	RacingDeferred   int64            `json:"racing_never_healed"`
	PutBacks         int64            `json:"app_bytes_put_back_by_daemon"`
	RolledBack       int64            `json:"transient_rollbacks"`
	RollbackMaxMs    float64          `json:"transient_rollback_max_ms"`
	ByKind           map[string]int   `json:"injections_by_style_kind"`
	Outcomes         map[string]int   `json:"outcomes"`
	PerStyle         map[string]int64 `json:"writes_by_style"`
	DaemonExit       string           `json:"daemon_exit"`
	DaemonStderrOdd  int              `json:"daemon_stderr_non_json_lines"`
	SettledAfterStop bool             `json:"settled"`
}

var (
	resultsMu sync.Mutex
	results   []result
)

// TestAppsRaceTheDaemon is suite 3: the apps write, crash and race while the daemon heals.
func TestAppsRaceTheDaemon(t *testing.T) {
	for _, mode := range strings.Split(*modes, ",") {
		mode = strings.TrimSpace(mode)
		t.Run(mode, func(t *testing.T) { raceOnce(t, mode) })
	}
	resultsMu.Lock()
	err := figures.Write("race", map[string]any{"runs": results})
	resultsMu.Unlock()
	if err != nil {
		t.Errorf("RELIABILITY_OUT: %v", err)
	}
}

type writerSpec struct {
	st     style
	prefix string
}

func raceOnce(t *testing.T, mode string) {
	root := t.TempDir()
	state := filepath.Join(root, "state")
	dirs := map[string]string{
		"copaw":       filepath.Join(root, "copaw", "workspaces", "default", "sessions", "console"),
		"praisonai":   filepath.Join(root, "praisonai", "sessions"),
		"nanobot":     filepath.Join(root, "nanobot", "sessions", "1a90ee6c483ef484075bb4aec4e29b33"),
		"openviking":  filepath.Join(root, "openviking", "workspace", "viking", "default", "user", "default", "sessions"),
		"agent":       filepath.Join(root, "agent", "transcripts"),
		"claude-code": filepath.Join(root, "claude", ".claude", "projects", "-tmp-demo-proj"),
		"codex":       filepath.Join(root, "codex", ".codex"),
		"codex-day":   filepath.Join(root, "codex", ".codex", "sessions", "2026", "11", "22"),
		"codex-locks": filepath.Join(root, "codex", ".codex", "thread-writer-locks"),
		"pi":          filepath.Join(root, "pi", ".pi", "agent", "sessions", "--tmp-demo-proj--"),
		"qwen-code":   filepath.Join(root, "qwen", ".qwen", "projects", "-tmp-demo-proj", "chats"),
		"copilot-cli": filepath.Join(root, "copilot", ".copilot", "session-state"),
	}
	for _, d := range dirs {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	const timing = "settle: 40ms, max_wait: 500ms"
	policyText := fmt.Sprintf(`version: 1
state_dir: %s
log: {format: json, level: debug}
rules:
  - {name: copaw, preset: copaw, paths: [%s], %s}
  - {name: praisonai, preset: praisonai, paths: [%s], %s}
  - {name: nanobot, preset: nanobot, paths: [%s], %s}
  - {name: openviking, preset: openviking, paths: [%s], %s}
  - {name: agent, format: jsonl, match: ["**/*.jsonl"], paths: [%s], %s}
  - {name: claude-code, preset: claude-code, paths: [%s], %s}
  - {name: codex, preset: codex, paths: [%s], %s}
  - {name: pi, preset: pi, paths: [%s], %s}
  - {name: qwen-code, preset: qwen-code, paths: [%s], %s}
  - {name: copilot-cli, preset: copilot-cli, paths: [%s], %s}
`, state, filepath.Join(root, "copaw"), timing, dirs["praisonai"], timing, filepath.Join(root, "nanobot"), timing,
		filepath.Join(root, "openviking", "workspace"), timing, filepath.Join(root, "agent"), timing,
		filepath.Join(root, "claude", ".claude"), timing, dirs["codex"], timing,
		filepath.Join(root, "pi", ".pi", "agent", "sessions"), timing, filepath.Join(root, "qwen", ".qwen"), timing, dirs["copilot-cli"], timing)
	policyFile := filepath.Join(root, "policy.yaml")
	if err := os.WriteFile(policyFile, []byte(policyText), 0o644); err != nil {
		t.Fatal(err)
	}

	s := *seed
	if s == 0 {
		s = time.Now().UnixNano()
	}
	healWait := 8 * time.Second
	if mode == "inproc" && raceEnabled {
		healWait = 15 * time.Second
	}
	e := &env{root: root, state: state, fig: &figure{}, healWait: healWait, locks: map[string][]interval{}, unlocked: map[string]bool{}}
	d := startDaemon(t, mode, policyFile, 7)
	e.log = d.log
	stopped := false
	defer func() {
		if !stopped {
			d.stop()
		}
	}()

	var specs []writerSpec
	for i := 0; i < 2; i++ {
		tag := fmt.Sprint(i)
		rng := rand.New(rand.NewPCG(uint64(s), uint64(i)))
		specs = append(specs,
			writerSpec{&copaw{dir: dirs["copaw"], tag: tag, host: e}, "cp" + tag},
			writerSpec{&praison{dir: dirs["praisonai"], tag: tag, host: e, rng: rng}, "pr" + tag},
			writerSpec{&nanobot{ns: dirs["nanobot"], tag: tag, host: e, rng: rand.New(rand.NewPCG(uint64(s), uint64(100+i)))}, "nb" + tag},
			writerSpec{&openviking{sessions: dirs["openviking"], tag: tag, host: e}, "ov" + tag},
			writerSpec{&agent{dir: dirs["agent"], tag: tag, host: e}, "ag" + tag},
			writerSpec{&claude{dir: dirs["claude-code"], tag: tag, host: e}, "cc" + tag},
			writerSpec{&codex{home: dirs["codex"], tag: tag, host: e}, "cx" + tag},
			writerSpec{&perRecord{app: "pi", dir: dirs["pi"], tag: tag, host: e}, "pi" + tag},
			writerSpec{&perRecord{app: "qwen-code", dir: dirs["qwen-code"], tag: tag, host: e}, "qw" + tag},
			writerSpec{&copilot{state: dirs["copilot-cli"], tag: tag, host: e}, "co" + tag},
		)
	}
	for _, sp := range specs {
		if !sp.st.hasLock() && !sp.st.heldOpen() {
			e.unlocked[sp.st.name()] = true
		}
	}
	keep := map[string]bool{}
	for _, st := range strings.Split(*styles, ",") {
		keep[strings.TrimSpace(st)] = true
	}
	kept := specs[:0]
	for _, sp := range specs {
		if keep[sp.st.name()] {
			kept = append(kept, sp)
		}
	}
	specs = kept
	start := time.Now()
	ctx, cancel := context.WithTimeout(context.Background(), runDuration())
	defer cancel()
	type written struct {
		st       style
		sessions []*session
	}
	var mu sync.Mutex
	var all []written
	var wg sync.WaitGroup
	for i, sp := range specs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			rng := rand.New(rand.NewPCG(uint64(s), uint64(1000+i)))
			ss := runWriter(ctx, e, sp.st, sp.prefix, rng)
			sp.st.close()
			mu.Lock()
			all = append(all, written{sp.st, ss})
			mu.Unlock()
		}()
	}
	wg.Wait()
	writing := time.Since(start)

	// The apps stopped (the agents closed their transcripts): let the daemon finish what it
	// saw, and heal the bad lines it had to leave under an open descriptor, then stop it.
	settled := d.quiet(1500*time.Millisecond, 30*time.Second)
	pendingDeadline := time.Now().Add(pendingWait)
	for {
		pending := 0
		for _, w := range all {
			for _, ss := range w.sessions {
				if ss.alt != nil {
					if b, err := os.ReadFile(ss.path); err == nil {
						if ss.orderAs(b); string(b) == string(ss.alt) {
							continue
						}
					}
					pending++
				}
			}
		}
		if pending == 0 || time.Now().After(pendingDeadline) {
			break
		}
		time.Sleep(50 * time.Millisecond)
	}
	stopErr := d.stop()
	stopped = true

	perStyle := map[string]int64{}
	for _, w := range all {
		for _, ss := range w.sessions {
			// Every descriptor is closed now: a heal may replace any file.
			e.check(w.st.name(), ss, "after the run", w.st.keepsInode(), false)
			if ss.alt != nil {
				e.problem("%s %s: a racing %s injected at %s was never healed (the descriptor closed at the end of the run; waited %v)",
					w.st.name(), ss.path, ss.altInj.kind, ss.altInj.at.Format("15:04:05.000"), pendingWait)
				e.resolveRacing(ss, "deferred")
			}
			perStyle[w.st.name()] += int64(len(ss.ids))
		}
	}

	// No heal while an app held its lock: every quarantine manifest is written by the daemon
	// under the app's lock, so its time must fall outside every span the app held it.
	manifests := readManifests(t, state)
	for _, m := range manifests {
		lock := lockFor(dirs, m.Path)
		if lock == "" {
			continue
		}
		c := m.Created.UnixNano()
		e.mu.Lock()
		spans := e.locks[lock]
		e.mu.Unlock()
		for _, sp := range spans {
			if c > sp.acq && c < sp.rel {
				e.fig.healInLock.Add(1)
				e.problem("quarantine %s of %s was created at %s, while the app held %s (%s – %s)", m.ID, m.Path,
					m.Created.Format("15:04:05.000000000"), lock, time.Unix(0, sp.acq).Format("15:04:05.000000000"), time.Unix(0, sp.rel).Format("15:04:05.000000000"))
			}
		}
	}

	// Every heal answers an injected damage; a heal of a file the app left healthy is a
	// write nobody asked for.
	evs := d.log.all()
	heals, spurious, busy, damagedEv := 0, 0, 0, 0
	for _, ev := range evs {
		switch ev.Msg {
		case "file.busy":
			busy++
		case "file.damaged":
			damagedEv++
		case "file.healed":
			heals++
			if !explained(e, ev) {
				spurious++
				e.problem("spurious heal: %s healed %s (%s, %s) with no damage injected there", ev.Time.Format("15:04:05.000000"), ev.Path, ev.Kind, ev.Strategy)
			}
		}
	}
	odd := 0
	for _, l := range d.log.strays() {
		odd++
		if strings.Contains(l, "panic") || strings.Contains(l, "DATA RACE") || strings.Contains(l, "goroutine ") {
			e.problem("daemon stderr: %s", l)
		}
	}
	exit := "ok"
	if stopErr != nil {
		exit = stopErr.Error()
		e.problem("daemon stop: %v", stopErr)
	}
	if !settled {
		e.problem("the daemon kept logging for 30s after the apps stopped")
	}

	byKind, outcomes := map[string]int{}, map[string]int{}
	e.mu.Lock()
	for _, inj := range e.injections {
		o := inj.outcome
		if inj.racing {
			o = "racing-" + o
		}
		byKind[inj.style+"/"+inj.kind+"/"+o]++
		outcomes[o]++
	}
	e.mu.Unlock()
	f := e.fig
	r := result{
		Mode: mode, Seed: s, Seconds: writing.Seconds(), Procs: procs(), Race: raceEnabled,
		Sessions: f.sessions.Load(), AppWrites: f.writes.Load(), Damages: f.damages.Load(),
		Healed: f.healed.Load(), Refused: f.refused.Load(), ReportedOnly: f.reportedOnly.Load(), Unreported: f.unreported.Load(),
		Heals: heals, Manifests: len(manifests), Lost: f.lost.Load(), Unexpected: f.unexpected.Load(),
		HealsInLock: f.healInLock.Load(), BadResults: f.badResult.Load(), Spurious: spurious,
		Racing: f.racing.Load(), RacingHealed: f.racingHealed.Load(), RacingSuperseded: f.racingSuperseded.Load(), RacingDeferred: f.racingDeferred.Load(), PutBacks: f.putBacks.Load(), RolledBack: f.rolledBack.Load(), RollbackMaxMs: float64(f.rollbackMax.Microseconds()) / 1e3,
		LockTimeouts: f.lockTimeouts.Load(), MaxLockWaitMs: float64(f.lockWaitMax.Load()) / 1e6,
		BusyEvents: busy, DamagedEvents: damagedEv, ByKind: byKind, Outcomes: outcomes, PerStyle: perStyle,
		DaemonExit: exit, DaemonStderrOdd: odd, SettledAfterStop: settled,
	}
	resultsMu.Lock()
	results = append(results, r)
	resultsMu.Unlock()
	t.Logf("race[%s]: %.1fs, %d sessions, app writes %d, damages injected %d (awaited: healed %d, refused %d, reported only %d, unreported %d; racing: %d, healed %d, superseded %d, never healed %d), heals %d (quarantine manifests %d), lost app writes %d, unexpected changes %d, transient rollbacks %d, heals inside an app lock %d, bad heal results %d, spurious heals %d, app lock timeouts %d, max app lock wait %.1fms, seed %d",
		mode, r.Seconds, r.Sessions, r.AppWrites, r.Damages, r.Healed, r.Refused, r.ReportedOnly, r.Unreported,
		r.Racing, r.RacingHealed, r.RacingSuperseded, r.RacingDeferred, r.Heals, r.Manifests,
		r.Lost, r.Unexpected, r.RolledBack, r.HealsInLock, r.BadResults, r.Spurious, r.LockTimeouts, r.MaxLockWaitMs, s)
	fmt.Printf("race[%s] app writes=%d damages=%d heals=%d lost=%d (outcomes %s; unexpected %d, transient rollbacks %d, in-lock %d, spurious %d, bad results %d, put back %d) writes-by-style=%v kinds=%v\n",
		mode, r.AppWrites, r.Damages, r.Heals, r.Lost, sortedMap(outcomes), r.Unexpected, r.RolledBack, r.HealsInLock, r.Spurious, r.BadResults, r.PutBacks, sortedMap(perStyle), sortedMap(byKind))

	e.mu.Lock()
	defer e.mu.Unlock()
	if len(e.problems) > 0 {
		// The log tail first and the problems last: a CI log that keeps only the end of the
		// output still shows what went wrong.
		tail := strings.Split(d.log.tailText(), "\n")
		if len(tail) > 60 {
			tail = tail[len(tail)-60:]
		}
		t.Logf("daemon log tail:\n%s", strings.Join(tail, "\n"))
		for i, p := range e.problems {
			if i == 25 {
				t.Errorf("… and %d more", len(e.problems)-25)
				break
			}
			t.Error(p)
		}
	}
	if r.Damages == 0 || r.AppWrites == 0 {
		t.Errorf("the run did nothing: %d writes, %d damages", r.AppWrites, r.Damages)
	}
}

// explained reports whether a file.healed event answers a damage injected into that path (see
// answers), or (a bad line the agent appended past) came while that damage was pending.
func explained(e *env, ev event) bool {
	e.mu.Lock()
	defer e.mu.Unlock()
	for _, inj := range e.injections {
		if inj.path != ev.Path {
			continue
		}
		if answers(ev, inj) {
			return true
		}
		if inj.racing && (inj.style == "agent" || inj.style == "claude-code" || inj.style == "codex" || inj.style == "pi" || inj.style == "qwen-code" || inj.style == "copilot-cli") && !ev.Time.Before(inj.at) && (inj.resolved.IsZero() || ev.Time.Before(inj.resolved.Add(2*time.Second))) {
			return true
		}
	}
	return false
}

func lockFor(dirs map[string]string, p string) string {
	switch {
	case strings.HasPrefix(p, dirs["praisonai"]+"/"):
		return p + ".lock"
	case strings.HasPrefix(p, dirs["nanobot"]+"/"):
		return filepath.Join(filepath.Dir(p), ".session-files.lock")
	case strings.HasPrefix(p, dirs["openviking"]+"/"):
		return filepath.Join(filepath.Dir(p), ".path.ovlock")
	case strings.HasPrefix(p, dirs["copilot-cli"]+"/"):
		// Each run flocks an inuse.<pid>.hold of its own: the spans are kept per session.
		return "copilot:" + filepath.Dir(p)
	case strings.HasPrefix(p, dirs["codex"]+"/"):
		b := strings.TrimSuffix(filepath.Base(p), ".jsonl")
		return filepath.Join(dirs["codex-locks"], b[len(b)-36:]+".lock")
	}
	return ""
}

type manifest struct {
	ID      string    `json:"id"`
	Path    string    `json:"path"`
	Created time.Time `json:"created"`
}

func readManifests(t *testing.T, state string) []manifest {
	files, _ := filepath.Glob(filepath.Join(state, "quarantine", "*", "*", "manifest.json"))
	var out []manifest
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Errorf("manifest %s: %v", f, err)
			continue
		}
		var m manifest
		if err := json.Unmarshal(b, &m); err != nil {
			t.Errorf("manifest %s: %v", f, err)
			continue
		}
		out = append(out, m)
	}
	return out
}

func sortedMap[V any](m map[string]V) string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var b strings.Builder
	for i, k := range keys {
		if i > 0 {
			b.WriteByte(' ')
		}
		fmt.Fprintf(&b, "%s:%v", k, m[k])
	}
	return b.String()
}
