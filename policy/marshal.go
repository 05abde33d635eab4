package policy

import (
	"bytes"
	"strconv"

	"go.yaml.in/yaml/v3"
)

// Marshal writes the effective policy as YAML: presets expanded, every key written,
// durations like "2s", max_loss like "50%", sizes as written (else with binary units where exact). Parsing the
// result gives back an equal Config (up to Source, which becomes the new file's name).
func Marshal(c *Config) []byte {
	doc := mapping(
		"version", intNode(c.Version),
		"state_dir", str(c.StateDir),
		"log", flow(mapping("format", str(c.Log.Format), "level", str(c.Log.Level))),
	)
	if c.HTTP.Listen != "" || c.HTTP.Pprof {
		add(doc, "http", flow(mapping("listen", str(c.HTTP.Listen), "pprof", boolNode(c.HTTP.Pprof))))
	}
	add(doc, "quarantine", mapping(
		"max_age", str(FormatDuration(c.Quarantine.MaxAge)),
		"max_bytes", str(formatSizeAs(c.Quarantine.MaxBytes, c.Quarantine.maxBytesText)),
	))
	add(doc, "last_good", mapping(
		"max_file_bytes", str(formatSizeAs(c.LastGood.MaxFileBytes, c.LastGood.maxFileText)),
		"max_total_bytes", str(formatSizeAs(c.LastGood.MaxTotalBytes, c.LastGood.maxTotalText)),
	))
	budget := intNode(c.WatchBudget)
	if c.WatchBudget == 0 {
		budget.LineComment = "a quarter of fs.inotify.max_user_watches"
	}
	add(doc, "watch_budget", budget)
	rules := &yaml.Node{Kind: yaml.SequenceNode, Tag: "!!seq"}
	for i := range c.Rules {
		rules.Content = append(rules.Content, marshalRule(&c.Rules[i]))
	}
	add(doc, "rules", rules)
	if c.Source != "" {
		doc.HeadComment = "effective policy from " + c.Source
	}

	var buf bytes.Buffer
	enc := yaml.NewEncoder(&buf)
	enc.SetIndent(2)
	if err := enc.Encode(doc); err != nil {
		panic("policy: marshal: " + err.Error())
	}
	if err := enc.Close(); err != nil {
		panic("policy: marshal: " + err.Error())
	}
	return buf.Bytes()
}

func marshalRule(r *Rule) *yaml.Node {
	n := mapping("name", str(r.Name))
	if r.Preset != "" {
		add(n, "preset", str(r.Preset))
	}
	if len(r.Paths) > 0 {
		add(n, "paths", list(r.Paths, false))
	} else {
		n.Content[1].LineComment = "no paths: the app's default location was not found"
	}
	add(n,
		"match", list(r.Match, true),
		"exclude", list(r.Exclude, true),
		"format", str(r.Format),
		"settle", str(FormatDuration(r.Settle)),
		"max_wait", str(FormatDuration(r.MaxWait)),
		"lock", marshalLock(r.Lock),
		"backups", list(r.Backups, true),
		"strategies", list(names(r.Strategies), true),
		"limits", flow(mapping(
			"max_loss", str(formatFraction(r.Limits.MaxLoss)),
			"max_file_size", str(formatSizeAs(r.Limits.MaxFileSize, r.Limits.maxFileSizeText)),
		)),
		"keep_last_good", boolNode(r.KeepLastGood),
		"restore_deleted", boolNode(r.RestoreDeleted),
		"mode", str(string(r.Mode)),
		"temp_age", str(FormatDuration(r.TempAge)),
		"temps", list(r.Temps, true),
	)
	return n
}

func marshalLock(l Lock) *yaml.Node {
	var n *yaml.Node
	switch l.Protocol {
	case "none", "":
		return str("none")
	case "flock", "lockfile":
		n = mapping(string(l.Protocol), str(l.Path))
	default:
		n = mapping("protocol", str(string(l.Protocol)))
	}
	if l.Protocol.Stale() {
		add(n, "stale", str(FormatDuration(l.Stale)))
	}
	add(n, "wait", str(FormatDuration(l.Wait)))
	return flow(n)
}

func str(s string) *yaml.Node { return &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!str", Value: s} }

func intNode(i int) *yaml.Node {
	return &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!int", Value: strconv.Itoa(i)}
}

func boolNode(b bool) *yaml.Node {
	return &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!bool", Value: strconv.FormatBool(b)}
}

func mapping(kv ...any) *yaml.Node {
	n := &yaml.Node{Kind: yaml.MappingNode, Tag: "!!map"}
	add(n, kv...)
	return n
}

// add appends key, value pairs (string, *yaml.Node) to a mapping.
func add(n *yaml.Node, kv ...any) {
	for i := 0; i+1 < len(kv); i += 2 {
		n.Content = append(n.Content, str(kv[i].(string)), kv[i+1].(*yaml.Node))
	}
}

func flow(n *yaml.Node) *yaml.Node {
	n.Style = yaml.FlowStyle
	return n
}

func list(items []string, inline bool) *yaml.Node {
	n := &yaml.Node{Kind: yaml.SequenceNode, Tag: "!!seq"}
	if inline {
		n.Style = yaml.FlowStyle
	}
	for _, s := range items {
		n.Content = append(n.Content, str(s))
	}
	return n
}
