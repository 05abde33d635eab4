package main

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"
	"time"
)

func TestGrowthTreeSpec(t *testing.T) {
	for _, c := range []struct {
		files int
		want  treeSpec
	}{
		{100, treeSpec{Top: 2, Leaves: 5, Files: 10}},
		{1000, treeSpec{Top: 10, Leaves: 10, Files: 10}},
		{10000, treeSpec{Top: 25, Leaves: 40, Files: 10}},
		{100000, treeSpec{Top: 100, Leaves: 100, Files: 10}},
		{10, treeSpec{Top: 1, Leaves: 1, Files: 10}},
		{70, treeSpec{Top: 1, Leaves: 7, Files: 10}},
	} {
		got := growthTreeSpec(c.files)
		if got != c.want || got.files() != c.files {
			t.Errorf("growthTreeSpec(%d) = %+v (%d files), want %+v", c.files, got, got.files(), c.want)
		}
	}
	// The full run's largest point is the scan tree's shape, so it can be shared.
	if got := growthTreeSpec(100000); got != (&bench{}).treeSpec() {
		t.Errorf("100,000 files: %+v, the scan tree is %+v", got, (&bench{}).treeSpec())
	}
}

func TestPlanGrowth(t *testing.T) {
	for _, quick := range []bool{false, true} {
		p := planGrowth(quick)
		if len(p.sizes) != 3 || len(p.counts) != 3 || len(p.rates) != 3 {
			t.Fatalf("quick=%v: %+v", quick, p)
		}
		for _, n := range p.counts {
			if n%growthFilesPerDir != 0 || growthTreeSpec(n).files() != n {
				t.Errorf("quick=%v: %d files cannot be laid out 10 to a directory", quick, n)
			}
		}
		for _, s := range p.sizes {
			if s%(1<<20) != 0 {
				t.Errorf("quick=%v: size %d is not whole MiB (the file repeats a 1 MiB chunk)", quick, s)
			}
		}
		perWriter := p.rateFiles / latWriters
		for _, r := range p.rates {
			damages := int(p.rateDur.Seconds()) * r / damageEveryFor(r, growthDamageRate)
			if damages/latWriters+2 >= perWriter {
				t.Errorf("quick=%v: %d writes/s damages %d files, the writers would run out", quick, r, damages)
			}
		}
		if perWriter%7 == 0 {
			t.Errorf("quick=%v: the writer's stride 7 must be co-prime with its share of %d files", quick, perWriter)
		}
	}
	if q, f := planGrowth(true), planGrowth(false); q.counts[2] >= f.counts[2] || q.rateDur >= f.rateDur {
		t.Error("quick must be smaller")
	}
}

func TestDamageEveryFor(t *testing.T) {
	for _, c := range []struct{ rate, per, want int }{
		{1000, 20, 50}, {300, 20, 15}, {100, 20, 5}, {10, 20, 1}, {100, 0, 100},
	} {
		if got := damageEveryFor(c.rate, c.per); got != c.want {
			t.Errorf("damageEveryFor(%d, %d) = %d, want %d", c.rate, c.per, got, c.want)
		}
	}
}

func TestGrowthFormatting(t *testing.T) {
	for _, c := range []struct{ got, want string }{
		{fmtCount(0), "0"},
		{fmtCount(999), "999"},
		{fmtCount(1000), "1,000"},
		{fmtCount(100000), "100,000"},
		{fmtCount(1234567), "1,234,567"},
		{fmtCount(-1234), "-1,234"},
		{fmtSize(1 << 20), "1 MiB"},
		{fmtSize(128 << 20), "128 MiB"},
		{fmtSize(1536), "1.5 KiB"},
		{everyNth(1), "every write"},
		{everyNth(2), "every 2nd write"},
		{everyNth(3), "every 3rd write"},
		{everyNth(5), "every 5th write"},
		{everyNth(12), "every 12th write"},
		{everyNth(21), "every 21st write"},
		{everyNth(50), "every 50th write"},
	} {
		if c.got != c.want {
			t.Errorf("got %q, want %q", c.got, c.want)
		}
	}
}

func TestWriteRepeated(t *testing.T) {
	chunk := genChunk(4<<10, 7)
	path := filepath.Join(t.TempDir(), "s.jsonl")
	if err := writeRepeated(path, chunk, 3*int64(len(chunk))); err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(data, bytes.Repeat(chunk, 3)) {
		t.Fatalf("%d bytes, want 3 chunks", len(data))
	}
	if err := jsonvLines(data); err != nil {
		t.Fatal(err)
	}
	if err := readThrough(path); err != nil {
		t.Fatal(err)
	}
}

func TestLatRun(t *testing.T) {
	start := time.Unix(1000, 0)
	r := &latRun{start: start, writeDur: 3 * time.Second, drained: time.Second, daemonCPU: time.Second, writes: 300}
	for i, ms := range []int{10, 20, 30, 40, 50, 60} {
		r.samples = append(r.samples, latSample{at: start.Add(time.Duration(i) * 500 * time.Millisecond), lat: time.Duration(ms) * time.Millisecond})
	}
	if got := r.lats(); len(got) != 6 || got[5] != 60*time.Millisecond {
		t.Fatalf("lats %v", got)
	}
	for k, want := range [][]time.Duration{{10 * time.Millisecond, 20 * time.Millisecond}, {30 * time.Millisecond, 40 * time.Millisecond}, {50 * time.Millisecond, 60 * time.Millisecond}} {
		got := r.third(k)
		if len(got) != len(want) || got[0] != want[0] || got[1] != want[1] {
			t.Errorf("third(%d) = %v, want %v", k, got, want)
		}
	}
	if r.achieved() != 100 || r.cpuShare() != 0.25 {
		t.Errorf("achieved %v, cpu share %v", r.achieved(), r.cpuShare())
	}
}
