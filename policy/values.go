package policy

import (
	"fmt"
	"math"
	"math/big"
	"strconv"
	"strings"
	"time"
)

// sizeUnits maps a unit (case-insensitive) to its number of bytes.
var sizeUnits = map[string]int64{
	"":    1,
	"b":   1,
	"kb":  1000,
	"mb":  1000 * 1000,
	"gb":  1000 * 1000 * 1000,
	"tb":  1000 * 1000 * 1000 * 1000,
	"kib": KiB,
	"mib": MiB,
	"gib": GiB,
	"tib": GiB * 1024,
}

// ParseSize parses "256MiB", "1GB", "1.5 GiB" or a plain byte count. Decimal units (kB, MB,
// GB, TB) are powers of 1000, binary ones (KiB, MiB, GiB, TiB) powers of 1024. The result
// must be a whole, non-negative number of bytes that fits in an int64.
func ParseSize(s string) (int64, error) {
	t := strings.TrimSpace(s)
	i := strings.IndexFunc(t, func(r rune) bool {
		return (r < '0' || r > '9') && r != '.' && r != '-' && r != '+'
	})
	num, unit := t, ""
	if i >= 0 {
		num, unit = t[:i], strings.TrimSpace(t[i:])
	}
	mult, ok := sizeUnits[strings.ToLower(unit)]
	if !ok || num == "" {
		return 0, fmt.Errorf("%q is not a size", s)
	}
	r, ok := new(big.Rat).SetString(num)
	if !ok || strings.ContainsAny(num, "eE/") {
		return 0, fmt.Errorf("%q is not a size", s)
	}
	if r.Sign() < 0 {
		return 0, fmt.Errorf("%q is negative", s)
	}
	r.Mul(r, new(big.Rat).SetInt64(mult))
	if !r.IsInt() {
		return 0, fmt.Errorf("%q is not a whole number of bytes", s)
	}
	if !r.Num().IsInt64() {
		return 0, fmt.Errorf("%q is too large", s)
	}
	return r.Num().Int64(), nil
}

// FormatSize writes n with the largest binary unit that divides it exactly.
func FormatSize(n int64) string {
	for _, u := range []struct {
		name string
		size int64
	}{{"TiB", GiB * 1024}, {"GiB", GiB}, {"MiB", MiB}, {"KiB", KiB}} {
		if n != 0 && n%u.size == 0 {
			return strconv.FormatInt(n/u.size, 10) + u.name
		}
	}
	return strconv.FormatInt(n, 10)
}

// formatSizeAs writes n as it was written, text, when that still says n; else FormatSize(n).
func formatSizeAs(n int64, text string) string {
	if v, err := ParseSize(text); err == nil && v == n && text != "" {
		return text
	}
	return FormatSize(n)
}

// parseDuration parses a Go duration ("2s", "1h30m"); negative values are errors.
func parseDuration(s string) (time.Duration, error) {
	d, err := time.ParseDuration(strings.TrimSpace(s))
	if err != nil {
		return 0, fmt.Errorf("%q is not a duration", s)
	}
	if d < 0 {
		return 0, fmt.Errorf("%q is negative", s)
	}
	return d, nil
}

// FormatDuration writes d like time.Duration.String, without zero trailing units: 720h, 5m,
// 1h30m, 2s, 500ms.
func FormatDuration(d time.Duration) string {
	s := d.String()
	if strings.HasSuffix(s, "m0s") {
		s = strings.TrimSuffix(s, "0s")
	}
	if strings.HasSuffix(s, "h0m") {
		s = strings.TrimSuffix(s, "0m")
	}
	return s
}

// parseFraction parses "25%" or a fraction such as 0.25 into 0..1.
func parseFraction(s string) (float64, error) {
	t := strings.TrimSpace(s)
	pct := strings.HasSuffix(t, "%")
	v, err := strconv.ParseFloat(strings.TrimSpace(strings.TrimSuffix(t, "%")), 64)
	if err != nil || math.IsNaN(v) || math.IsInf(v, 0) {
		return 0, fmt.Errorf("%q is not a percentage or a fraction", s)
	}
	if pct {
		v /= 100
	}
	switch {
	case v < 0:
		return 0, fmt.Errorf("%q is negative", s)
	case v > 1 && !pct:
		return 0, fmt.Errorf("%q is more than 1 (write a percentage as %s%%)", s, t)
	case v > 1:
		return 0, fmt.Errorf("%q is more than 100%%", s)
	}
	return v, nil
}

// formatFraction writes v as a percentage when that reads back exactly, else as a fraction.
func formatFraction(v float64) string {
	p := strconv.FormatFloat(v*100, 'f', -1, 64) + "%"
	if back, err := parseFraction(p); err == nil && back == v {
		return p
	}
	return strconv.FormatFloat(v, 'g', -1, 64)
}
