package daemon

import (
	"net/http"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// metrics are the Prometheus series of DESIGN §9, on a registry of their own.
type metrics struct {
	reg             *prometheus.Registry
	checked         *prometheus.CounterVec
	damage          *prometheus.CounterVec
	heals           *prometheus.CounterVec
	refused         *prometheus.CounterVec
	quarantineBytes prometheus.Counter
	overflows       *prometheus.CounterVec
	watchedDirs     prometheus.Gauge
	checkDuration   *prometheus.HistogramVec
	settleToVerdict *prometheus.HistogramVec
	flapping        *prometheus.CounterVec
}

func newMetrics() *metrics {
	m := &metrics{reg: prometheus.NewRegistry()}
	ns := "sessionmedic"
	m.checked = prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: ns, Name: "files_checked_total", Help: "Files inspected."}, []string{"rule"})
	m.damage = prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: ns, Name: "damage_total", Help: "Damaged files found, by damage kind."}, []string{"rule", "kind"})
	m.heals = prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: ns, Name: "heals_total", Help: "Heal attempts by strategy and result (healed, refused, busy)."}, []string{"rule", "strategy", "result"})
	m.refused = prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: ns, Name: "heals_refused_total", Help: "Damaged files left unhealed."}, []string{"rule", "kind"})
	m.quarantineBytes = prometheus.NewCounter(prometheus.CounterOpts{Namespace: ns, Name: "quarantine_bytes_total", Help: "Bytes of damaged originals put into quarantine."})
	m.overflows = prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: ns, Name: "watch_overflows_total", Help: "Kernel event queue overflows and watch errors that forced a rescan."}, []string{"rule"})
	m.watchedDirs = prometheus.NewGauge(prometheus.GaugeOpts{Namespace: ns, Name: "watched_directories", Help: "Directories under watch."})
	m.checkDuration = prometheus.NewHistogramVec(prometheus.HistogramOpts{Namespace: ns, Name: "check_duration_seconds", Help: "Time to inspect (and heal) one file.",
		Buckets: prometheus.ExponentialBuckets(0.0001, 4, 10)}, []string{"rule"})
	m.settleToVerdict = prometheus.NewHistogramVec(prometheus.HistogramOpts{Namespace: ns, Name: "settle_to_verdict_seconds", Help: "From a file settling to its verdict.",
		Buckets: prometheus.ExponentialBuckets(0.0001, 4, 10)}, []string{"rule"})
	m.flapping = prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: ns, Name: "flapping_total", Help: "Files whose heals tripped the circuit breaker."}, []string{"rule"})
	m.reg.MustRegister(m.checked, m.damage, m.heals, m.refused, m.quarantineBytes, m.overflows, m.watchedDirs,
		m.checkDuration, m.settleToVerdict, m.flapping,
		collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	return m
}

func (m *metrics) handler() http.Handler {
	return promhttp.HandlerFor(m.reg, promhttp.HandlerOpts{})
}
