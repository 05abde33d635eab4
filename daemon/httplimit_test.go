package daemon

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"
)

func limitedServer(t *testing.T, lim httpLimits) (addr string, ll *limitListener) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv, l := newHTTPServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { fmt.Fprintln(w, "ok") }), ln, lim)
	go srv.Serve(l)
	t.Cleanup(func() { srv.Close() })
	return ln.Addr().String(), l.(*limitListener)
}

// closedByServer waits (up to a bound that only a broken server reaches) for the server to
// close c.
func closedByServer(t *testing.T, c net.Conn) bool {
	t.Helper()
	c.SetReadDeadline(time.Now().Add(20 * time.Second))
	_, err := io.Copy(io.Discard, c)
	return err == nil // EOF: the server closed it
}

// TestHTTPConnectionsAreBounded: silent connections beyond the limit are dropped, the open
// ones never exceed it, and a scrape still gets through.
func TestHTTPConnectionsAreBounded(t *testing.T) {
	lim := defaultHTTPLimits
	lim.maxConns, lim.new = 4, 0
	addr, ll := limitedServer(t, lim)
	var held []net.Conn
	for range 20 {
		c, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		held = append(held, c)
		defer c.Close()
	}
	if n := ll.open(); n > 4 {
		t.Fatalf("%d connections open, limit 4", n)
	}
	// A scrape through the flood: it takes the place of a silent connection.
	resp, err := (&http.Client{Timeout: 20 * time.Second}).Get("http://" + addr + "/metrics")
	if err != nil {
		t.Fatalf("scrape under a flood of silent connections: %v", err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if strings.TrimSpace(string(b)) != "ok" {
		t.Fatalf("scrape: %q", b)
	}
	closed := 0
	for _, c := range held {
		c.SetReadDeadline(time.Now().Add(200 * time.Millisecond)) // a kept one blocks this long
		if _, err := c.Read(make([]byte, 1)); err == io.EOF {
			closed++
		}
	}
	if closed < 16 {
		t.Errorf("%d of 20 silent connections closed, want at least 16", closed)
	}
	if n := ll.open(); n > 4 {
		t.Fatalf("%d connections open, limit 4", n)
	}
}

// TestHTTPIdleConnectionsAreClosed: a keep-alive connection that sends no further request
// is closed after the idle timeout, and one that sends nothing at all after the header
// timeout.
func TestHTTPIdleConnectionsAreClosed(t *testing.T) {
	lim := defaultHTTPLimits
	lim.idle, lim.readHeader = 100*time.Millisecond, 100*time.Millisecond
	addr, _ := limitedServer(t, lim)
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	fmt.Fprintf(c, "GET /metrics HTTP/1.1\r\nHost: x\r\n\r\n")
	resp, err := http.ReadResponse(bufio.NewReader(c), nil)
	if err != nil {
		t.Fatal(err)
	}
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	if !closedByServer(t, c) {
		t.Error("an idle keep-alive connection was not closed")
	}
	silent, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer silent.Close()
	if !closedByServer(t, silent) {
		t.Error("a connection that sent nothing was not closed")
	}
}
