package race

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"os"
	"os/exec"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/sessionmedic/sessionmedic/daemon"
	"github.com/sessionmedic/sessionmedic/policy"
)

// event is one JSON log line of the daemon.
type event struct {
	Msg, Path, Rule, Kind, Strategy, Reason, Detail, Quarantine string
	Time                                                        time.Time
}

// sink collects the daemon's log lines (JSON) and anything else it writes to stderr.
type sink struct {
	mu      sync.Mutex
	partial []byte
	events  []event
	byPath  map[string][]int
	stray   []string // lines that are not JSON (a panic, a race report)
	tail    []string // the last lines, for a failure report
}

func newSink() *sink { return &sink{byPath: map[string][]int{}} }

func (s *sink) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.partial = append(s.partial, p...)
	for {
		i := bytes.IndexByte(s.partial, '\n')
		if i < 0 {
			break
		}
		s.line(s.partial[:i])
		s.partial = s.partial[i+1:]
	}
	return len(p), nil
}

func (s *sink) line(b []byte) {
	if len(s.tail) >= 400 {
		s.tail = s.tail[200:]
	}
	s.tail = append(s.tail, string(b))
	var raw struct {
		Time                                                   time.Time `json:"time"`
		Msg                                                    string    `json:"msg"`
		Path, Rule, Kind, Strategy, Reason, Detail, Quarantine string
	}
	if err := json.Unmarshal(b, &raw); err != nil || raw.Msg == "" {
		if len(bytes.TrimSpace(b)) > 0 {
			s.stray = append(s.stray, string(b))
		}
		return
	}
	ev := event{Msg: raw.Msg, Path: raw.Path, Rule: raw.Rule, Kind: raw.Kind, Strategy: raw.Strategy,
		Reason: raw.Reason, Detail: raw.Detail, Quarantine: raw.Quarantine, Time: raw.Time}
	s.events = append(s.events, ev)
	if ev.Path != "" {
		s.byPath[ev.Path] = append(s.byPath[ev.Path], len(s.events)-1)
	}
}

// forPath returns the events about path logged at or after since.
func (s *sink) forPath(path string, since time.Time) []event {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []event
	for _, i := range s.byPath[path] {
		if ev := s.events[i]; !ev.Time.Before(since) {
			out = append(out, ev)
		}
	}
	return out
}

func (s *sink) all() []event {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]event(nil), s.events...)
}

func (s *sink) count(msg string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	n := 0
	for _, ev := range s.events {
		if ev.Msg == msg {
			n++
		}
	}
	return n
}

func (s *sink) last() time.Time {
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.events) == 0 {
		return time.Time{}
	}
	return s.events[len(s.events)-1].Time
}

func (s *sink) strays() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]string(nil), s.stray...)
}

func (s *sink) tailText() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return strings.Join(s.tail, "\n")
}

// runner is a running daemon, as a child process or in process.
type runner struct {
	mode string
	log  *sink
	stop func() error // stops it and reports how it ended
}

// startDaemon starts the daemon on policyFile and waits for its first scan to finish.
func startDaemon(t *testing.T, mode, policyFile string, rules int) *runner {
	t.Helper()
	r := &runner{mode: mode, log: newSink()}
	switch mode {
	case "binary":
		cmd := exec.Command(binary, "run", "-config", policyFile, "-log-format", "json", "-log-level", "debug")
		cmd.Env = append(os.Environ(), "SESSIONMEDIC_DEBUG=1")
		cmd.Stderr = r.log
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		done := make(chan error, 1)
		go func() { done <- cmd.Wait() }()
		r.stop = func() error {
			cmd.Process.Signal(syscall.SIGTERM)
			select {
			case err := <-done:
				return err
			case <-time.After(20 * time.Second):
				cmd.Process.Kill()
				<-done
				return errors.New("no exit within 20s of SIGTERM")
			}
		}
		deadline := time.Now().Add(30 * time.Second)
		for r.log.count("scan.finished") < rules {
			if time.Now().After(deadline) {
				r.stop()
				t.Fatalf("the daemon did not finish its first scan:\n%s", r.log.tailText())
			}
			time.Sleep(10 * time.Millisecond)
		}
	case "inproc":
		ctx, cancel := context.WithCancel(context.Background())
		ready := make(chan struct{})
		done := make(chan error, 1)
		o := daemon.Options{
			Load: func() (*policy.Config, []string, error) {
				cfg, err := policy.Load(policyFile)
				return cfg, nil, err
			},
			Source: policyFile,
			Log:    slog.New(slog.NewJSONHandler(r.log, &slog.HandlerOptions{Level: slog.LevelDebug})),
			Notify: func(string) error { return nil },
			Ready:  ready,
		}
		go func() { done <- daemon.Run(ctx, o) }()
		r.stop = func() error {
			cancel()
			select {
			case err := <-done:
				return err
			case <-time.After(20 * time.Second):
				return errors.New("daemon.Run did not return within 20s of cancel")
			}
		}
		select {
		case <-ready:
		case err := <-done:
			t.Fatalf("daemon.Run: %v", err)
		case <-time.After(30 * time.Second):
			r.stop()
			t.Fatal("the daemon did not finish its first scan")
		}
	default:
		t.Fatalf("unknown daemon mode %q", mode)
	}
	return r
}

// quiet waits until the daemon logged nothing for d (at most max), and reports whether it did.
func (r *runner) quiet(d, max time.Duration) bool {
	deadline := time.Now().Add(max)
	for time.Now().Before(deadline) {
		if time.Since(r.log.last()) >= d {
			return true
		}
		time.Sleep(20 * time.Millisecond)
	}
	return false
}
