package daemon

import (
	"net/http"
	"runtime"
	"runtime/debug"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"github.com/sessionmedic/sessionmedic/heal"
	"github.com/sessionmedic/sessionmedic/policy"
)

// metrics are the Prometheus series of DESIGN §9, on a registry of their own.
type metrics struct {
	reg             *prometheus.Registry
	checked         *prometheus.CounterVec
	damage          *prometheus.CounterVec
	heals           *prometheus.CounterVec
	refused         *prometheus.CounterVec
	quarantineBytes prometheus.Counter
	quarantineDisk  prometheus.Gauge
	pruned          *prometheus.CounterVec
	overflows       *prometheus.CounterVec
	watchedDirs     prometheus.Gauge
	watchBudget     prometheus.Gauge
	unwatchedDirs   prometheus.Gauge
	checkDuration   *prometheus.HistogramVec
	settleToVerdict *prometheus.HistogramVec
	flapping        *prometheus.CounterVec
	damaged         *prometheus.GaugeVec
	damagedBusy     *prometheus.GaugeVec
	notJudged       *prometheus.GaugeVec
	busyStuck       *prometheus.GaugeVec
	ruleFiles       *prometheus.GaugeVec
	oldestDamage    prometheus.Gauge
	unhealable      *prometheus.GaugeVec
	copyFailures    *prometheus.CounterVec
	internalErrors  *prometheus.CounterVec
	stateFree       prometheus.Gauge
	stateNeeded     prometheus.Gauge
	buildInfo       *prometheus.GaugeVec
}

// The results of heals_total.
const (
	resultHealed  = "healed"
	resultRefused = "refused"
	resultBusy    = "busy"
)

func newMetrics(version, revision string) *metrics {
	m := &metrics{reg: prometheus.NewRegistry()}
	ns := "sessionmedic"
	m.checked = prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: ns, Name: "files_checked_total", Help: "Files inspected."}, []string{"rule"})
	m.damage = prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: ns, Name: "damage_total", Help: "Damaged files found, by damage kind."}, []string{"rule", "kind"})
	m.heals = prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: ns, Name: "heals_total", Help: "Heal attempts by strategy and result (healed, refused, busy)."}, []string{"rule", "strategy", "result"})
	m.refused = prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: ns, Name: "heals_refused_total", Help: "Damaged files left unhealed."}, []string{"rule", "kind"})
	m.quarantineBytes = prometheus.NewCounter(prometheus.CounterOpts{Namespace: ns, Name: "quarantine_bytes_total", Help: "Bytes of damaged originals put into quarantine."})
	m.quarantineDisk = prometheus.NewGauge(prometheus.GaugeOpts{Namespace: ns, Name: "quarantine_disk_bytes", Help: "What the quarantine occupies on disk after the last prune (its blocks)."})
	m.pruned = prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: ns, Name: "state_pruned_total", Help: "Quarantine entries and last-good copies removed by retention."}, []string{"store"})
	m.pruned.WithLabelValues("quarantine")
	m.pruned.WithLabelValues("last-good")
	m.overflows = prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: ns, Name: "watch_overflows_total", Help: "Kernel event queue overflows and watch errors that forced a rescan."}, []string{"rule"})
	m.watchedDirs = prometheus.NewGauge(prometheus.GaugeOpts{Namespace: ns, Name: "watched_directories", Help: "Directories under watch."})
	m.watchBudget = prometheus.NewGauge(prometheus.GaugeOpts{Namespace: ns, Name: "watch_budget", Help: "Directories the daemon watches at most (watch_budget)."})
	m.unwatchedDirs = prometheus.NewGauge(prometheus.GaugeOpts{Namespace: ns, Name: "unwatched_directories", Help: "Directories left unwatched (the watch budget or the kernel's limit): their files are found by periodic rescans only."})
	m.checkDuration = prometheus.NewHistogramVec(prometheus.HistogramOpts{Namespace: ns, Name: "check_duration_seconds", Help: "Time to inspect (and heal) one file.",
		Buckets: prometheus.ExponentialBuckets(0.0001, 4, 10)}, []string{"rule"})
	m.settleToVerdict = prometheus.NewHistogramVec(prometheus.HistogramOpts{Namespace: ns, Name: "settle_to_verdict_seconds", Help: "From a file settling to its verdict.",
		Buckets: prometheus.ExponentialBuckets(0.0001, 4, 10)}, []string{"rule"})
	m.flapping = prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: ns, Name: "flapping_total", Help: "Files whose heals tripped the circuit breaker."}, []string{"rule"})
	m.damaged = prometheus.NewGaugeVec(prometheus.GaugeOpts{Namespace: ns, Name: "files_damaged",
		Help: "Files damaged now (refused, flapping, hands-off, and kept from their heal by a busy holder), by damage kind."}, []string{"rule", "kind"})
	m.damagedBusy = prometheus.NewGaugeVec(prometheus.GaugeOpts{Namespace: ns, Name: "files_damaged_busy",
		Help: "Of files_damaged, those an app's lock or live process keeps from their heal (busy)."}, []string{"rule"})
	m.notJudged = prometheus.NewGaugeVec(prometheus.GaugeOpts{Namespace: ns, Name: "files_not_judged",
		Help: "Session files not judged, so not guarded (larger than their rule's max_file_size, not readable, or not to be judged within the memory bounds): file.not_judged names each and why."}, []string{"rule"})
	m.busyStuck = prometheus.NewGaugeVec(prometheus.GaugeOpts{Namespace: ns, Name: "files_busy_stuck",
		Help: "Files busy for longer than their rule's max_wait (file.busy at WARN names the holder)."}, []string{"rule"})
	m.ruleFiles = prometheus.NewGaugeVec(prometheus.GaugeOpts{Namespace: ns, Name: "rule_files",
		Help: "Session files a rule guards, as its last full scan found them (0: it guards nothing: a path missing, mistyped or empty)."}, []string{"rule"})
	m.oldestDamage = prometheus.NewGauge(prometheus.GaugeOpts{Namespace: ns, Name: "damage_oldest_timestamp_seconds", Help: "When the oldest damage still there was first seen (unix time; 0: none)."})
	m.unhealable = prometheus.NewGaugeVec(prometheus.GaugeOpts{Namespace: ns, Name: "files_unhealable",
		Help: "Session files of a rule that heals in directories where no heal can be written (read-only, not writable by sessionmedic, unsafe, or owned by another user): damage there is reported, never healed (rule.cannot_heal says why)."}, []string{"rule"})
	m.copyFailures = prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: ns, Name: "last_good_failures_total",
		Help: "Last-good copies the state dir refused (no space, a quota, not writable): state.copy_failed says why."}, []string{"rule"})
	m.internalErrors = prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: ns, Name: "internal_errors_total",
		Help: "Files not judged because judging or planning them raised an internal error (a defect of sessionmedic): file.internal_error names each; such a file is not guarded until it changes or sessionmedic is mended."}, []string{"rule"})
	m.stateFree = prometheus.NewGauge(prometheus.GaugeOpts{Namespace: ns, Name: "state_free_bytes", Help: "Free space of the state dir's file system, at the last prune."})
	m.stateNeeded = prometheus.NewGauge(prometheus.GaugeOpts{Namespace: ns, Name: "state_needed_bytes",
		Help: "Free space a heal of the largest guarded file needs in the state dir (its quarantine entry and last-good copy); under state_free_bytes is state.space_low."})
	m.buildInfo = prometheus.NewGaugeVec(prometheus.GaugeOpts{Namespace: ns, Name: "build_info", Help: "Always 1: the running build."}, []string{"version", "revision", "goversion"})
	if revision == "" {
		revision = buildRevision()
	}
	m.buildInfo.WithLabelValues(version, revision, runtime.Version()).Set(1)
	m.reg.MustRegister(m.checked, m.damage, m.heals, m.refused, m.quarantineBytes, m.quarantineDisk, m.pruned, m.overflows, m.watchedDirs, m.watchBudget, m.unwatchedDirs,
		m.checkDuration, m.settleToVerdict, m.flapping, m.damaged, m.damagedBusy, m.notJudged, m.busyStuck, m.ruleFiles, m.oldestDamage,
		m.unhealable, m.copyFailures, m.internalErrors, m.stateFree, m.stateNeeded, m.buildInfo,
		collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	return m
}

// initRules creates every series a rule can move, at 0: the counters, so that the first
// event of each is an increase a rate() or increase() sees, and the gauges of damage, so that
// sum() is 0 rather than empty. A series with a damage kind is made only for the kinds a
// verdict on a file of the rule can name (kindsOf: heal's Engine.DamageKinds).
func (m *metrics) initRules(rules []policy.Rule, kindsOf func(*policy.Rule) []string) {
	for i := range rules {
		r := &rules[i]
		m.checked.WithLabelValues(r.Name)
		m.flapping.WithLabelValues(r.Name)
		m.overflows.WithLabelValues(r.Name)
		m.busyStuck.WithLabelValues(r.Name)
		m.damagedBusy.WithLabelValues(r.Name)
		m.notJudged.WithLabelValues(r.Name)
		m.unhealable.WithLabelValues(r.Name)
		m.copyFailures.WithLabelValues(r.Name)
		m.internalErrors.WithLabelValues(r.Name)
		for _, k := range kindsOf(r) {
			m.damage.WithLabelValues(r.Name, k)
			m.refused.WithLabelValues(r.Name, k)
			m.damaged.WithLabelValues(r.Name, k)
		}
		for _, s := range r.Strategies {
			for _, res := range []string{resultHealed, resultRefused, resultBusy} {
				m.heals.WithLabelValues(r.Name, string(s), res)
			}
		}
		// A refusal or a busy file before any plan was chosen names no strategy.
		m.heals.WithLabelValues(r.Name, "", resultRefused)
		m.heals.WithLabelValues(r.Name, "", resultBusy)
	}
}

// setRuleFiles sets rule_files from a full scan's targets: the session files each rule of
// rules guards (temp files, missing-file targets and unreadable entries not counted, as
// rule.no_files counts them); a rule no longer in the policy has no series.
func (m *metrics) setRuleFiles(rules []policy.Rule, targets []heal.Target) {
	n := map[string]int{}
	for _, t := range targets {
		if !t.Temp && !t.Missing && t.Skip == "" && t.Rule != nil {
			n[t.Rule.Name]++
		}
	}
	m.ruleFiles.Reset()
	for _, r := range rules {
		m.ruleFiles.WithLabelValues(r.Name).Set(float64(n[r.Name]))
	}
}

// buildRevision is the VCS revision the binary was built from, "unknown" without one.
func buildRevision() string {
	if bi, ok := debug.ReadBuildInfo(); ok {
		for _, s := range bi.Settings {
			if s.Key == "vcs.revision" && s.Value != "" {
				return s.Value
			}
		}
	}
	return "unknown"
}

func (m *metrics) handler() http.Handler {
	return promhttp.HandlerFor(m.reg, promhttp.HandlerOpts{})
}
