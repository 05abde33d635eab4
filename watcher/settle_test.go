package watcher

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"testing/synctest"
	"time"

	"github.com/fsnotify/fsnotify"
)

const ms = time.Millisecond

// fakeRun starts a Watcher on a fake source inside a synctest bubble.
func fakeRun(t *testing.T, o Options) (*harness, *fakeSource) {
	t.Helper()
	src := newFakeSource()
	o.Source = src
	h := start(t, o)
	h.mark()
	return h, src
}

func send(src *fakeSource, path string, op fsnotify.Op) {
	src.events <- fsnotify.Event{Name: path, Op: op}
}

func wantDeliveries(t *testing.T, got, want []delivery) {
	t.Helper()
	if !slices.Equal(got, want) {
		t.Fatalf("deliveries:\n got %v\nwant %v", got, want)
	}
}

func TestSettleAfterLastEvent(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		root := t.TempDir()
		f := filepath.Join(root, "s.json")
		writeFile(t, f, "{}")
		h, src := fakeRun(t, Options{Roots: []string{root}, Settle: fixed(500*ms, 3*time.Second)})
		defer h.stop()

		send(src, f, fsnotify.Create)
		time.Sleep(200 * ms)
		send(src, f, fsnotify.Write)
		time.Sleep(200 * ms)
		send(src, f, fsnotify.Write) // the last event, at 400ms

		time.Sleep(500*ms - time.Nanosecond)
		synctest.Wait()
		wantDeliveries(t, h.events(), nil)

		time.Sleep(time.Nanosecond)
		synctest.Wait()
		wantDeliveries(t, h.events(), []delivery{{900 * ms, Event{Path: f}}})

		time.Sleep(time.Minute)
		synctest.Wait()
		wantDeliveries(t, h.events(), []delivery{{900 * ms, Event{Path: f}}})
	})
}

func TestMaxWaitForcesDuringBurst(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		root := t.TempDir()
		f := filepath.Join(root, "log.jsonl")
		writeFile(t, f, "")
		h, src := fakeRun(t, Options{Roots: []string{root}, Settle: fixed(500*ms, 3*time.Second)})
		defer h.stop()

		for i := range 100 { // a write every 100ms for 10s: the last at 9.9s
			if i > 0 {
				time.Sleep(100 * ms)
			}
			appendFile(t, f, "{}\n")
			send(src, f, fsnotify.Write)
		}
		time.Sleep(10 * time.Second)
		synctest.Wait()
		wantDeliveries(t, h.events(), []delivery{
			{3 * time.Second, Event{Path: f, Forced: true}},
			{6 * time.Second, Event{Path: f, Forced: true}},
			{9 * time.Second, Event{Path: f, Forced: true}},
			{10400 * ms, Event{Path: f}},
		})
	})
}

func TestPathsSettleIndependently(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		root := t.TempDir()
		a, b := filepath.Join(root, "a.json"), filepath.Join(root, "b.json")
		writeFile(t, a, "{}")
		writeFile(t, b, "{}")
		settle := func(p string) (time.Duration, time.Duration) {
			if p == b {
				return time.Second, 10 * time.Second
			}
			return 500 * ms, 10 * time.Second
		}
		h, src := fakeRun(t, Options{Roots: []string{root}, Settle: settle})
		defer h.stop()

		send(src, a, fsnotify.Write)
		time.Sleep(200 * ms)
		send(src, b, fsnotify.Write)
		time.Sleep(400 * ms)
		send(src, a, fsnotify.Write) // at 600ms, after a settled once; b is untouched by it
		time.Sleep(5 * time.Second)
		synctest.Wait()
		wantDeliveries(t, h.events(), []delivery{
			{500 * ms, Event{Path: a}},
			{1100 * ms, Event{Path: a}},
			{1200 * ms, Event{Path: b}},
		})
	})
}

func TestStatChangeWithoutEventRearms(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		root := t.TempDir()
		f := filepath.Join(root, "s.json")
		writeFile(t, f, "{}")
		h, src := fakeRun(t, Options{Roots: []string{root}, Settle: fixed(500*ms, 10*time.Second)})
		defer h.stop()

		send(src, f, fsnotify.Write)
		time.Sleep(300 * ms)
		appendFile(t, f, "\n") // a change whose event never came
		time.Sleep(200 * ms)
		synctest.Wait()
		wantDeliveries(t, h.events(), nil) // the stats differ at 500ms: a new quiet period

		time.Sleep(500*ms - time.Nanosecond)
		synctest.Wait()
		wantDeliveries(t, h.events(), nil)
		time.Sleep(time.Nanosecond)
		synctest.Wait()
		wantDeliveries(t, h.events(), []delivery{{time.Second, Event{Path: f}}})
	})
}

func TestDeletedFileIsDelivered(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		root := t.TempDir()
		f := filepath.Join(root, "gone.json")
		writeFile(t, f, "{}")
		h, src := fakeRun(t, Options{Roots: []string{root}, Settle: fixed(500*ms, 10*time.Second)})
		defer h.stop()

		if err := os.Remove(f); err != nil {
			t.Fatal(err)
		}
		send(src, f, fsnotify.Chmod) // inotify's first sign of a delete: ignored
		send(src, f, fsnotify.Remove)
		time.Sleep(time.Second)
		synctest.Wait()
		wantDeliveries(t, h.events(), []delivery{{500 * ms, Event{Path: f}}})
	})
}

func TestChmodAndFilteredEventsAreIgnored(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		root := t.TempDir()
		f, tmp := filepath.Join(root, "s.json"), filepath.Join(root, "s.json.tmp")
		writeFile(t, f, "{}")
		writeFile(t, tmp, "{}")
		filter := func(p string, isDir bool) bool { return isDir || filepath.Ext(p) != ".tmp" }
		h, src := fakeRun(t, Options{Roots: []string{root}, Filter: filter, Settle: fixed(500*ms, 10*time.Second)})
		defer h.stop()

		send(src, f, fsnotify.Chmod)
		send(src, tmp, fsnotify.Write)
		send(src, filepath.Join(t.TempDir(), "elsewhere.json"), fsnotify.Write) // not under a root
		time.Sleep(time.Minute)
		synctest.Wait()
		wantDeliveries(t, h.events(), nil)
	})
}

// A reader that never drains Events must not stop Run: rescans still come out, and settled
// paths wait, once each.
func TestSlowEventReaderDoesNotStallRun(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		root := t.TempDir()
		src := newFakeSource()
		w, err := New(Options{Roots: []string{root}, Source: src, Settle: fixed(100*ms, time.Second)})
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan error)
		go func() { done <- w.Run(ctx) }()
		<-w.Ready()

		f := filepath.Join(root, "s.json")
		for range 3 {
			send(src, f, fsnotify.Write)
			time.Sleep(time.Second)
		}
		for range 10 {
			src.errors <- fsnotify.ErrEventOverflow
		}
		if r := <-w.Rescans(); r != root {
			t.Fatalf("rescan %q, want %q", r, root)
		}
		synctest.Wait()
		select {
		case r := <-w.Rescans():
			t.Fatalf("rescans not coalesced: another %q", r)
		default:
		}
		if e := <-w.Events(); e != (Event{Path: f}) {
			t.Fatalf("event %v", e)
		}
		synctest.Wait()
		select {
		case e := <-w.Events():
			t.Fatalf("a path waiting twice: %v", e)
		default:
		}
		cancel()
		if err := <-done; err != nil {
			t.Fatal(err)
		}
		if !src.isClosed() {
			t.Error("Run did not close its source")
		}
	})
}
