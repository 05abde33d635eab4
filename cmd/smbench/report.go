package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"os"
	"runtime"
	"sort"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"
)

// Met values of a row.
const (
	metYes   = "yes"
	metNo    = "no"
	metNA    = "n/a"   // nothing to compare (a peer is missing, a quick-mode stand-in)
	metError = "error" // the measurement itself failed
)

// Row is one line of the result table: one goal, sessionmedic's figure, the peers', the
// ratio and whether the target is met. Metrics holds the raw numbers (seconds, bytes,
// MB/s) for machines.
type Row struct {
	Workload     string             `json:"workload"`
	Goal         string             `json:"goal"`
	Sessionmedic string             `json:"sessionmedic"`
	Peers        string             `json:"peers"`
	Ratio        string             `json:"ratio"`
	RatioValue   *float64           `json:"ratio_value,omitempty"`
	Target       string             `json:"target"`
	Met          string             `json:"met"`
	Note         string             `json:"note,omitempty"`
	Metrics      map[string]float64 `json:"metrics,omitempty"`
}

func (r *Row) setRatio(v float64) {
	if math.IsNaN(v) || math.IsInf(v, 0) {
		r.Ratio = "—"
		return
	}
	r.RatioValue = &v
	r.Ratio = fmtRatio(v)
}

func (r *Row) metric(name string, v float64) {
	if r.Metrics == nil {
		r.Metrics = map[string]float64{}
	}
	if math.IsNaN(v) || math.IsInf(v, 0) {
		return
	}
	r.Metrics[name] = v
}

func (r *Row) addNote(format string, args ...any) {
	s := fmt.Sprintf(format, args...)
	if r.Note == "" {
		r.Note = s
		return
	}
	r.Note += "; " + s
}

func metIf(ok bool) string {
	if ok {
		return metYes
	}
	return metNo
}

func fmtRatio(v float64) string {
	switch {
	case v >= 100:
		return fmt.Sprintf("%.0f×", v)
	case v >= 10:
		return fmt.Sprintf("%.1f×", v)
	default:
		return fmt.Sprintf("%.2f×", v)
	}
}

// fmtRate formats a throughput in MB/s (10^6 bytes per second).
func fmtRate(bytesPerSec float64) string {
	mb := bytesPerSec / 1e6
	switch {
	case mb >= 100:
		return fmt.Sprintf("%.0f MB/s", mb)
	case mb >= 10:
		return fmt.Sprintf("%.1f MB/s", mb)
	default:
		return fmt.Sprintf("%.2f MB/s", mb)
	}
}

// fmtDur formats a duration with three significant digits.
func fmtDur(d time.Duration) string {
	s := d.Seconds()
	switch {
	case d == 0:
		return "0 s"
	case s >= 100:
		return fmt.Sprintf("%.0f s", s)
	case s >= 1:
		return fmt.Sprintf("%.3g s", s)
	case s >= 1e-3:
		return fmt.Sprintf("%.3g ms", s*1e3)
	default:
		return fmt.Sprintf("%.3g µs", s*1e6)
	}
}

// fmtBytes formats a size in binary units.
func fmtBytes(n int64) string {
	f := float64(n)
	switch {
	case n >= 1<<30:
		return fmt.Sprintf("%.2f GiB", f/(1<<30))
	case n >= 1<<20:
		return fmt.Sprintf("%.1f MiB", f/(1<<20))
	case n >= 1<<10:
		return fmt.Sprintf("%.1f KiB", f/(1<<10))
	}
	return fmt.Sprintf("%d B", n)
}

// percentile is the nearest-rank p-th percentile (0 < p <= 100) of xs; 0 for none.
func percentile(xs []time.Duration, p float64) time.Duration {
	if len(xs) == 0 {
		return 0
	}
	s := append([]time.Duration(nil), xs...)
	sort.Slice(s, func(i, j int) bool { return s[i] < s[j] })
	k := int(math.Ceil(p/100*float64(len(s)))) - 1
	return s[min(max(k, 0), len(s)-1)]
}

var tableHeader = []string{"workload", "goal", "sessionmedic", "peer(s)", "ratio", "target", "met", "note"}

// writeTable prints the rows as one aligned table.
func writeTable(w io.Writer, rows []Row) error {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	clean := func(s string) string {
		s = strings.NewReplacer("\t", " ", "\n", " ").Replace(s)
		if s == "" {
			return "—"
		}
		return s
	}
	fmt.Fprintln(tw, strings.Join(tableHeader, "\t"))
	for _, r := range rows {
		cols := []string{r.Workload, r.Goal, r.Sessionmedic, r.Peers, r.Ratio, r.Target, r.Met, r.Note}
		for i := range cols {
			cols[i] = clean(cols[i])
		}
		fmt.Fprintln(tw, strings.Join(cols, "\t"))
	}
	return tw.Flush()
}

// Machine describes where the benchmark ran.
type Machine struct {
	CPU        string  `json:"cpu"`
	Cores      int     `json:"cores"`
	MemoryGiB  float64 `json:"memory_gib"`
	Kernel     string  `json:"kernel"`
	GoVersion  string  `json:"go_version"`
	OS         string  `json:"os"`
	LoadStart  string  `json:"loadavg_start"`
	LoadEnd    string  `json:"loadavg_end"`
	Filesystem string  `json:"tmp_filesystem,omitempty"`
}

func describeMachine() Machine {
	m := Machine{Cores: runtime.NumCPU(), GoVersion: runtime.Version(), OS: runtime.GOOS + "/" + runtime.GOARCH, CPU: "unknown"}
	if f, err := os.Open("/proc/cpuinfo"); err == nil {
		sc := bufio.NewScanner(f)
		for sc.Scan() {
			if k, v, ok := strings.Cut(sc.Text(), ":"); ok && strings.TrimSpace(k) == "model name" {
				m.CPU = strings.TrimSpace(v)
				break
			}
		}
		f.Close()
	}
	if b, err := os.ReadFile("/proc/meminfo"); err == nil {
		for _, line := range strings.Split(string(b), "\n") {
			if rest, ok := strings.CutPrefix(line, "MemTotal:"); ok {
				f := strings.Fields(rest)
				if len(f) > 0 {
					kb, _ := strconv.ParseFloat(f[0], 64)
					m.MemoryGiB = math.Round(kb/(1<<20)*10) / 10
				}
			}
		}
	}
	typ, _ := os.ReadFile("/proc/sys/kernel/ostype")
	rel, _ := os.ReadFile("/proc/sys/kernel/osrelease")
	m.Kernel = strings.TrimSpace(strings.TrimSpace(string(typ)) + " " + strings.TrimSpace(string(rel)))
	m.LoadStart = loadavg()
	return m
}

func loadavg() string {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return ""
	}
	f := strings.Fields(string(b))
	if len(f) < 3 {
		return ""
	}
	return strings.Join(f[:3], " ")
}

func (m Machine) String() string {
	return fmt.Sprintf("%s, %d cores, %.1f GiB, %s, %s, load %s → %s", m.CPU, m.Cores, m.MemoryGiB, m.Kernel, m.GoVersion, m.LoadStart, m.LoadEnd)
}

// Result is the -json document.
type Result struct {
	Machine  Machine  `json:"machine"`
	Quick    bool     `json:"quick"`
	Started  string   `json:"started"`
	Seconds  float64  `json:"seconds"`
	Binary   string   `json:"binary,omitempty"`
	Source   string   `json:"binary_source,omitempty"`
	Rows     []Row    `json:"rows"`
	Warnings []string `json:"warnings,omitempty"`
}

func writeJSON(w io.Writer, res Result) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	enc.SetEscapeHTML(false)
	return enc.Encode(res)
}
