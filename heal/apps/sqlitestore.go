package apps

import (
	"github.com/sessionmedic/sessionmedic/heal/format"
	"github.com/sessionmedic/sessionmedic/heal/jsonv"
)

// sqliteStore is an app's SQLite database (openclaw-sqlite.md): OpenClaw's agent database
// (<agentDir>/openclaw-agent.sqlite, 2026.8 on) and OpenCode's store. It is never read as
// JSON: the engine judges it through SQLite (heal/sqlitedb) by the app's own gate.
type sqliteStore struct {
	app, name string
	doctor    string // what the app's own tool does with damage sessionmedic leaves
}

func (s sqliteStore) Name() string         { return s.name }
func (sqliteStore) JSONL() bool            { return false }
func (sqliteStore) Dialect() jsonv.Dialect { return jsonv.Dialect{} }
func (sqliteStore) EmptyIsDamage() bool    { return false }
func (sqliteStore) AppendOnly() bool       { return false }
func (sqliteStore) Plain() bool            { return false }
func (s sqliteStore) SQLiteApp() string    { return s.app }
func (s sqliteStore) SQLiteDoctor() string { return s.doctor }
func (sqliteStore) CheckLines(format.File, []format.Line) format.Verdict {
	return format.OK() // never asked: the store is judged through SQLite
}

// OwnKinds: the damage kinds the store's gate reports (see format.Kinds).
func (sqliteStore) OwnKinds() []string {
	return []string{format.KindStaleIndex, format.KindBrokenIndex, format.KindCorruptTable, format.KindNotADatabase, format.KindForeignKey, format.KindOrphanedWAL}
}

// openclawAgentDB is OpenClaw's per-agent database. Its Doctor (Gateway stopped) rebuilds
// canonical indexes in place and moves any other corrupt database aside for a new one.
var openclawAgentDB = sqliteStore{app: "openclaw", name: "openclaw-agent-db",
	doctor: "with the Gateway stopped, `openclaw doctor --session-sqlite recover` rebuilds its canonical indexes in place, or moves a corrupt database aside (*.corrupt-<ms>) and starts an empty one; `openclaw backup sqlite` restores a backup it made"}
