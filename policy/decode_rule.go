package policy

import (
	"errors"
	"fmt"
	"path"
	"regexp"
	"strings"
	"time"

	"go.yaml.in/yaml/v3"
)

// Defaults of a rule's keys (the presets use them too).
const (
	DefaultSettle      = 2 * time.Second
	DefaultMaxWait     = 30 * time.Second
	DefaultTempAge     = 5 * time.Minute
	DefaultLockWait    = 2 * time.Second
	DefaultLockStale   = 30 * time.Second
	DefaultMaxLoss     = 0.5
	DefaultMaxFileSize = GiB
)

// baseRule holds the defaults every rule starts from.
func baseRule() Rule {
	return Rule{
		Settle:       DefaultSettle,
		MaxWait:      DefaultMaxWait,
		Lock:         Lock{Protocol: "none"},
		Strategies:   []Strategy{Salvage, LastGoodCopy},
		Limits:       Limits{MaxLoss: DefaultMaxLoss, MaxFileSize: DefaultMaxFileSize},
		KeepLastGood: true,
		Mode:         "heal",
		TempAge:      DefaultTempAge,
	}
}

var validName = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._-]*$`)

// rule decodes one rule: the preset's rule (or the defaults), then every key set on top.
// It returns the node of the name, for the duplicate-name error. Each check across its
// keys is made, and reported alongside the keys' own errors, when the keys it reads decoded.
func (d *decoder) rule(n *yaml.Node, field string) (Rule, *yaml.Node) {
	n = resolve(n)
	if n.Kind != yaml.MappingNode {
		d.fail(n, field, "expected a mapping, got %s", describe(n))
	}
	r := baseRule()
	before := len(d.errs)
	if v := lookup(n, "preset"); v != nil {
		d.try(func() {
			f := field + ".preset"
			name := d.str(v, f)
			p, ok := PresetRule(name, d.env)
			if !ok {
				d.fail(v, f, "unknown preset %q (want %s)", name, strings.Join(PresetChoices(), ", "))
			}
			r = p
			r.Name = ""
		})
	}
	set := map[string]*yaml.Node{}
	d.mapping(n, field, func(key string, k, v *yaml.Node, f string) {
		set[key] = k
		switch key {
		case "name":
			r.Name = d.str(v, f)
			if !validName.MatchString(r.Name) {
				d.fail(v, f, "%q is not a valid name (letters, digits, '.', '_' and '-')", r.Name)
			}
			set[key] = v
		case "preset":
		case "paths":
			r.Paths = d.nonEmpty(v, f, d.strings(v, f, func(s string) (string, error) {
				return expandPath(s, d.env)
			}))
		case "match":
			r.Match = d.nonEmpty(v, f, d.strings(v, f, checkGlob))
		case "exclude":
			r.Exclude = d.strings(v, f, checkGlob)
		case "format":
			r.Format = d.oneOf(v, f, "format", Formats)
		case "settle":
			r.Settle = d.duration(v, f)
		case "max_wait":
			r.MaxWait = d.duration(v, f)
		case "lock":
			r.Lock = d.lock(v, f)
		case "backups":
			r.Backups = d.strings(v, f, func(s string) (string, error) { return s, checkTemplate(s, true) })
		case "strategies":
			r.Strategies = typed[Strategy](d.strings(v, f, func(s string) (string, error) {
				if !contains(names(Strategies), s) {
					return "", fmt.Errorf("unknown strategy %q (want %s)", s, strings.Join(names(Strategies), ", "))
				}
				return s, nil
			}))
		case "limits":
			d.limits(v, f, &r.Limits)
		case "keep_last_good":
			r.KeepLastGood = d.boolean(v, f)
		case "restore_deleted":
			r.RestoreDeleted = d.boolean(v, f)
		case "mode":
			r.Mode = Mode(d.oneOf(v, f, "mode", modes))
		case "temp_age":
			r.TempAge = d.duration(v, f)
		case "temps":
			r.Temps = d.strings(v, f, checkBaseGlob)
		default:
			d.fail(k, f, "unknown key")
		}
	})
	// valid: the key is not set, or its value decoded without an error.
	valid := func(keys ...string) bool {
		for _, key := range keys {
			if d.failedSince(before, join(field, key)) {
				return false
			}
		}
		return true
	}
	check := func(fn func()) { d.try(fn) }
	if set["name"] == nil {
		check(func() { d.fail(n, field+".name", "missing") })
	}
	if set["preset"] == nil && set["format"] == nil {
		check(func() { d.fail(n, field, "needs a preset or a format") })
	}
	if set["preset"] == nil && set["paths"] == nil {
		check(func() { d.fail(n, field+".paths", "missing") })
	}
	if len(r.Match) == 0 {
		switch r.Format {
		case "json", "jsonl":
			r.Match = []string{"*." + r.Format}
		case "":
			// no format: said above, or by the preset's or the format's own error
		default:
			if set["match"] == nil && valid("preset") {
				check(func() {
					d.fail(n, field+".match", "missing (format %s has no default without its preset)", r.Format)
				})
			}
		}
	}
	if r.MaxWait < r.Settle && valid("preset", "settle", "max_wait") {
		check(func() {
			if k := set["max_wait"]; k != nil {
				d.fail(k, field+".max_wait", "%s is less than settle (%s)", FormatDuration(r.MaxWait), FormatDuration(r.Settle))
			}
			d.fail(set["settle"], field+".settle", "%s is more than max_wait (%s)", FormatDuration(r.Settle), FormatDuration(r.MaxWait))
		})
	}
	if r.Format != "" && valid("preset", "format") {
		d.strategiesApply(n, field, r, set)
	}
	return r.clone(), set["name"]
}

// strategiesApply reports each strategy of r that can never repair a file of r's format:
// one the rule lists, at its place in the list; one it takes from its preset while setting
// another format, at the format.
func (d *decoder) strategiesApply(n *yaml.Node, field string, r Rule, set map[string]*yaml.Node) {
	if list := lookup(n, "strategies"); list != nil {
		if list.Kind != yaml.SequenceNode {
			return // said already
		}
		seen := map[string]bool{}
		for i, item := range list.Content {
			item = resolve(item)
			s := Strategy(item.Value)
			if item.Kind != yaml.ScalarNode || item.Tag != "!!str" || !contains(names(Strategies), item.Value) || seen[item.Value] {
				continue // not a strategy, or a duplicate: said already
			}
			seen[item.Value] = true
			if !s.Applies(r.Format) {
				d.try(func() {
					d.fail(item, fmt.Sprintf("%s.strategies[%d]", field, i), "%s cannot repair format %s: it applies only to %s (format or preset)",
						s, r.Format, sentence(StrategyFormats(s)))
				})
			}
		}
		return
	}
	if set["format"] == nil {
		return // the preset's own strategies and format, or the defaults
	}
	var cannot []string
	for _, s := range r.Strategies {
		if !s.Applies(r.Format) {
			cannot = append(cannot, fmt.Sprintf("%s (only %s)", s, sentence(StrategyFormats(s))))
		}
	}
	if len(cannot) > 0 {
		d.try(func() {
			d.fail(set["format"], field+".format", "%s cannot use the preset's %s: set strategies", r.Format, sentence(cannot))
		})
	}
}

func (d *decoder) nonEmpty(n *yaml.Node, field string, list []string) []string {
	if len(list) == 0 {
		d.fail(n, field, "must not be empty")
	}
	return list
}

func (d *decoder) limits(n *yaml.Node, field string, l *Limits) {
	d.mapping(n, field, func(key string, k, v *yaml.Node, f string) {
		switch key {
		case "max_loss":
			l.MaxLoss = d.fraction(v, f)
		case "max_file_size":
			l.MaxFileSize, l.maxFileSizeText = d.size(v, f)
		default:
			d.fail(k, f, "unknown key")
		}
	})
}

// lock decodes `none` or a mapping with exactly one of flock, lockfile or protocol, plus
// stale and wait. A lock replaces the preset's lock as a whole.
func (d *decoder) lock(n *yaml.Node, field string) Lock {
	if n.Kind == yaml.ScalarNode {
		if n.Tag == "!!str" && n.Value == "none" {
			return Lock{Protocol: "none"}
		}
		d.fail(n, field, "expected none or a mapping, got %s", describe(n))
	}
	var l Lock
	var kind, stale, wait *yaml.Node
	before := len(d.errs)
	d.mapping(n, field, func(key string, k, v *yaml.Node, f string) {
		switch key {
		case "flock", "lockfile", "protocol":
			if kind != nil {
				d.fail(k, field, "set only one of flock, lockfile and protocol (%s is set on line %d)", kind.Value, kind.Line)
			}
			kind = k
			if key == "protocol" {
				l.Protocol = LockProtocol(d.oneOf(v, f, "lock protocol", names(append([]LockProtocol{LockNone}, appLockProtocols()...))))
				return
			}
			l.Protocol, l.Path = LockProtocol(key), d.str(v, f)
			if err := checkTemplate(l.Path, false); err != nil {
				d.fail(v, f, "%s", err)
			}
		case "stale":
			stale, l.Stale = k, d.duration(v, f)
		case "wait":
			wait, l.Wait = k, d.duration(v, f)
		default:
			d.fail(k, f, "unknown key")
		}
	})
	if kind == nil {
		d.fail(n, field, "needs one of flock, lockfile or protocol")
	}
	if kind.Value == "protocol" && d.failedSince(before, join(field, kind.Value)) {
		return l // which protocol is not known: stale and wait cannot be judged
	}
	switch l.Protocol {
	case "none":
		if wait != nil {
			d.try(func() { d.fail(wait, field+".wait", "has no effect without a lock") })
		}
		if stale != nil {
			d.try(func() { d.fail(stale, field+".stale", "has no effect without a lock") })
		}
		return Lock{Protocol: "none"}
	default:
		if !l.Protocol.Stale() {
			if stale != nil {
				d.try(func() { d.fail(stale, field+".stale", "applies only to %s locks", staleProtocols()) })
			}
		} else if stale == nil {
			l.Stale = DefaultLockStale
		}
	}
	if wait == nil {
		l.Wait = DefaultLockWait
	}
	return l
}

var placeholder = regexp.MustCompile(`\{[^{}]*\}`)

// checkTemplate checks a path template: known placeholders only, anchored at {file}, {dir}
// or /, and (for backups) a valid glob once expanded.
func checkTemplate(t string, glob bool) error {
	if t == "" {
		return errors.New("must not be empty")
	}
	for _, p := range placeholder.FindAllString(t, -1) {
		if p != "{file}" && p != "{dir}" && p != "{name}" {
			return fmt.Errorf("%q: unknown placeholder %s (want {file}, {dir} or {name})", t, p)
		}
	}
	if strings.ContainsAny(placeholder.ReplaceAllString(t, ""), "{}") {
		return fmt.Errorf("%q: unbalanced { or }", t)
	}
	if !strings.HasPrefix(t, "{file}") && !strings.HasPrefix(t, "{dir}") && !strings.HasPrefix(t, "/") {
		return fmt.Errorf("%q must start with {file}, {dir} or /", t)
	}
	if glob {
		if _, err := path.Match(ExpandTemplate(t, "/d/f"), ""); err != nil {
			return fmt.Errorf("%q is not a valid glob", t)
		}
	}
	return nil
}

// staleProtocols lists the protocols with a staleness rule, as a sentence ("a, b and c").
func staleProtocols() string {
	var ps []string
	for _, p := range LockProtocols {
		if p.Stale() {
			ps = append(ps, string(p))
		}
	}
	return sentence(ps)
}
