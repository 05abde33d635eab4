package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"runtime"
	"sort"
	"time"

	"github.com/go-json-experiment/json/jsontext"
	"github.com/sessionmedic/sessionmedic/heal/jsonv"
)

var jsontextOpts = []jsontext.Options{jsontext.AllowDuplicateNames(true)}

// validators of one document.
func jsonvDoc(b []byte) error { return jsonv.Valid(b, jsonv.Dialect{}) }

func encodingJSONDoc(b []byte) error {
	if !json.Valid(b) {
		return errors.New("encoding/json: invalid")
	}
	return nil
}

// jsontextDoc reads one value with a Decoder, then expects the end of the input.
func jsontextDoc(b []byte) error {
	dec := jsontext.NewDecoder(bytes.NewBuffer(b), jsontextOpts...)
	if _, err := dec.ReadValue(); err != nil {
		return err
	}
	if _, err := dec.ReadToken(); err != io.EOF {
		return fmt.Errorf("jsontext: after the value: %v", err)
	}
	return nil
}

// perLine validates JSONL: every line (split by jsonv.Lines) with valid, and the file must
// end in a newline.
func perLine(valid func([]byte) bool) func([]byte) error {
	return func(b []byte) error {
		var err error
		jsonv.Lines(b, func(start int, line []byte, terminated bool) bool {
			if !terminated {
				err = fmt.Errorf("torn last line at %d", start)
				return false
			}
			if !valid(line) {
				err = fmt.Errorf("invalid line at %d", start)
				return false
			}
			return true
		})
		return err
	}
}

var (
	jsonvLines        = perLine(func(l []byte) bool { return jsonv.Valid(l, jsonv.Dialect{}) == nil })
	encodingJSONLines = perLine(json.Valid)
	jsontextLines     = perLine(func(l []byte) bool { return jsontext.Value(l).IsValid(jsontextOpts...) })
)

type impl struct {
	name string
	fn   func() error
}

type best struct {
	wall, cpu time.Duration
	walls     []time.Duration // every round's wall time, in round order
}

// measureInterleaved runs every impl once per round, in a rotating order, and keeps each
// one's best wall and best CPU time.
func measureInterleaved(ctx context.Context, rounds int, impls []impl) (map[string]best, error) {
	out := map[string]best{}
	for r := 0; r < rounds; r++ {
		if err := ctx.Err(); err != nil {
			return out, err
		}
		for k := range impls {
			im := impls[(k+r)%len(impls)]
			runtime.GC()
			c0, t0 := selfCPU(), time.Now()
			err := im.fn()
			wall, cpu := time.Since(t0), selfCPU()-c0
			if err != nil {
				return out, fmt.Errorf("%s: %w", im.name, err)
			}
			b, seen := out[im.name]
			b.walls = append(b.walls, wall)
			if !seen || wall < b.wall {
				b.wall = wall
			}
			if !seen || cpu < b.cpu {
				b.cpu = cpu
			}
			out[im.name] = b
		}
	}
	return out, nil
}

// preadAll reads the whole file at offset 0 into buf (the page cache's speed).
func preadAll(f *os.File, buf []byte) error {
	n, err := f.ReadAt(buf, 0)
	if n == len(buf) {
		return nil
	}
	if err == nil {
		err = io.ErrUnexpectedEOF
	}
	return err
}

const validateSize = 8 << 20

func (b *bench) validate(ctx context.Context) ([]Row, error) {
	dir, err := b.dir("validate")
	if err != nil {
		return nil, err
	}
	rounds := 15
	if b.o.quick {
		rounds = 7
	}
	formats := []struct {
		name                     string
		data                     []byte
		jsonv, encoding, jsontxt func([]byte) error
		peerNote                 string
	}{
		{"json", genJSONDoc(validateSize, 1), jsonvDoc, encodingJSONDoc, jsontextDoc, "jsontext: Decoder.ReadValue then EOF"},
		{"jsonl", genJSONL(validateSize, 2), jsonvLines, encodingJSONLines, jsontextLines, "per line: jsonv.Lines + each validator"},
	}
	var rows []Row
	for _, f := range formats {
		path := filepath.Join(dir, "session."+f.name)
		if err := os.WriteFile(path, f.data, 0o644); err != nil {
			return nil, err
		}
		file, err := os.Open(path)
		if err != nil {
			return nil, err
		}
		buf := make([]byte, len(f.data))
		data := f.data
		impls := []impl{
			{"jsonv", func() error { return f.jsonv(data) }},
			{"jsontext", func() error { return f.jsontxt(data) }},
			{"encoding/json", func() error { return f.encoding(data) }},
			{"pread", func() error { return preadAll(file, buf) }},
		}
		// One untimed pass: warms the page cache and checks every validator accepts the data.
		for _, im := range impls {
			if err := im.fn(); err != nil {
				file.Close()
				return nil, fmt.Errorf("%s %s on generated data: %w", f.name, im.name, err)
			}
		}
		b.logf("[validate] %s: %s, %d interleaved rounds", f.name, fmtBytes(int64(len(data))), rounds)
		res, err := measureInterleaved(ctx, rounds, impls)
		file.Close()
		if err != nil {
			return rows, err
		}
		size := float64(len(data))
		rate := func(n string) float64 { return size / res[n].wall.Seconds() }
		cpuRate := func(n string) float64 { return size / max(res[n].cpu.Seconds(), 1e-9) }
		for _, peer := range []struct {
			name   string
			target float64
		}{{"jsontext", 2}, {"encoding/json", 5}} {
			ratio := rate("jsonv") / rate(peer.name)
			r := Row{
				Workload:     "validate",
				Goal:         fmt.Sprintf("strict validation, %s %s, page cache", fmtBytes(int64(len(data))), f.name),
				Sessionmedic: "jsonv " + fmtRate(rate("jsonv")),
				Peers:        peer.name + " " + fmtRate(rate(peer.name)),
				Target:       fmt.Sprintf("≥ %g×", peer.target),
				Met:          metIf(ratio >= peer.target),
			}
			r.setRatio(ratio)
			r.addNote("pread of the same bytes %s", fmtRate(rate("pread")))
			r.addNote("best of %d interleaved runs (median of per-round ratios %s)", rounds, fmtRatio(medianRatio(res[peer.name].walls, res["jsonv"].walls)))
			r.addNote("by CPU time: jsonv %s, %s %s", fmtRate(cpuRate("jsonv")), peer.name, fmtRate(cpuRate(peer.name)))
			if peer.name == "jsontext" {
				r.addNote("%s", f.peerNote)
			} else {
				r.addNote("encoding/json.Valid does not check UTF-8")
			}
			for _, n := range []string{"jsonv", "jsontext", "encoding/json", "pread"} {
				r.metric(n+"_mb_s", rate(n)/1e6)
			}
			r.metric("bytes", size)
			rows = append(rows, r)
		}
	}
	return rows, nil
}

// medianRatio is the median over rounds of num[i]/den[i].
func medianRatio(num, den []time.Duration) float64 {
	n := min(len(num), len(den))
	if n == 0 {
		return math.NaN()
	}
	rs := make([]float64, n)
	for i := range rs {
		rs[i] = num[i].Seconds() / den[i].Seconds()
	}
	sort.Float64s(rs)
	if n%2 == 1 {
		return rs[n/2]
	}
	return (rs[n/2-1] + rs[n/2]) / 2
}
