package main

import (
	"os"
	"strings"
	"testing"
	"time"
)

// TestDaemonSaysWhoKeepsADamagedFileBusy: on the real daemon, a damaged transcript that a
// registry entry of another pid namespace keeps busy is a damaged file (files_damaged, with
// files_damaged_busy saying why it is not healed, and damage_oldest_timestamp_seconds); its
// file.busy lines name the protocol, the entry and the namespace, and once it has been busy
// for longer than the rule's max_wait it is said at WARN with what to do, and counted in
// files_busy_stuck. When the entry goes, the file is healed and every gauge is back at 0.
func TestDaemonSaysWhoKeepsADamagedFileBusy(t *testing.T) {
	home := t.TempDir()
	addr := freePort(t)
	transcript, entry, policyFile := claudeForeignTree(t, home, addr)
	d := startDaemon(t, home, "-config", policyFile, "-log-level", "debug")
	eventually(t, 15*time.Second, "/readyz", func() bool { c, _ := httpGet("http://" + addr + "/readyz"); return c == 200 })

	warned := func() []map[string]any {
		var out []map[string]any
		for _, e := range d.events("file.busy") {
			if e["level"] == "WARN" {
				out = append(out, e)
			}
		}
		return out
	}
	eventually(t, 15*time.Second, "file.busy at WARN", func() bool { return len(warned()) > 0 })
	busy := d.events("file.busy")
	for i, e := range busy {
		reason, _ := e["reason"].(string)
		for _, want := range busyHolder(entry) {
			if !strings.Contains(reason, want) {
				t.Errorf("file.busy #%d reason %q does not say %q", i+1, reason, want)
			}
		}
		if e["path"] != transcript || e["rule"] != "cc" || e["kind"] != "truncated" {
			t.Errorf("file.busy #%d: %v", i+1, e)
		}
	}
	w := warned()[0]
	if len(warned()) != 1 {
		t.Errorf("%d file.busy at WARN within the hour, want 1", len(warned()))
	}
	if adv, _ := w["advice"].(string); !strings.Contains(adv, "sessionmedic heal -dry-run PATH") {
		t.Errorf("file.busy at WARN says no advice: %v", w)
	}
	if s, _ := w["busy_for"].(string); func() bool { dur, err := time.ParseDuration(s); return err != nil || dur < time.Second }() {
		t.Errorf("file.busy at WARN: busy_for %v, want a duration of a second or more (max_wait)", w["busy_for"])
	}
	for _, want := range []string{
		`sessionmedic_files_damaged{kind="truncated",rule="cc"} 1`,
		`sessionmedic_files_damaged_busy{rule="cc"} 1`,
		`sessionmedic_files_busy_stuck{rule="cc"} 1`,
	} {
		eventually(t, 5*time.Second, want, func() bool { return len(metricLines(addr, want)) == 1 })
	}
	if l := metricLines(addr, "sessionmedic_damage_oldest_timestamp_seconds "); len(l) != 1 || strings.HasSuffix(l[0], " 0") {
		t.Errorf("oldest damage: %q", l)
	}

	// The holder goes (its process ended and Claude removed its entry): healed, and nothing
	// is damaged, busy or stuck any more.
	os.Remove(entry)
	eventually(t, 15*time.Second, "file.healed", func() bool { return len(d.events("file.healed")) == 1 })
	for _, want := range []string{
		`sessionmedic_files_damaged{kind="truncated",rule="cc"} 0`,
		`sessionmedic_files_damaged_busy{rule="cc"} 0`,
		`sessionmedic_files_busy_stuck{rule="cc"} 0`,
		`sessionmedic_damage_oldest_timestamp_seconds 0`,
	} {
		eventually(t, 5*time.Second, want, func() bool { return len(metricLines(addr, want)) == 1 })
	}
}
