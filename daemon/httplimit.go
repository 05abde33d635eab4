package daemon

import (
	"net"
	"net/http"
	"sync"
	"time"
)

// The /metrics endpoint must not be a way to exhaust the daemon's file descriptors (a
// scraper's keep-alive connections, or anyone who can reach the port opening thousands and
// sending nothing): its connections are few and short-lived, whatever the clients do.
const (
	httpMaxConns    = 64               // connections open at once
	httpIdle        = 30 * time.Second // a keep-alive connection with no request is closed
	httpReadHeader  = 5 * time.Second  // a request's header must arrive within this
	httpRead        = 10 * time.Second // and the whole request
	httpWrite       = 60 * time.Second // a response (pprof's profile streams up to 30 s by default)
	httpMaxHeader   = 8 << 10
	httpEvictNewAge = 0 // how long a connection that has sent nothing is kept from being dropped for a new one
)

// httpLimits are the bounds of the endpoint (tests shorten them).
type httpLimits struct {
	maxConns                           int
	idle, readHeader, read, write, new time.Duration
}

var defaultHTTPLimits = httpLimits{httpMaxConns, httpIdle, httpReadHeader, httpRead, httpWrite, httpEvictNewAge}

// newHTTPServer is the endpoint's server over ln, with every bound of lim.
func newHTTPServer(h http.Handler, ln net.Listener, lim httpLimits) (*http.Server, net.Listener) {
	ll := &limitListener{Listener: ln, lim: lim, conns: map[net.Conn]*connInfo{}}
	srv := &http.Server{
		Handler:           h,
		ReadHeaderTimeout: lim.readHeader,
		ReadTimeout:       lim.read,
		WriteTimeout:      lim.write,
		IdleTimeout:       lim.idle,
		MaxHeaderBytes:    httpMaxHeader,
		ConnState:         ll.track,
	}
	return srv, ll
}

// limitListener keeps at most lim.maxConns connections open. At the limit, a new
// connection takes the place of an idle keep-alive one, else of the oldest one that has
// sent nothing (for at least lim.new), else it is closed at once: a scraper gets through a
// flood of silent connections (one that has sent its request is never dropped), and
// descriptors stay bounded.
type limitListener struct {
	net.Listener
	lim   httpLimits
	mu    sync.Mutex
	conns map[net.Conn]*connInfo // owned under mu
}

type connInfo struct {
	state http.ConnState
	since time.Time
}

func (l *limitListener) Accept() (net.Conn, error) {
	for {
		c, err := l.Listener.Accept()
		if err != nil {
			return nil, err
		}
		now := time.Now()
		l.mu.Lock()
		var victim net.Conn
		if len(l.conns) >= l.lim.maxConns {
			victim = l.evictable(now)
			if victim == nil {
				l.mu.Unlock()
				c.Close()
				continue
			}
			delete(l.conns, victim)
		}
		tc := &trackedConn{Conn: c, l: l}
		l.conns[tc] = &connInfo{state: http.StateNew, since: now}
		l.mu.Unlock()
		if victim != nil {
			victim.Close()
		}
		return tc, nil
	}
}

// evictable is an idle connection, else the oldest that has sent nothing for lim.new.
func (l *limitListener) evictable(now time.Time) net.Conn {
	var oldest net.Conn
	var at time.Time
	for c, ci := range l.conns {
		switch {
		case ci.state == http.StateIdle:
			return c
		case ci.state == http.StateNew && now.Sub(ci.since) >= l.lim.new && (oldest == nil || ci.since.Before(at)):
			oldest, at = c, ci.since
		}
	}
	return oldest
}

// track is the server's ConnState hook.
func (l *limitListener) track(c net.Conn, s http.ConnState) {
	l.mu.Lock()
	defer l.mu.Unlock()
	switch s {
	case http.StateClosed, http.StateHijacked:
		delete(l.conns, c)
	default:
		if ci, ok := l.conns[c]; ok {
			ci.state, ci.since = s, time.Now()
		}
	}
}

// open is how many connections are open.
func (l *limitListener) open() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.conns)
}

type trackedConn struct {
	net.Conn
	l    *limitListener
	once sync.Once
}

func (c *trackedConn) Close() error {
	c.once.Do(func() {
		c.l.mu.Lock()
		delete(c.l.conns, c)
		c.l.mu.Unlock()
	})
	return c.Conn.Close()
}
