package sqlitedb

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/sessionmedic/sessionmedic/internal/sqlitetest"
)

// openclawDB is an agent database OpenClaw 2026.9.6's own code made (testdata, the oracle's
// create: `node openclaw-sqlite.mjs STATE create`, one session, 5 messages, 6 transcript
// events), closed cleanly (no -wal), gzipped. Its pages: transcript_events' table b-tree at 63,
// its primary key's automatic index at 64, idx_agent_transcript_event_sequence (on
// transcript_event_identities) at 86; page size 4096, WAL, auto_vacuum incremental.
func openclawDB(t testing.TB) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "agents", "main", "agent", "openclaw-agent.sqlite")
	sqlitetest.Place(t, sqlitetest.OpenClaw, p)
	return p
}

// setByte changes the byte at off of page n from old to new (a key of an index cell: the
// entry goes stale, its count right; quick_check says ok, integrity_check does not).
func setByte(t testing.TB, p string, n, off int, old, new byte) {
	editPage(t, p, n, func(b []byte) {
		if b[off] != old {
			t.Fatalf("page %d offset %d is %d, not %d", n, off, b[off], old)
		}
		b[off] = new
	})
}

// dropCell removes the last cell of an index leaf page from its cell count (integrity_check
// then finds the entry missing, the page's free space miscounted: "Fragmentation of N bytes").
func dropCell(b []byte) {
	if b[0] != 0x0a {
		panic("not an index leaf page")
	}
	b[4]--
}

// events counts the transcript events the store holds, as OpenClaw's loader reads them (the
// table, through its primary key).
func events(t testing.TB, p string) int {
	t.Helper()
	c, err := open(uri(p, "mode=ro"))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	rows, err := c.strings("SELECT count(*) FROM transcript_events WHERE session_id='5901a198-0e48-4246-9962-5d3c5148bce5'", 1)
	if err != nil {
		t.Fatal(err)
	}
	return map[string]int{"6": 6}[rows[0]]
}

// Each class of damage of openclaw-sqlite.md, made in OpenClaw's own database, is judged as
// the doc says, and the heal the doc proves brings the store back with its 6 events (the
// healed copies of these classes were read back by OpenClaw 2026.9.6's own loader: 6 events,
// ok).
func TestOpenClawDatabaseDamageJudgedAndHealed(t *testing.T) {
	cases := []struct {
		name   string
		damage func(t *testing.T, p string)
		judged func(j Judgement) bool
		heal   func(p string, j Judgement) error // nil: not healed here
	}{
		{"S1 stale entry in a named index", func(t *testing.T, p string) { setByte(t, p, 86, 3842, 5, 7) },
			func(j Judgement) bool {
				return j.IndexOnly() && strings.Join(j.Stale, ",") == "idx_agent_transcript_event_sequence"
			},
			func(p string, j Judgement) error { return Reindex(p, j.Stale) }},
		{"S3 stale entry in the primary key's automatic index", func(t *testing.T, p string) { setByte(t, p, 64, 3882, 5, 7) },
			func(j Judgement) bool {
				return j.IndexOnly() && strings.Join(j.Stale, ",") == "sqlite_autoindex_transcript_events_1"
			},
			func(p string, j Judgement) error { return Reindex(p, j.Stale) }},
		{"S1 an entry cut from a named index's page", func(t *testing.T, p string) { editPage(t, p, 86, dropCell) },
			func(j Judgement) bool {
				return j.IndexOnly() && strings.Join(j.Stale, ",") == "idx_agent_transcript_event_sequence"
			},
			func(p string, j Judgement) error { return Reindex(p, j.Stale) }},
		{"S3 an entry cut from the automatic index's page", func(t *testing.T, p string) { editPage(t, p, 64, dropCell) },
			func(j Judgement) bool {
				return j.IndexOnly() && strings.Join(j.Stale, ",") == "sqlite_autoindex_transcript_events_1"
			},
			func(p string, j Judgement) error { return Reindex(p, j.Stale) }},
		{"S2 a named index's page zeroed", func(t *testing.T, p string) { editPage(t, p, 86, zero) },
			func(j Judgement) bool {
				return j.IndexOnly() && strings.Join(j.Broken, ",") == "idx_agent_transcript_event_sequence"
			},
			func(p string, j Judgement) error { return Rebuild(p, j.Broken) }},
		{"S5 the events table's root zeroed", func(t *testing.T, p string) { editPage(t, p, 63, zero) },
			func(j Judgement) bool { return !j.OK() && !j.IndexOnly() && !j.NotDB }, nil},
		{"S4 page 1 zeroed", func(t *testing.T, p string) { editPage(t, p, 1, zero) },
			func(j Judgement) bool { return j.NotDB }, nil},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			p := openclawDB(t)
			if j := judge(t, p); !j.OK() {
				t.Fatalf("OpenClaw's own database judged %+v", j)
			}
			tc.damage(t, p)
			var j Judgement
			snap := p + ".snap"
			if _, err := Snapshot(p, snap, nil); err != nil {
				if !tc.judged(Judgement{NotDB: strings.Contains(err.Error(), "not a database")}) {
					t.Fatalf("snapshot: %v", err)
				}
				return
			}
			j, err := Judge(snap)
			if err != nil {
				t.Fatal(err)
			}
			if !tc.judged(j) {
				t.Fatalf("judged %+v", j)
			}
			if tc.heal == nil {
				return
			}
			if err := tc.heal(p, j); err != nil {
				t.Fatalf("heal: %v", err)
			}
			if j := judge(t, p); !j.OK() {
				t.Fatalf("after the heal: %+v", j)
			}
			if n := events(t, p); n != 6 {
				t.Fatalf("after the heal the store holds %d events, want 6", n)
			}
			// Healing twice changes nothing: the store is judged sound, and nothing is asked.
			if j := judge(t, p); !j.OK() || j.IndexOnly() {
				t.Fatalf("judged again: %+v", j)
			}
		})
	}
}

// A rebuild cut short before its VACUUM leaves the index made again and its old pages
// unused: judged as that remnant (index-only), and VACUUM heals it.
func TestRebuildCutShortIsHealedByVacuum(t *testing.T) {
	p := openclawDB(t)
	editPage(t, p, 86, zero)
	c, err := open(uri(p, "mode=rw"))
	if err != nil {
		t.Fatal(err)
	}
	if err := c.surgery([]string{"idx_agent_transcript_event_sequence"}); err != nil {
		t.Fatal(err)
	}
	c.Close()
	j := judge(t, p)
	if !j.Orphans || !j.IndexOnly() || len(j.Broken)+len(j.Stale)+len(j.Tables) != 0 {
		t.Fatalf("after the surgery alone: %+v", j)
	}
	if err := Rebuild(p, nil); err != nil {
		t.Fatal(err)
	}
	if j := judge(t, p); !j.OK() {
		t.Fatalf("after VACUUM: %+v", j)
	}
}

// An automatic index whose b-tree cannot be read has no statement to make it again: the
// surgery refuses it and leaves the store as it was.
func TestRebuildRefusesAnAutomaticIndex(t *testing.T) {
	p := openclawDB(t)
	editPage(t, p, 64, zero)
	j := judge(t, p)
	if strings.Join(j.Broken, ",") != "sqlite_autoindex_transcript_events_1" {
		t.Fatalf("judged %+v", j)
	}
	before, _ := os.ReadFile(p)
	if err := Rebuild(p, j.Broken); err == nil || !strings.Contains(err.Error(), "automatic index") {
		t.Fatalf("rebuild of an automatic index: %v", err)
	}
	after, _ := os.ReadFile(p)
	if !bytes.Equal(before, after) {
		t.Fatal("a refused rebuild changed the store")
	}
}

// S5: a table's b-tree destroyed, page 1 readable: the snapshot taken while the store was
// sound, written back into it through the backup API, brings back what it held.
func TestRestoreWritesTheSnapshotIntoTheStore(t *testing.T) {
	p := openclawDB(t)
	snap := p + ".good"
	if _, err := Snapshot(p, snap, nil); err != nil {
		t.Fatal(err)
	}
	editPage(t, p, 63, zero)
	if j := judge(t, p); j.OK() || j.IndexOnly() {
		t.Fatalf("damaged: %+v", j)
	}
	if err := Restore(snap, p, nil); err != nil {
		t.Fatal(err)
	}
	if j := judge(t, p); !j.OK() {
		t.Fatalf("after the restore: %+v", j)
	}
	if n := events(t, p); n != 6 {
		t.Fatalf("restored store holds %d events", n)
	}
}

// A snapshot of another page size is never written into a store.
func TestRestoreRefusesAnotherPageSize(t *testing.T) {
	p := openclawDB(t)
	other := mkStore(t, t.TempDir(), 5, false) // 4096 too: make it 8192
	c, err := open(uri(other, "mode=rw"))
	if err != nil {
		t.Fatal(err)
	}
	if err := c.exec("PRAGMA page_size=8192"); err != nil {
		t.Fatal(err)
	}
	if err := c.exec("VACUUM"); err != nil {
		t.Fatal(err)
	}
	c.Close()
	if n, _ := PageSize(other); n != 8192 {
		t.Fatalf("page size %d", n)
	}
	before, _ := os.ReadFile(p)
	if err := Restore(other, p, nil); err == nil || !strings.Contains(err.Error(), "pages are") {
		t.Fatalf("restore across page sizes: %v", err)
	}
	if after, _ := os.ReadFile(p); !bytes.Equal(before, after) {
		t.Fatal("the store was written")
	}
}
