package policy

import (
	"encoding/json"
	"path/filepath"
	"slices"
	"time"
)

// The presets, in the order of the embedded default; qwenpaw is an alias of copaw.
// AppendSettle is the settle of the apps that append a whole record a write and keep no
// lock while the file is idle (pi, Qwen Code, Copilot CLI): a torn tail a crash left must be
// cut before the app's next run appends onto it (pi, Qwen: the record glued to the stub is
// then lost to them) or repairs the file its own way (Copilot drops the glued and split
// records for good). A run takes about a second to start (1.1–2.5 s to a resume with the
// oracles), so half a second; while one runs, its liveness keeps every heal off.
const AppendSettle = 500 * time.Millisecond

var presetNames = []string{"copaw", "nanobot", "praisonai", "openviking", "openclaw", "claude-code", "codex", "gemini-cli", "pi", "copilot-cli", "qwen-code", "opencode"}

var presetAliases = map[string]string{"qwenpaw": "copaw"}

// The apps' own lock protocols (implemented in heal/lock), and whether each has a staleness
// rule.
const (
	LockNanobot    LockProtocol = "nanobot"
	LockOpenViking LockProtocol = "openviking"
	LockOpenClaw   LockProtocol = "openclaw"
	// LockClaudeCode: no lock; a transcript is live while Claude's pid registry
	// (<config>/sessions/<pid>.json) names its session for a running process.
	LockClaudeCode LockProtocol = "claude-code"
	// LockCodex: Codex's per-thread writer flock, taken under its coordination lock.
	LockCodex LockProtocol = "codex"
	// LockGeminiCLI: no lock; a project is live while a Gemini process runs in its root.
	LockGeminiCLI LockProtocol = "gemini-cli"
	// LockPi: no lock; a session is live while a pi process has it open or names it.
	LockPi LockProtocol = "pi"
	// LockCopilotCLI: a session is live while an inuse.<pid>.hold in its directory is
	// flocked; a heal also holds Copilot's per-session operation flock.
	LockCopilotCLI LockProtocol = "copilot-cli"
	// LockQwenCode: no lock; a session is live while a Qwen Code process has it open, names
	// it, works in its project, or runs its scheduler.
	LockQwenCode LockProtocol = "qwen-code"
)

var appLocks = []struct {
	protocol LockProtocol
	stale    bool
}{{LockNanobot, false}, {LockOpenViking, true}, {LockOpenClaw, true}, {LockClaudeCode, false}, {LockCodex, false}, {LockGeminiCLI, false}, {LockPi, false}, {LockCopilotCLI, false}, {LockQwenCode, false}}

func appLockProtocols() []LockProtocol {
	var out []LockProtocol
	for _, a := range appLocks {
		out = append(out, a.protocol)
	}
	return out
}

// presetEnv lists the environment variables the presets read to find their apps' default
// locations.
var presetEnv = []string{"QWENPAW_WORKING_DIR", "COPAW_WORKING_DIR", "PRAISONAI_HOME",
	"OPENVIKING_CONFIG_FILE", "OPENCLAW_HOME", "OPENCLAW_STATE_DIR", "CLAUDE_CONFIG_DIR", "CODEX_HOME",
	"GEMINI_CLI_HOME", "PI_CODING_AGENT_DIR", "PI_CODING_AGENT_SESSION_DIR", "COPILOT_HOME", "QWEN_RUNTIME_DIR", "QWEN_HOME",
	"XDG_DATA_HOME", "OPENCODE_DB"}

// PresetEnv returns the environment variables the presets read to find their apps (a
// harness that must not see real app data drops them).
func PresetEnv() []string { return slices.Clone(presetEnv) }

// Presets returns the preset names (without aliases).
func Presets() []string { return slices.Clone(presetNames) }

// PresetChoices lists every accepted preset name, aliases included, for error messages.
func PresetChoices() []string {
	return []string{"copaw", "qwenpaw", "nanobot", "praisonai", "openviking", "openclaw", "claude-code", "codex", "gemini-cli", "pi", "copilot-cli", "qwen-code", "opencode"}
}

// PresetRule returns the full rule of a preset (an alias gives its preset), named after it,
// with its default locations for env. ok is false for an unknown name. The default locations
// may be empty (OpenViking without a config naming its workspace); a rule without paths
// covers nothing.
//
// Patterns (see [Rule.Covers]) match a preset's files at any depth below a rule's path, and
// through the path's own directory names, so a path may be the app's home, a workspace or
// a sessions directory itself; a path that is a symlink is read as the directory it points
// to, and one whose name has "sessions" as a word (a copy, the samples'
// sessions_legacy_layout) as a sessions directory.
func PresetRule(name string, env Env) (Rule, bool) {
	if canon, ok := presetAliases[name]; ok {
		name = canon
	}
	r := baseRule()
	r.Name, r.Preset, r.Format = name, name, name
	switch name {
	case "copaw":
		// <WORKING_DIR>/[workspaces/<agent>/]sessions/[<channel>/]<file>.json. The chat
		// index, the dialog logs and the renamed weixin originals are not session state.
		r.Paths = copawPaths(env)
		r.Match = []string{"**/sessions/*.json", "**/sessions/*/*.json"}
		r.Exclude = []string{"**/.weixin-legacy/**", "**/dialog/**", "chats.json"}
		r.Strategies = []Strategy{Salvage, LastGoodCopy}
	case "nanobot":
		// Eras A–C: <workspace>/sessions/<stem>.jsonl (and the old global sessions/);
		// era D: ~/.nanobot/sessions/<workspace id>/<stem>.jsonl. Any *.jsonl counts, so a
		// rule may name a sessions directory under any name; JSONL files the agent itself
		// writes elsewhere in its workspace are judged as sessions too (point the rule at
		// the sessions directories, or exclude them, where that matters).
		r.Paths = homePaths(env, ".nanobot")
		r.Match = []string{"*.jsonl"}
		r.Exclude = []string{"**/.migration-conflicts/**"}
		r.Temps = []string{".*.jsonl.*.tmp", "*.jsonl.tmp"}
		r.Lock = Lock{Protocol: LockNanobot, Wait: DefaultLockWait}
		r.Strategies = []Strategy{Salvage, LastGoodCopy, CleanTemp}
	case "praisonai":
		// <data dir>/sessions/<safe_id>.json, under a never-unlinked <file>.lock flock the
		// app waits 5 s for. Its .corrupt-<ms> copies and spilled turns are evidence.
		r.Paths = praisonPaths(env)
		r.Match = []string{"**/sessions/*.json"}
		r.Exclude = []string{"**/session_spill/**", "*.corrupt-*"}
		r.Temps = []string{"tmp*.tmp"}
		r.Lock = Lock{Protocol: LockFlock, Path: "{file}.lock", Wait: DefaultLockWait}
		r.Strategies = []Strategy{Salvage, LastGoodCopy, Reconcile, CleanTemp}
	case "openviking":
		// <workspace>/viking/<account>/user/<user>/sessions/<sid>/{messages.jsonl,.meta.json},
		// and the legacy <account>/session/[<user>/]<sid>/. Archives under history/ are
		// evidence, never healed.
		r.Paths = openvikingPaths(env)
		r.Match = []string{
			"**/sessions/*/messages.jsonl", "**/sessions/*/.meta.json",
			"**/session/*/messages.jsonl", "**/session/*/.meta.json",
			"**/session/*/*/messages.jsonl", "**/session/*/*/.meta.json",
		}
		r.Exclude = []string{"**/history/archive_*/**"}
		r.Lock = Lock{Protocol: LockOpenViking, Stale: DefaultLockStale, Wait: DefaultLockWait}
		r.Strategies = []Strategy{Reconcile, Salvage, LastGoodCopy}
	case "openclaw":
		// <state>/agents/<agent>/sessions/{sessions.json,<sessionId>.jsonl}. Archives,
		// corrupt-header copies, checkpoints and trajectories are not live session files.
		r.Paths = openclawPaths(env)
		// Since 2026.8 an agent's sessions are in <state>/agents/<agent>/agent/
		// openclaw-agent.sqlite, judged and healed through SQLite (its own locks, not
		// OpenClaw's lock files); its sidecars, the shared and quarantine databases, cold
		// archives and OpenClaw's .orphaned-*/.corrupt-* copies are never touched.
		r.Match = []string{"**/agents/*/sessions/sessions.json", "**/agents/*/sessions/*.jsonl", "**/agents/*/agent/openclaw-agent.sqlite"}
		r.Exclude = []string{"*.corrupt-*", "*.checkpoint.*.jsonl", "*.trajectory.jsonl"}
		r.Temps = []string{"sessions.json.*.tmp", "*.jsonl.compact.*.tmp"}
		r.Backups = []string{"{dir}/sessions.json.bak.*"}
		r.Lock = Lock{Protocol: LockOpenClaw, Stale: DefaultLockStale, Wait: DefaultLockWait}
		r.Strategies = []Strategy{Salvage, Backup, LastGoodCopy, Normalize, Reindex}
	case "claude-code":
		// <config>/projects/<slug>/<sessionId>.jsonl and its subagents'
		// <sessionId>/subagents/[<sub>/]agent-<id>.jsonl; the pid registry sessions/*.json,
		// the compaction temps and the settings are not transcripts.
		r.Paths = envOrHome(env, "CLAUDE_CONFIG_DIR", ".claude")
		r.Match = []string{"**/projects/*/*.jsonl", "**/projects/*/*/subagents/**/agent-*.jsonl"}
		r.Temps = []string{"*.jsonl.compact.tmp.*"}
		r.Lock = Lock{Protocol: LockClaudeCode}
		r.Strategies = []Strategy{Salvage, LastGoodCopy}
	case "codex":
		// <home>/sessions/YYYY/MM/DD/rollout-<ts>-<id>.jsonl and archived_sessions/; the
		// compressed .jsonl.zst rollouts, the SQLite indexes and session_index.jsonl are
		// never touched.
		r.Paths = envOrHome(env, "CODEX_HOME", ".codex")
		r.Match = []string{"**/sessions/**/rollout-*.jsonl", "**/archived_sessions/rollout-*.jsonl"}
		r.Lock = Lock{Protocol: LockCodex, Wait: DefaultLockWait}
		r.Strategies = []Strategy{Salvage, AddOrdinals, LastGoodCopy, RebuildHeader}
	case "gemini-cli":
		// <home>/.gemini/tmp/<project>/chats/session-<ts>-<id8>.jsonl and the subagents'
		// chats/<parent>/<id>.jsonl; the app's .unreadable-<ms> copies and .tmp-<pid> temps
		// are its own.
		r.Paths = geminiPaths(env)
		r.Match = []string{"**/chats/session-*.jsonl", "**/chats/*/*.jsonl"}
		r.Exclude = []string{"*.unreadable-*"}
		r.Temps = []string{"*.jsonl.tmp-*"}
		r.Lock = Lock{Protocol: LockGeminiCLI}
		r.Strategies = []Strategy{Salvage, LastGoodCopy, RebuildHeader}
	case "pi":
		// <agent>/sessions/--<cwd>--/<ts>_<uuid>.jsonl; models.json, auth.json and
		// settings.json are the app's config, never touched.
		r.Paths = piPaths(env)
		r.Match = []string{"**/--*--/*.jsonl"}
		r.Settle = AppendSettle
		r.Lock = Lock{Protocol: LockPi}
		r.Strategies = []Strategy{Salvage, LastGoodCopy, RebuildHeader}
	case "copilot-cli":
		// <home>/session-state/<id>/events.jsonl. Copilot's own backups
		// (events.jsonl.backup-before-recovery-<sha256>) are evidence, never healed; its
		// temps, inuse.* liveness files, operation locks, workspace.yaml and
		// session-store.db are never touched.
		r.Paths = copilotPaths(env)
		r.Match = []string{"**/session-state/*/events.jsonl"}
		r.Temps = []string{"events.jsonl.tmp.*", "events.jsonl.backup-before-recovery-*.tmp.*"}
		r.Settle = AppendSettle
		r.Lock = Lock{Protocol: LockCopilotCLI, Wait: DefaultLockWait}
		r.Strategies = []Strategy{Salvage, LastGoodCopy, DropInvalidEntries, RebuildHeader}
	case "qwen-code":
		// <runtime>/projects/<project>/chats/<sessionId>.jsonl and chats/archive/; meta.json,
		// extract-cursor.json, memory/, *.worktree.json and the scheduler lock are the app's.
		r.Paths = qwenPaths(env)
		r.Match = []string{"**/projects/*/chats/*.jsonl", "**/projects/*/chats/archive/*.jsonl"}
		r.Settle = AppendSettle
		r.Lock = Lock{Protocol: LockQwenCode}
		r.Strategies = []Strategy{Salvage, LastGoodCopy}
	case "opencode":
		// <data>/opencode.db (the latest, beta and prod channels) or opencode-<channel>.db,
		// a SQLite store judged and healed through SQLite (openclaw-sqlite.md §1.2); its
		// -wal holds every transaction between runs and is never touched.
		r.Paths, r.Match = opencodePaths(env)
		r.Strategies = []Strategy{Reindex}
	default:
		return Rule{}, false
	}
	return r.clone(), true
}

// opencodePaths: the directory of $OPENCODE_DB when it is absolute (and its name), else
// $XDG_DATA_HOME/opencode, else ~/.local/share/opencode (a relative $OPENCODE_DB is a name
// in that directory).
func opencodePaths(env Env) (paths, match []string) {
	match = []string{"opencode.db", "opencode-*.db"}
	db := env.getenv("OPENCODE_DB")
	if filepath.IsAbs(db) {
		return []string{filepath.Dir(filepath.Clean(db))}, append(match, filepath.Base(db))
	}
	if db != "" && !slices.Contains(match, filepath.Base(db)) {
		match = append(match, filepath.Base(db))
	}
	if v := env.getenv("XDG_DATA_HOME"); v != "" {
		if p := appPath(v, env.Home); p != "" {
			return []string{filepath.Join(p, "opencode")}, match
		}
	}
	return homePaths(env, filepath.Join(".local", "share", "opencode")), match
}

// appPath expands a location taken from an app's environment variable or config: ~ is
// home, and only an absolute result counts ("" otherwise).
func appPath(p, home string) string {
	p, err := expandHome(p, home)
	if err != nil {
		return ""
	}
	return absDir(p)
}

// homePaths joins home with each name; none when home is unknown.
func homePaths(env Env, names ...string) []string {
	home := absDir(env.Home)
	if home == "" {
		return nil
	}
	var out []string
	for _, n := range names {
		out = append(out, filepath.Join(home, n))
	}
	return out
}

// firstExisting returns the first candidate that exists, else the fallback.
func firstExisting(env Env, fallback string, candidates ...string) []string {
	for _, c := range candidates {
		if env.exists(c) {
			return []string{c}
		}
	}
	return []string{fallback}
}

// envOrHome: the directory an app's environment variable names, else ~/<dir>.
func envOrHome(env Env, key, dir string) []string {
	if v := env.getenv(key); v != "" {
		if p := appPath(v, env.Home); p != "" {
			return []string{p}
		}
		return nil
	}
	return homePaths(env, dir)
}

// geminiPaths: $GEMINI_CLI_HOME/.gemini, else ~/.gemini.
func geminiPaths(env Env) []string {
	if v := env.getenv("GEMINI_CLI_HOME"); v != "" {
		if p := appPath(v, env.Home); p != "" {
			return []string{filepath.Join(p, ".gemini")}
		}
		return nil
	}
	return homePaths(env, ".gemini")
}

// piPaths: $PI_CODING_AGENT_SESSION_DIR (the sessions root), else
// $PI_CODING_AGENT_DIR/sessions, else ~/.pi/agent/sessions.
func piPaths(env Env) []string {
	if v := env.getenv("PI_CODING_AGENT_SESSION_DIR"); v != "" {
		if p := appPath(v, env.Home); p != "" {
			return []string{p}
		}
		return nil
	}
	if v := env.getenv("PI_CODING_AGENT_DIR"); v != "" {
		if p := appPath(v, env.Home); p != "" {
			return []string{filepath.Join(p, "sessions")}
		}
		return nil
	}
	return homePaths(env, ".pi/agent/sessions")
}

// copilotPaths: $COPILOT_HOME/session-state, else ~/.copilot/session-state.
func copilotPaths(env Env) []string {
	if v := env.getenv("COPILOT_HOME"); v != "" {
		if p := appPath(v, env.Home); p != "" {
			return []string{filepath.Join(p, "session-state")}
		}
		return nil
	}
	return homePaths(env, ".copilot/session-state")
}

// qwenPaths: $QWEN_RUNTIME_DIR, else $QWEN_HOME, else ~/.qwen.
func qwenPaths(env Env) []string {
	for _, k := range []string{"QWEN_RUNTIME_DIR", "QWEN_HOME"} {
		if v := env.getenv(k); v != "" {
			if p := appPath(v, env.Home); p != "" {
				return []string{p}
			}
			return nil
		}
	}
	return homePaths(env, ".qwen")
}

// copawPaths: $QWENPAW_WORKING_DIR or $COPAW_WORKING_DIR; else ~/.copaw if it exists;
// else ~/.qwenpaw.
func copawPaths(env Env) []string {
	for _, k := range []string{"QWENPAW_WORKING_DIR", "COPAW_WORKING_DIR"} {
		if v := env.getenv(k); v != "" {
			if p := appPath(v, env.Home); p != "" {
				return []string{p}
			}
			return nil
		}
	}
	h := homePaths(env, ".copaw", ".qwenpaw")
	if h == nil {
		return nil
	}
	return firstExisting(env, h[1], h[0])
}

// praisonPaths: $PRAISONAI_HOME/sessions, ~/.praisonai/sessions, ~/.praison/sessions and
// $XDG_DATA_HOME/praisonai/sessions; the app picks one, so all are watched.
func praisonPaths(env Env) []string {
	var out []string
	add := func(p string) {
		if p != "" && !slices.Contains(out, p) {
			out = append(out, p)
		}
	}
	if v := appPath(env.getenv("PRAISONAI_HOME"), env.Home); v != "" {
		add(filepath.Join(v, "sessions"))
	}
	for _, p := range homePaths(env, ".praisonai/sessions", ".praison/sessions") {
		add(p)
	}
	if x := absDir(env.XDGDataHome); x != "" {
		add(filepath.Join(x, "praisonai", "sessions"))
	}
	return out
}

// openvikingPaths: storage.workspace of $OPENVIKING_CONFIG_FILE or ~/.openviking/ov.conf,
// when that is JSON naming an absolute (or ~) workspace; otherwise none, since the app's
// default ./data is relative to the server's working directory.
func openvikingPaths(env Env) []string {
	conf := appPath(env.getenv("OPENVIKING_CONFIG_FILE"), env.Home)
	if conf == "" {
		h := homePaths(env, ".openviking/ov.conf")
		if h == nil {
			return nil
		}
		conf = h[0]
	}
	data, err := env.readFile(conf)
	if err != nil {
		return nil
	}
	var c struct {
		Storage struct {
			Workspace string `json:"workspace"`
		} `json:"storage"`
	}
	if json.Unmarshal(data, &c) != nil {
		return nil
	}
	if p := appPath(c.Storage.Workspace, env.Home); p != "" {
		return []string{p}
	}
	return nil
}

// openclawPaths: $OPENCLAW_STATE_DIR; else ~/.openclaw if it exists; else ~/.clawdbot if it
// exists; else ~/.openclaw. Home is $OPENCLAW_HOME when set.
func openclawPaths(env Env) []string {
	home := env.Home
	if h := appPath(env.getenv("OPENCLAW_HOME"), env.Home); h != "" {
		home = h
	}
	if v := env.getenv("OPENCLAW_STATE_DIR"); v != "" {
		if p := appPath(v, home); p != "" {
			return []string{p}
		}
		return nil
	}
	h := homePaths(Env{Home: home}, ".openclaw", ".clawdbot")
	if h == nil {
		return nil
	}
	return firstExisting(env, h[0], h[0], h[1])
}
