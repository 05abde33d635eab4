package daemon

import (
	"os"
	"reflect"
	"regexp"
	"slices"
	"strings"
	"testing"
	"unsafe"

	"github.com/prometheus/client_golang/prometheus"
)

// registered is the name of every series family of the daemon's own (sessionmedic_*).
func registered(t *testing.T) []string {
	t.Helper()
	m := newMetrics("v", "r")
	r := m.addReloadSeries()
	var cs []prometheus.Collector
	for _, v := range []reflect.Value{reflect.ValueOf(m).Elem(), reflect.ValueOf(r).Elem()} {
		for i := 0; i < v.NumField(); i++ {
			f := v.Field(i)
			f = reflect.NewAt(f.Type(), unsafe.Pointer(f.UnsafeAddr())).Elem() // every field, exported or not
			if c, ok := f.Interface().(prometheus.Collector); ok && !f.IsNil() {
				cs = append(cs, c)
			}
		}
	}
	fq := regexp.MustCompile(`fqName: "([a-z_]+)"`)
	var names []string
	for _, c := range cs {
		ch := make(chan *prometheus.Desc, 16)
		go func() { c.Describe(ch); close(ch) }()
		for d := range ch {
			if m := fq.FindStringSubmatch(d.String()); m != nil && strings.HasPrefix(m[1], "sessionmedic_") {
				names = append(names, m[1])
			}
		}
	}
	return names
}

// README's table of metrics lists exactly the series the daemon registers.
func TestReadmeListsEveryMetric(t *testing.T) {
	b, err := os.ReadFile("../README.md")
	if err != nil {
		t.Fatal(err)
	}
	row := regexp.MustCompile("^\\| `(sessionmedic_[a-z_]+)` \\| (counter|gauge|histogram) \\|")
	var listed []string
	for line := range strings.Lines(string(b)) {
		if m := row.FindStringSubmatch(line); m != nil {
			listed = append(listed, m[1])
		}
	}
	names := registered(t)
	if len(names) < 20 {
		t.Fatalf("only %d series found registered: %v", len(names), names)
	}
	for _, n := range names {
		if !slices.Contains(listed, n) {
			t.Errorf("README's table of metrics does not list %s", n)
		}
	}
	for _, n := range listed {
		if !slices.Contains(names, n) {
			t.Errorf("README's table of metrics lists %s, which the daemon does not register", n)
		}
	}
}
