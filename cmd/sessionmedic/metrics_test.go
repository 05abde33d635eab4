package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// metricLines are the sample lines of /metrics at addr whose series starts with prefix.
func metricLines(addr, prefix string) []string {
	_, body := httpGet("http://" + addr + "/metrics")
	var out []string
	for _, l := range strings.Split(body, "\n") {
		if strings.HasPrefix(l, prefix) {
			out = append(out, l)
		}
	}
	return out
}

// TestDaemonMetricsSayWhatIsDamagedNow: on the real binary, a file damage no strategy heals
// shows in sessionmedic_files_damaged until it is fixed; counters exist at 0 before any
// event; build_info names the build.
func TestDaemonMetricsSayWhatIsDamagedNow(t *testing.T) {
	home, root := t.TempDir(), t.TempDir()
	addr := freePort(t)
	policyFile := filepath.Join(home, "policy.yaml")
	os.WriteFile(policyFile, []byte(fmt.Sprintf("version: 1\nstate_dir: %s\nhttp: {listen: %q}\nrules:\n  - {name: j, format: jsonl, paths: [%s], settle: 50ms, max_wait: 1s, strategies: []}\n",
		filepath.Join(home, "state"), addr, root)), 0o644)
	d := startDaemon(t, home, "-config", policyFile)
	eventually(t, 10*time.Second, "/readyz", func() bool { c, _ := httpGet("http://" + addr + "/readyz"); return c == 200 })

	for _, want := range []string{
		`sessionmedic_heals_refused_total{kind="truncated",rule="j"} 0`,
		`sessionmedic_damage_total{kind="malformed-record",rule="j"} 0`,
		`sessionmedic_flapping_total{rule="j"} 0`,
		`sessionmedic_damage_oldest_timestamp_seconds 0`,
		`sessionmedic_config_last_reload_successful 1`,
	} {
		if got := metricLines(addr, want); len(got) != 1 {
			t.Errorf("before any event: no %s", want)
		}
	}
	if bi := metricLines(addr, "sessionmedic_build_info{"); len(bi) != 1 || !strings.Contains(bi[0], `goversion="go`) || !strings.HasSuffix(bi[0], " 1") {
		t.Errorf("build_info: %q", bi)
	}

	p := filepath.Join(root, "s.jsonl")
	os.WriteFile(p, []byte("{\"a\":1}\n{\"a\""), 0o644)
	damaged := `sessionmedic_files_damaged{kind="truncated",rule="j"} `
	eventually(t, 10*time.Second, "the damage gauge at 1", func() bool {
		l := metricLines(addr, damaged)
		return len(l) == 1 && strings.HasSuffix(l[0], " 1")
	})
	if l := metricLines(addr, "sessionmedic_damage_oldest_timestamp_seconds "); len(l) != 1 || strings.HasSuffix(l[0], " 0") {
		t.Errorf("oldest damage: %q", l)
	}
	if len(d.events("file.heal_refused")) == 0 {
		t.Errorf("no file.heal_refused")
	}
	os.WriteFile(p, []byte("{\"a\":1}\n"), 0o644)
	eventually(t, 10*time.Second, "the damage gauge back at 0", func() bool {
		l := metricLines(addr, damaged)
		return len(l) == 1 && strings.HasSuffix(l[0], " 0")
	})
}
