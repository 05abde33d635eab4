package daemon

import (
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/http/pprof"
	"time"

	"github.com/sessionmedic/sessionmedic/daemon/events"
)

// serveHTTP serves /metrics, /healthz and /readyz on ln, and /debug/pprof/ while the
// policy's http.pprof is on (404 otherwise).
func (d *loop) serveHTTP(ln net.Listener) *http.Server {
	mux := http.NewServeMux()
	mux.Handle("/metrics", d.m.handler())
	mux.HandleFunc("/debug/pprof/", d.ifPprof(pprof.Index))
	mux.HandleFunc("/debug/pprof/profile", d.ifPprof(pprof.Profile))
	mux.HandleFunc("/healthz", func(w http.ResponseWriter, r *http.Request) {
		last := time.Unix(0, d.aliveNs.Load())
		if d.aliveNs.Load() != 0 && time.Since(last) > time.Minute {
			http.Error(w, "loop stalled", http.StatusServiceUnavailable)
			return
		}
		fmt.Fprintln(w, "ok")
	})
	mux.HandleFunc("/readyz", func(w http.ResponseWriter, r *http.Request) {
		if !d.ready.Load() {
			http.Error(w, "first scan not finished", http.StatusServiceUnavailable)
			return
		}
		fmt.Fprintln(w, "ready")
	})
	srv, ln := newHTTPServer(mux, ln, defaultHTTPLimits)
	go func() {
		if err := srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			d.log.Error(events.HTTPError, "err", err)
		}
	}()
	d.log.Info(events.HTTPListening, "addr", ln.Addr().String())
	return srv
}

func (d *loop) ifPprof(h http.HandlerFunc) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		if !d.pprof.Load() {
			http.NotFound(w, r)
			return
		}
		h(w, r)
	}
}
