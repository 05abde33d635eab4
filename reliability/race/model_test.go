package race

import (
	"bytes"
	"context"
	"math/rand/v2"
	"os"
	"strings"
	"testing"
	"time"
)

// TestClaudeBatchesAfterAHeal holds the writers' model of what Claude Code leaves on disk to
// the app's behaviour: a write is two batches in flight at once, and the kernel lands them
// either way round. With a racing bad line pending, the daemon's heal may land between the
// app's check and its write: the bytes before the batches are then the heal's, and the file
// is the heal's bytes with the two batches in the order they landed. That is what the app
// left there (the racing damage healed), never an unexpected change.
func TestClaudeBatchesAfterAHeal(t *testing.T) {
	for _, tc := range []struct {
		name      string
		heal      bool // the heal lands between the check and the write
		recFirst  bool // the chain record lands before the meta record
		wantHeals int64
	}{
		{"no heal, meta first", false, false, 0},
		{"no heal, record first", false, true, 0},
		{"healed, meta first", true, false, 1},
		{"healed, record first", true, true, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := &env{fig: &figure{}, log: newSink(), locks: map[string][]interval{}, unlocked: map[string]bool{"claude-code": true}}
			c := &claude{dir: t.TempDir(), tag: "0", host: e}
			ctx := context.Background()
			s, err := c.create(ctx)
			if err != nil {
				t.Fatal(err)
			}
			// A racing bad line, as runWriter injects it: the app writes on at once.
			before := s.last
			kind, bad, err := c.damage(ctx, rand.New(rand.NewPCG(1, 2)), s, true)
			if err != nil {
				t.Fatal(err)
			}
			inj := &injection{style: c.name(), path: s.path, kind: kind, racing: true, at: time.Now(), badSHA: shaOf(bad)}
			e.record(inj)
			s.last, s.alt, s.altInj = bad, before, inj
			e.check(c.name(), s, "before the write", c.keepsInode(), c.heldOpen())

			c.land = func(path string, meta, rec []byte) error {
				if tc.heal {
					// The daemon's heal: the bad line dropped, renamed over the path.
					if err := writeReplace(path, path+".heal.tmp", before); err != nil {
						return err
					}
				}
				first, second := meta, rec
				if tc.recFirst {
					first, second = rec, meta
				}
				if err := appendBatch(path, first); err != nil {
					return err
				}
				return appendBatch(path, second)
			}
			id := e.newID("cc0")
			prev := s.last
			b, err := c.write(s, id)
			if err != nil {
				t.Fatal(err)
			}
			e.committed(c, s, id, prev, b)
			e.check(c.name(), s, "after the write", c.keepsInode(), c.heldOpen())

			if n := e.fig.unexpected.Load(); n != 0 {
				t.Fatalf("%d unexpected changes:\n%s", n, strings.Join(e.problems, "\n"))
			}
			if n := e.fig.racingHealed.Load(); n != tc.wantHeals {
				t.Fatalf("racing damages healed: %d, want %d", n, tc.wantHeals)
			}
			if tc.heal != (s.alt == nil) {
				t.Fatalf("racing damage pending: %v, healed: %v", s.alt != nil, tc.heal)
			}
			cur, err := os.ReadFile(s.path)
			if err != nil || !bytes.Equal(cur, s.last) {
				t.Fatalf("the app's record of its file is not the file (%v):\n  app  %q\n  file %q", err, s.last, cur)
			}
			// The next write is checked against the order that landed.
			c.land = nil
			id = e.newID("cc0")
			prev = s.last
			if b, err = c.write(s, id); err != nil {
				t.Fatal(err)
			}
			e.committed(c, s, id, prev, b)
			e.check(c.name(), s, "after the next write", c.keepsInode(), c.heldOpen())
			if n := e.fig.unexpected.Load(); n != 0 {
				t.Fatalf("%d unexpected changes after the next write:\n%s", n, strings.Join(e.problems, "\n"))
			}
		})
	}
}
