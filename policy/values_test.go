package policy

import (
	"math"
	"strings"
	"testing"
	"time"

	"github.com/sessionmedic/sessionmedic/internal/layering"
)

func TestParseSize(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want int64
		err  string
	}{
		{"0", 0, ""},
		{"1048576", MiB, ""},
		{"256MiB", 256 * MiB, ""},
		{"256 MiB", 256 * MiB, ""},
		{"1GB", 1_000_000_000, ""},
		{"1gib", GiB, ""},
		{"1.5GiB", 3 * GiB / 2, ""},
		{"2kB", 2000, ""},
		{"4KiB", 4 * KiB, ""},
		{"1TiB", 1 << 40, ""},
		{"10B", 10, ""},
		{"8191PiB", 0, `"8191PiB" is not a size`},
		{"12XB", 0, `"12XB" is not a size`},
		{"MiB", 0, `"MiB" is not a size`},
		{"", 0, `"" is not a size`},
		{"1e3", 0, `"1e3" is not a size`},
		{"1/2GiB", 0, `"1/2GiB" is not a size`},
		{"-1", 0, `"-1" is negative`},
		{"-1MiB", 0, `"-1MiB" is negative`},
		{"1.5", 0, `"1.5" is not a whole number of bytes`},
		{"9999999TiB", 0, `"9999999TiB" is too large`},
	} {
		got, err := ParseSize(tc.in)
		if got != tc.want || errString(err) != tc.err {
			t.Errorf("ParseSize(%q) = %d, %v; want %d, %s", tc.in, got, err, tc.want, tc.err)
		}
	}
}

func TestFormatSize(t *testing.T) {
	for n, want := range map[int64]string{
		0: "0", 1: "1", 1000: "1000", KiB: "1KiB", 1536: "1536", 64 * MiB: "64MiB",
		GiB: "1GiB", 3 * GiB / 2: "1536MiB", 1 << 40: "1TiB", 1_000_000_000: "1000000000",
	} {
		if got := FormatSize(n); got != want {
			t.Errorf("FormatSize(%d) = %q, want %q", n, got, want)
		}
		if back, err := ParseSize(FormatSize(n)); err != nil || back != n {
			t.Errorf("ParseSize(FormatSize(%d)) = %d, %v", n, back, err)
		}
	}
}

func TestDurations(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want time.Duration
		err  string
	}{
		{"2s", 2 * time.Second, ""},
		{"0", 0, ""},
		{"1h30m", 90 * time.Minute, ""},
		{"500ms", 500 * time.Millisecond, ""},
		{"2x", 0, `"2x" is not a duration`},
		{"2", 0, `"2" is not a duration`},
		{"-1s", 0, `"-1s" is negative`},
	} {
		got, err := parseDuration(tc.in)
		if got != tc.want || errString(err) != tc.err {
			t.Errorf("parseDuration(%q) = %v, %v; want %v, %s", tc.in, got, err, tc.want, tc.err)
		}
	}
	for d, want := range map[time.Duration]string{
		0: "0s", 2 * time.Second: "2s", 5 * time.Minute: "5m", 720 * time.Hour: "720h",
		90 * time.Minute: "1h30m", time.Hour + 30*time.Second: "1h0m30s", 1500 * time.Millisecond: "1.5s",
		time.Millisecond: "1ms",
	} {
		if got := FormatDuration(d); got != want {
			t.Errorf("FormatDuration(%v) = %q, want %q", d, got, want)
		}
		if back, err := parseDuration(FormatDuration(d)); err != nil || back != d {
			t.Errorf("parseDuration(FormatDuration(%v)) = %v, %v", d, back, err)
		}
	}
}

func TestFractions(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want float64
		err  string
	}{
		{"25%", 0.25, ""},
		{"0%", 0, ""},
		{"100%", 1, ""},
		{"12.5%", 0.125, ""},
		{"0.25", 0.25, ""},
		{"1", 1, ""},
		{"0", 0, ""},
		{"150%", 0, `"150%" is more than 100%`},
		{"-10%", 0, `"-10%" is negative`},
		{"-0.1", 0, `"-0.1" is negative`},
		{"25", 0, `"25" is more than 1 (write a percentage as 25%)`},
		{"half", 0, `"half" is not a percentage or a fraction`},
		{"NaN", 0, `"NaN" is not a percentage or a fraction`},
		{"%", 0, `"%" is not a percentage or a fraction`},
	} {
		got, err := parseFraction(tc.in)
		if got != tc.want || errString(err) != tc.err {
			t.Errorf("parseFraction(%q) = %v, %v; want %v, %s", tc.in, got, err, tc.want, tc.err)
		}
	}
	for _, v := range []float64{0, 0.5, 0.25, 0.07, 0.1, 1.0 / 3, 0.123456789, 1, math.Nextafter(0.5, 1)} {
		s := formatFraction(v)
		if back, err := parseFraction(s); err != nil || back != v {
			t.Errorf("formatFraction(%v) = %q, which reads back as %v, %v", v, s, back, err)
		}
	}
	if got := formatFraction(0.5); got != "50%" {
		t.Errorf("formatFraction(0.5) = %q", got)
	}
}

func errString(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}

// TestImports keeps the layering of DESIGN.md §2: policy imports no other package of ours but
// the leaf packages, which import none either.
func TestImports(t *testing.T) {
	layering.Check(t, ".", false, layering.Leaf)
}

// plain is c without the sizes' written text: a Config as its values, for comparisons.
func plain(c *Config) *Config {
	p := *c
	p.Quarantine.maxBytesText = ""
	p.LastGood.maxFileText, p.LastGood.maxTotalText = "", ""
	p.Rules = nil
	for _, r := range c.Rules {
		p.Rules = append(p.Rules, plainRule(r))
	}
	return &p
}

func plainRule(r Rule) Rule {
	r.Limits.maxFileSizeText = ""
	return r
}

// TestSizesEchoAsWritten: a size comes back from Marshal in the unit it was written in.
func TestSizesEchoAsWritten(t *testing.T) {
	c, err := ParseEnv("t.yaml", []byte("version: 1\nquarantine: {max_bytes: 1 GB}\nlast_good: {max_file_bytes: 1048576}\n"+
		"rules:\n  - {name: a, format: json, paths: [/srv/a], limits: {max_file_size: 2.5MB}}\n"), fakeEnv(nil))
	if err != nil {
		t.Fatal(err)
	}
	out := string(Marshal(c))
	for _, want := range []string{"max_bytes: 1GB\n", "max_file_bytes: \"1048576\"\n", "max_total_bytes: 1GiB\n", "max_file_size: 2.5MB}"} {
		if !strings.Contains(out, want) {
			t.Errorf("no %q in\n%s", want, out)
		}
	}
	c.Quarantine.MaxBytes = 5 * MiB // changed since: the text no longer says it
	if out := string(Marshal(c)); !strings.Contains(out, "max_bytes: 5MiB\n") {
		t.Errorf("a changed size is written as written before:\n%s", out)
	}
}
