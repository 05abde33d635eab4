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

// httpJSONLPolicy writes, in a fresh home, a policy of one JSONL rule "j" over a fresh root
// (settle 50ms, max_wait 1s, and the rule's keys extra), with its state dir there and an
// HTTP endpoint on a free port: the home, the root, the endpoint's address and the policy.
func httpJSONLPolicy(t *testing.T, extra string) (home, root, addr, policyFile string) {
	t.Helper()
	home, root = t.TempDir(), t.TempDir()
	addr = freePort(t)
	policyFile = filepath.Join(home, "policy.yaml")
	os.WriteFile(policyFile, []byte(fmt.Sprintf("version: 1\nstate_dir: %s\nhttp: {listen: %q}\nrules:\n  - {name: j, format: jsonl, paths: [%s], settle: 50ms, max_wait: 1s%s}\n",
		filepath.Join(home, "state"), addr, root, extra)), 0o644)
	return home, root, addr, policyFile
}

// TestDaemonMetricsSayWhatIsDamagedNow: on the real binary, a file damage no strategy heals
// shows in sessionmedic_files_damaged until it is fixed; counters exist at 0 before any
// event; build_info names the build.
func TestDaemonMetricsSayWhatIsDamagedNow(t *testing.T) {
	home, root, addr, policyFile := httpJSONLPolicy(t, ", strategies: []")
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
	// The log is read from the daemon's stderr on a goroutine of its own: the line may
	// arrive after the scrape that showed the gauge.
	eventually(t, 10*time.Second, "file.heal_refused", func() bool { return len(d.events("file.heal_refused")) > 0 })
	os.WriteFile(p, []byte("{\"a\":1}\n"), 0o644)
	eventually(t, 10*time.Second, "the damage gauge back at 0", func() bool {
		l := metricLines(addr, damaged)
		return len(l) == 1 && strings.HasSuffix(l[0], " 0")
	})
}

// TestDaemonMetricsSayWhatRulesGuard: on the real binary, before any damage,
// sum(sessionmedic_files_damaged) is 0 (every rule's series exist, at 0), not empty;
// sessionmedic_rule_files says how many files each rule guards, 0 for a rule whose path is
// mistyped; and the series with a damage kind are the kinds the rule's format can name
// (a JSONL rule has no syntax or trailing-garbage series, a Claude Code one no
// stale-live-records series).
func TestDaemonMetricsSayWhatRulesGuard(t *testing.T) {
	home, root := t.TempDir(), t.TempDir()
	os.WriteFile(filepath.Join(root, "a.jsonl"), []byte("{\"a\":1}\n"), 0o644)
	os.WriteFile(filepath.Join(root, "b.jsonl"), []byte("{\"a\":1}\n"), 0o644)
	addr := freePort(t)
	policyFile := filepath.Join(home, "policy.yaml")
	os.WriteFile(policyFile, []byte(fmt.Sprintf("version: 1\nstate_dir: %s\nhttp: {listen: %q}\nrules:\n"+
		"  - {name: j, format: jsonl, paths: [%s], settle: 50ms, max_wait: 1s}\n"+
		"  - {name: typo, format: jsonl, paths: [%s], settle: 50ms, max_wait: 1s}\n"+
		"  - {name: cc, preset: claude-code, paths: [%s]}\n",
		filepath.Join(home, "state"), addr, root, root+"-typo", filepath.Join(home, ".claude"))), 0o644)
	startDaemon(t, home, "-config", policyFile)
	eventually(t, 10*time.Second, "/readyz", func() bool { c, _ := httpGet("http://" + addr + "/readyz"); return c == 200 })

	for _, want := range []string{
		`sessionmedic_files_damaged{kind="truncated",rule="j"} 0`,
		`sessionmedic_files_damaged{kind="malformed-record",rule="typo"} 0`,
		`sessionmedic_files_damaged{kind="schema",rule="cc"} 0`,
		`sessionmedic_files_damaged_busy{rule="cc"} 0`,
		`sessionmedic_rule_files{rule="j"} 2`,
		`sessionmedic_rule_files{rule="typo"} 0`,
		`sessionmedic_rule_files{rule="cc"} 0`,
		`sessionmedic_damage_total{kind="malformed-record",rule="cc"} 0`,
	} {
		if got := metricLines(addr, want); len(got) != 1 {
			t.Errorf("no %s", want)
		}
	}
	for _, absent := range []string{
		`sessionmedic_damage_total{kind="syntax",rule="j"}`,
		`sessionmedic_heals_refused_total{kind="trailing-garbage",rule="j"}`,
		`sessionmedic_files_damaged{kind="stale-live-records",rule="cc"}`,
		`sessionmedic_damage_total{kind="missing",rule="cc"}`,
	} {
		if got := metricLines(addr, absent); len(got) != 0 {
			t.Errorf("%q: a kind the rule's format never names", got)
		}
	}
	if t.Failed() {
		_, body := httpGet("http://" + addr + "/metrics")
		t.Log(body)
	}
}
