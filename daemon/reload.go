package daemon

import (
	"context"
	"fmt"
	"net"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/sessionmedic/sessionmedic/daemon/events"
	"github.com/sessionmedic/sessionmedic/watcher"
)

// reloadStatus is the outcome of the last policy reload, as two series of the metrics
// registry: whether it applied in full, and when one last did (the start counts as one).
type reloadStatus struct {
	successful prometheus.Gauge
	timestamp  prometheus.Gauge
}

// addReloadSeries registers the reload series on m.reg, set as after a successful load.
func (m *metrics) addReloadSeries() *reloadStatus {
	r := &reloadStatus{
		successful: prometheus.NewGauge(prometheus.GaugeOpts{Namespace: "sessionmedic", Name: "config_last_reload_successful",
			Help: "Whether the last policy reload applied in full (1) or failed, in whole or for a key (0)."}),
		timestamp: prometheus.NewGauge(prometheus.GaugeOpts{Namespace: "sessionmedic", Name: "config_last_reload_success_timestamp_seconds",
			Help: "When the policy was last loaded in full: at start and at every successful reload."}),
	}
	m.reg.MustRegister(r.successful, r.timestamp)
	r.set(true)
	return r
}

func (r *reloadStatus) set(ok bool) {
	if !ok {
		r.successful.Set(0)
		return
	}
	r.successful.Set(1)
	r.timestamp.SetToCurrentTime()
}

// startHTTP serves on ln, bound for the policy's http.listen addr.
func (d *loop) startHTTP(ln net.Listener, addr string) {
	d.srv, d.httpAddr = d.serveHTTP(ln), addr
}

// stopHTTP closes the listener and lets the requests in progress finish, for at most 2s,
// in the background (d.wg waits for it).
func (d *loop) stopHTTP() {
	srv := d.srv
	if srv == nil {
		return
	}
	d.srv, d.httpAddr = nil, ""
	d.wg.Add(1)
	go func() {
		defer d.wg.Done()
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		srv.Shutdown(ctx)
	}()
}

// rebindHTTP follows a reload's http.listen: a new address is bound before the old
// listener closes; one that cannot be bound leaves the old listener serving, is logged, and
// makes rebindHTTP return false. An empty address stops the endpoint.
func (d *loop) rebindHTTP(addr string) bool {
	if addr == d.httpAddr {
		return true
	}
	var ln net.Listener
	if addr != "" {
		var err error
		if ln, err = net.Listen("tcp", addr); err != nil {
			d.log.Warn(events.HTTPError, "key", "http.listen", "addr", addr, "err", err)
			return false
		}
	}
	d.stopHTTP()
	if ln != nil {
		d.startHTTP(ln, addr)
	}
	return true
}

// reload swaps in a new policy; an invalid one is logged and the old one keeps running. An
// http.listen that cannot be bound keeps the old listener while the rest applies. The
// reload series say whether it all applied.
func (d *loop) reload(ctx context.Context, stop func()) (*watcher.Watcher, func(), bool) {
	cfg, _, err := d.o.Load()
	if err != nil {
		d.log.Error(events.PolicyInvalid, "path", d.o.Source, "err", err)
		d.reloads.set(false)
		return nil, nil, false
	}
	// The running daemon holds its state_dir's lock and resolved its journal at start; a
	// reload cannot move it there.
	if cfg.StateDir != d.cfg.StateDir {
		d.log.Error(events.PolicyInvalid, "path", d.o.Source, "err", fmt.Sprintf(
			"state_dir changed from %s to %s: a reload keeps the state directory; restart to move it", d.cfg.StateDir, cfg.StateDir))
		d.reloads.set(false)
		return nil, nil, false
	}
	d.o.Notify("RELOADING=1")
	stop()
	old := d.cfg
	d.setPolicy(cfg)
	nw, nstop, err := d.startWatcher(ctx)
	if err != nil {
		d.log.Error(events.PolicyInvalid, "path", d.o.Source, "err", err)
		d.reloads.set(false)
		d.setPolicy(old)
		nw, nstop, err = d.startWatcher(ctx)
		if err != nil {
			d.log.Error(events.WatchError, "err", err)
		}
		d.o.Notify("READY=1")
		if nstop == nil {
			nstop = func() {}
		}
		return nw, nstop, true
	}
	d.reloads.set(d.rebindHTTP(cfg.HTTP.Listen))
	d.log.Info(events.PolicyReloaded, "path", d.o.Source, "rules", len(cfg.Rules))
	select {
	case <-nw.Ready():
	case <-ctx.Done():
	}
	d.scanAll(false)
	d.o.Notify("READY=1")
	return nw, nstop, true
}
