package apps

import (
	"github.com/sessionmedic/sessionmedic/heal/format"
	"github.com/sessionmedic/sessionmedic/heal/jsonv"
)

// sqliteStore is an app's SQLite database (openclaw-sqlite.md): OpenClaw's agent database
// (<agentDir>/openclaw-agent.sqlite, 2026.8 on) and OpenCode's store. It is never read as
// JSON: the engine judges it through SQLite (heal/sqlitedb) by the app's own gate.
type sqliteStore struct {
	name   string
	doctor string // what the app's own tool does with damage sessionmedic leaves
	file   string // the store's usual name: a -wal of it beside no store is damage
}

func (s sqliteStore) Name() string         { return s.name }
func (sqliteStore) JSONL() bool            { return false }
func (sqliteStore) Dialect() jsonv.Dialect { return jsonv.Dialect{} }
func (sqliteStore) EmptyIsDamage() bool    { return false }
func (sqliteStore) AppendOnly() bool       { return false }
func (sqliteStore) Plain() bool            { return false }
func (s sqliteStore) SQLiteDoctor() string { return s.doctor }
func (sqliteStore) CheckLines(format.File, []format.Line) format.Verdict {
	return format.OK() // never asked: the store is judged through SQLite
}

// Probe, MissingIn, MissingEvidence and MissingSources: a store is missing where its -wal is
// left beside no store (the transactions in it belong to no store; any SQLite open of the
// name would start an empty store and delete the -wal). Nothing ever stands in for it.
func (s sqliteStore) Probe() string { return s.file }
func (s sqliteStore) MissingIn(dir string, names []string) []string {
	has := map[string]bool{}
	for _, n := range names {
		has[n] = true
	}
	if has[s.file+"-wal"] && !has[s.file] {
		return []string{s.file}
	}
	return nil
}
func (sqliteStore) MissingEvidence() string             { return "its -wal is left beside it" }
func (sqliteStore) MissingSources(path string) []string { return nil }

// OwnKinds: the damage kinds the store's gate reports (see format.Kinds).
func (sqliteStore) OwnKinds() []string {
	return []string{format.KindStaleIndex, format.KindBrokenIndex, format.KindCorruptTable, format.KindNotADatabase, format.KindForeignKey, format.KindOrphanedWAL}
}

// openclawAgentDB is OpenClaw's per-agent database. Its Doctor (Gateway stopped) rebuilds
// canonical indexes in place and moves any other corrupt database aside for a new one.
var openclawAgentDB = sqliteStore{name: "openclaw-agent-db", file: "openclaw-agent.sqlite",
	doctor: "with the Gateway stopped, `openclaw doctor --session-sqlite recover` rebuilds its canonical indexes in place, or moves a corrupt database aside (*.corrupt-<ms>) and starts an empty one; `openclaw backup sqlite` restores a backup it made"}

// opencodeStore is OpenCode's store (opencode.db, WAL: between runs its data lives in the
// -wal). OpenCode has no check, backup or repair of its own: it dies at start on any SQLite
// error.
var opencodeStore = sqliteStore{name: "opencode-db", file: "opencode.db",
	doctor: "OpenCode has no repair of its own and stops at start on a damaged store: with it stopped, copy the store with its -wal and -shm aside, then put a backup in place"}

func addOpenCode(r *format.Registry) {
	r.Add("opencode", func(string) format.Profile { return opencodeStore }, opencodeStore)
}
