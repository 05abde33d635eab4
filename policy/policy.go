// Package policy owns the YAML policy: schema, presets, the embedded default, strict decoding
// with file:line errors, and path → rule matching.
//
// A policy is decoded in two steps: defaults first (a rule with a preset starts from that
// preset's full rule), then the YAML on top, strictly: unknown keys, wrong types and values
// out of range are errors that name the file, the line and the field path. The result is
// plain data; nothing here touches the files a rule covers, except that [SystemEnv] answers
// whether a directory exists and reads one app's config to find its default location, and
// that matching resolves a rule's root through a symlink when its names alone do not match.
//
// Caveats: paths below a rule's root are compared lexically (cleaned, never resolved through
// symlinks); only the root itself is read where it points (see [Rule.Covers]).
// [Config.RuleFor] expects an absolute path.
package policy

import (
	_ "embed"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"time"
)

// Config is a decoded, validated policy.
type Config struct {
	Version    int
	StateDir   string         // state_dir: quarantine/, last-good/, journal/ live below it
	Log        Log            // log: {format: auto|text|json, level: debug|info|warn|error}
	HTTP       HTTP           // http: {listen: "127.0.0.1:9477", pprof: false}; empty listen = disabled
	Quarantine Retention      // quarantine: {max_age: 720h, max_bytes: 1GiB}
	LastGood   LastGoodLimits // last_good: {max_file_bytes: 64MiB, max_total_bytes: 1GiB}
	// WatchBudget is how many directories the daemon watches at most (watch_budget; 0 = a
	// quarter of the system's fs.inotify.max_user_watches): beyond it a rule falls back to
	// periodic rescans. The kernel's limit is per user, shared with every other process of
	// it: a tree's user must not be able to use it all up through sessionmedic.
	WatchBudget int
	Rules       []Rule
	Source      string // the file it came from, or "embedded default"
	// Warnings are what the file says that is valid but cannot be meant, each with its file,
	// line and field like an error: a rule path under which an earlier rule takes every file
	// (see [Config.ShadowedBy]).
	Warnings []*Error
}

// Log selects the log handler and level.
type Log struct{ Format, Level string }

// HTTP configures the metrics and health endpoint. Pprof serves /debug/pprof/ on it.
type HTTP struct {
	Listen string
	Pprof  bool
}

// Retention bounds the quarantine. Zero means no limit.
type Retention struct {
	MaxAge   time.Duration
	MaxBytes int64

	maxBytesText string // max_bytes as written, echoed by Marshal
}

// LastGoodLimits bounds the last-good copies. Zero means no limit.
type LastGoodLimits struct {
	MaxFileBytes, MaxTotalBytes int64

	maxFileText, maxTotalText string // the sizes as written, echoed by Marshal
}

// Rule says which files to watch and how to judge and heal them.
type Rule struct {
	Name         string
	Preset       string        // "" or a preset name (see Presets)
	Paths        []string      // absolute, ~ and $VARS expanded, filepath.Clean'ed
	Match        []string      // globs, see [Rule.Covers]
	Exclude      []string      // globs, see [Rule.Covers]
	Format       string        // json | jsonl | a preset's own profile (see Formats)
	Settle       time.Duration // quiet time before inspecting; default 2s
	MaxWait      time.Duration // inspect (read-only) after this even under writes; default 30s; >= Settle
	Lock         Lock
	Backups      []string   // glob templates with {file} {dir} {name}, e.g. "{file}.bak.*"
	Strategies   []Strategy // tried in order
	Limits       Limits
	KeepLastGood bool // default true
	// RestoreDeleted brings back, from its last-good copy, a file of an app that deletes
	// sessions it should not (Gemini CLI's start-up sweep): default false, since a user who
	// deletes a session through the app means it.
	RestoreDeleted bool
	Mode           Mode          // heal (default) | observe
	TempAge        time.Duration // clean-temp only moves app temp files older than this; default 5m
	Temps          []string      // base-name globs of the app's own temp files: never validated
}

// Lock is the app's lock protocol, which a heal honours.
type Lock struct {
	Protocol LockProtocol  // none | flock | lockfile | an app's own (see LockProtocols)
	Path     string        // template for flock/lockfile, e.g. "{dir}/.session-files.lock"
	Stale    time.Duration // protocols with a staleness rule: a lock older than this is stale
	Wait     time.Duration // how long to try before reporting busy; default 2s
}

// Limits bound what a repair may do.
type Limits struct {
	MaxLoss     float64 // fraction 0..1 of the damaged file's records a repair may drop; default 0.5
	MaxFileSize int64   // larger files are skipped; 0 = no limit; default 1GiB

	maxFileSizeText string // max_file_size as written, echoed by Marshal
}

// Size units.
const (
	KiB int64 = 1 << 10
	MiB int64 = 1 << 20
	GiB int64 = 1 << 30
)

// Strategy names a repair a rule allows.
type Strategy string

// The strategies, in the order the documentation lists them.
const (
	Salvage            Strategy = "salvage"
	Backup             Strategy = "backup"
	LastGoodCopy       Strategy = "last-good"
	Reconcile          Strategy = "reconcile"
	Normalize          Strategy = "normalize"
	RestoreFields      Strategy = "restore-fields"
	DropInvalidEntries Strategy = "drop-invalid-entries"
	CleanTemp          Strategy = "clean-temp"
	// AddOrdinals gives the trailing records of a paginated log that lack one the ordinal that
	// follows the last record's (Codex refuses to resume otherwise); nothing else is changed.
	AddOrdinals Strategy = "add-ordinals"
	// RebuildHeader rebuilds a torn or missing first line (the session's metadata record) from
	// values present in the file and its directory, keeping every other byte.
	RebuildHeader Strategy = "rebuild-header"
	// Reindex rebuilds, live and through SQLite's locks, the indexes of an app's SQLite store
	// that its gate finds damaged while every table is sound: REINDEX of indexes whose
	// entries are wrong, and of one whose b-tree cannot be read, its schema entry removed and
	// the index created again (openclaw-sqlite.md, "Heal"). No row is touched.
	Reindex Strategy = "reindex"
	// RestoreSnapshot writes the newest snapshot of a SQLite store that passed its gate into
	// the live store through SQLite's backup API, when other damage leaves page 1 readable.
	// Every write committed since that snapshot is discarded (the window is reported), so no
	// preset enables it: a rule opts in.
	RestoreSnapshot Strategy = "restore-snapshot"
)

// Strategies lists every strategy a policy may name.
var Strategies = []Strategy{Salvage, Backup, LastGoodCopy, Reconcile, Normalize, RestoreFields, DropInvalidEntries, CleanTemp, AddOrdinals, RebuildHeader, Reindex, RestoreSnapshot}

// SQLite reports whether s repairs SQLite stores only (carried out through SQLite, not by a
// plan of the file's bytes).
func (s Strategy) SQLite() bool { return s == Reindex || s == RestoreSnapshot }

// Mode says whether a rule heals or only reports.
type Mode string

const (
	ModeHeal    Mode = "heal"
	ModeObserve Mode = "observe" // inspect and report, never write
)

// LockProtocol names how a rule takes the app's lock before a heal.
type LockProtocol string

// The generic lock protocols: none, a flock or an O_EXCL lock file at a templated path. The
// apps' own protocols are with their presets (presets.go).
const (
	LockNone  LockProtocol = "none"
	LockFlock LockProtocol = "flock"
	LockFile  LockProtocol = "lockfile"
)

// Stale reports whether the protocol has a staleness rule (a lock older than Lock.Stale is
// taken over).
func (p LockProtocol) Stale() bool {
	if p == LockFile {
		return true
	}
	for _, a := range appLocks {
		if a.protocol == p {
			return a.stale
		}
	}
	return false
}

// Formats are the valid values of Rule.Format: the generic ones, then each preset's own.
var Formats = append([]string{"json", "jsonl"}, presetNames...)

// LockProtocols lists every lock protocol a policy may name.
var LockProtocols = append([]LockProtocol{LockNone, LockFlock, LockFile}, appLockProtocols()...)

var (
	modes      = []string{string(ModeHeal), string(ModeObserve)}
	logFormats = []string{"auto", "text", "json"}
	logLevels  = []string{"debug", "info", "warn", "error"}
)

// OwnTempPattern matches the base names of sessionmedic's own temp files. Every rule treats
// them as temps: they are never validated as sessions. Name temp files
// ".~<name>.sessionmedic-<random>.tmp" to match it (older versions wrote
// ".<name>.sessionmedic-<random>.tmp", which it matches too).
const OwnTempPattern = ".*.sessionmedic-*.tmp"

// DefaultSource is Config.Source of the embedded default policy.
const DefaultSource = "embedded default"

//go:embed default.yaml
var defaultYAML []byte

// DefaultYAML returns the embedded default policy file.
func DefaultYAML() []byte { return append([]byte(nil), defaultYAML...) }

// Error is a policy error: where it is and what is wrong.
type Error struct {
	File  string
	Line  int    // 0 when unknown
	Field string // YAML field path, e.g. rules[1].settle; "" for syntax errors
	Msg   string
}

func (e *Error) Error() string {
	var b strings.Builder
	b.WriteString(e.File)
	if e.Line > 0 {
		fmt.Fprintf(&b, ":%d", e.Line)
	}
	b.WriteString(": ")
	if e.Field != "" {
		b.WriteString(e.Field)
		b.WriteString(": ")
	}
	b.WriteString(e.Msg)
	return b.String()
}

// Load reads a policy file and decodes it with the system environment.
func Load(path string) (*Config, error) { return LoadEnv(path, SystemEnv()) }

// MaxFileBytes bounds a policy file; a larger one is refused unread.
const MaxFileBytes = 1 << 20

// LoadEnv reads a policy file and decodes it with env. Only a regular file of at most
// [MaxFileBytes] is read: a FIFO would block the read for ever and /dev/zero never ends.
func LoadEnv(path string, env Env) (*Config, error) {
	data, err := readFile(path)
	if err != nil {
		return nil, err
	}
	return ParseEnv(path, data, env)
}

// readFile opens without blocking (a FIFO with no writer opens at once), then refuses
// anything but a regular file of at most MaxFileBytes, and reads no more than that even if
// the file grows meanwhile.
func readFile(path string) ([]byte, error) {
	f, err := os.OpenFile(path, os.O_RDONLY|syscall.O_NONBLOCK|syscall.O_CLOEXEC, 0)
	if errors.Is(err, syscall.ENXIO) { // a socket cannot be opened at all: say what it is
		if fi, serr := os.Stat(path); serr == nil && !fi.Mode().IsRegular() {
			return nil, fmt.Errorf("read policy: %s: not a regular file (%s)", path, fileKind(fi.Mode()))
		}
	}
	if err != nil {
		return nil, fmt.Errorf("read policy: %w", err)
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, fmt.Errorf("read policy: %w", err)
	}
	if !fi.Mode().IsRegular() {
		return nil, fmt.Errorf("read policy: %s: not a regular file (%s)", path, fileKind(fi.Mode()))
	}
	if err := untrustedPolicy(path, fi, os.Geteuid()); err != nil {
		return nil, err
	}
	tooBig := func() error {
		return fmt.Errorf("read policy: %s: larger than 1 MiB", path)
	}
	if fi.Size() > MaxFileBytes {
		return nil, tooBig()
	}
	data, err := io.ReadAll(io.LimitReader(f, MaxFileBytes+1))
	if err != nil {
		return nil, fmt.Errorf("read policy: %w", err)
	}
	if len(data) > MaxFileBytes {
		return nil, tooBig()
	}
	return data, nil
}

func fileKind(m os.FileMode) string {
	switch {
	case m.IsDir():
		return "a directory"
	case m&os.ModeNamedPipe != 0:
		return "a named pipe"
	case m&os.ModeSocket != 0:
		return "a socket"
	case m&os.ModeCharDevice != 0:
		return "a character device"
	case m&os.ModeDevice != 0:
		return "a block device"
	}
	return "mode " + m.Type().String()
}

// Parse decodes a policy with the system environment; name is used in errors and as Source.
func Parse(name string, data []byte) (*Config, error) { return ParseEnv(name, data, SystemEnv()) }

// Default returns the embedded default policy: one rule per preset at its default locations.
// Use [Config.Existing] to keep only the locations that exist.
func Default(env Env) *Config {
	c, err := ParseEnv(DefaultSource, defaultYAML, env)
	if err != nil {
		panic("policy: embedded default: " + err.Error())
	}
	return c
}

// Rule returns the rule with that name, or nil.
func (c *Config) Rule(name string) *Rule {
	for i := range c.Rules {
		if c.Rules[i].Name == name {
			return &c.Rules[i]
		}
	}
	return nil
}

// Existing returns a copy that keeps only the paths that exist; rules left without paths are
// dropped. skipped lists the paths dropped, in rule order.
func (c *Config) Existing(env Env) (kept *Config, skipped []string) {
	kept = c.Clone()
	rules := kept.Rules[:0]
	for _, r := range kept.Rules {
		var paths []string
		for _, p := range r.Paths {
			if env.exists(p) {
				paths = append(paths, p)
			} else {
				skipped = append(skipped, p)
			}
		}
		if len(paths) == 0 {
			continue
		}
		r.Paths = paths
		rules = append(rules, r)
	}
	kept.Rules = rules
	return kept, skipped
}

// Clone returns a deep copy.
func (c *Config) Clone() *Config {
	n := *c
	n.Rules = make([]Rule, len(c.Rules))
	for i, r := range c.Rules {
		n.Rules[i] = r.clone()
	}
	return &n
}

func (r Rule) clone() Rule {
	r.Paths = cloneStrings(r.Paths)
	r.Match = cloneStrings(r.Match)
	r.Exclude = cloneStrings(r.Exclude)
	r.Backups = cloneStrings(r.Backups)
	r.Strategies = slices.Clone(r.Strategies)
	r.Temps = cloneStrings(r.Temps)
	return r
}

func cloneStrings(s []string) []string {
	if len(s) == 0 {
		return nil
	}
	return append([]string(nil), s...)
}

// HasStrategy reports whether the rule allows the named strategy.
func (r *Rule) HasStrategy(name Strategy) bool {
	for _, s := range r.Strategies {
		if s == name {
			return true
		}
	}
	return false
}

// ExpandTemplate replaces {file} (the full path), {dir} (its directory) and {name} (its base
// name) in tmpl.
func ExpandTemplate(tmpl, file string) string {
	return strings.NewReplacer(
		"{file}", file,
		"{dir}", filepath.Dir(file),
		"{name}", filepath.Base(file),
	).Replace(tmpl)
}

// names returns typed names as plain strings.
func names[T ~string](xs []T) []string {
	out := make([]string, len(xs))
	for i, x := range xs {
		out[i] = string(x)
	}
	return out
}

// typed returns plain strings as typed names.
func typed[T ~string](xs []string) []T {
	if xs == nil {
		return nil
	}
	out := make([]T, len(xs))
	for i, x := range xs {
		out[i] = T(x)
	}
	return out
}

func contains(list []string, s string) bool {
	for _, v := range list {
		if v == s {
			return true
		}
	}
	return false
}
