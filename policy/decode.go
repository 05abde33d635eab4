package policy

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"go.yaml.in/yaml/v3"
)

// Defaults of the top-level keys.
const (
	DefaultLogFormat        = "auto"
	DefaultLogLevel         = "info"
	DefaultQuarantineMaxAge = 720 * time.Hour
	DefaultQuarantineBytes  = GiB
	DefaultLastGoodFile     = 64 * MiB
	DefaultLastGoodTotal    = GiB
)

// ParseEnv decodes a policy: defaults first, then the YAML in data, strictly. name is used in
// errors and as Config.Source; env expands ~ and $VARS in paths and finds the presets'
// default locations. The error, if any, is an *Error, or an Errors of them in document order
// when the file has several problems, or a *TooManyErrors when it has more than MaxErrors.
// One pass finds every problem: a value's checks across keys (a missing name, max_wait
// below settle, a duplicate rule name) are made alongside the errors of its keys, as long as
// the keys they read are valid.
func ParseEnv(name string, data []byte, env Env) (c *Config, err error) {
	d := &decoder{file: name, env: env}
	defer func() {
		if r := recover(); r != nil {
			switch r := r.(type) {
			case decodeError:
				d.errs = append(d.errs, r.err)
			case abandoned:
			default:
				panic(r)
			}
			c, err = nil, d.err()
		}
	}()
	c = d.config(d.document(data))
	if len(d.errs) > 0 {
		return nil, d.err()
	}
	c.Source = name
	return c, nil
}

// MaxErrors bounds the errors listed for one policy file; a *TooManyErrors says how many
// more there are.
const MaxErrors = 20

// decodeError carries an error out of the decoder up to the value it is recorded for (see
// try); abandoned leaves a value whose errors are recorded already.
type (
	decodeError struct{ err *Error }
	abandoned   struct{}
)

type decoder struct {
	file string
	env  Env
	errs []*Error
	cols map[*Error]int // the column of each error's node, for document order on one line

	ruleNodes []*yaml.Node // each rule's node, for the warnings
}

func (d *decoder) fail(n *yaml.Node, field, format string, args ...any) {
	line, col := 0, 0
	if n != nil {
		line, col = n.Line, n.Column
	}
	e := &Error{File: d.file, Line: line, Field: field, Msg: fmt.Sprintf(format, args...)}
	if col > 0 {
		if d.cols == nil {
			d.cols = map[*Error]int{}
		}
		d.cols[e] = col
	}
	panic(decodeError{e})
}

// try decodes one value with fn, recording the error that fails it, so that the decode goes
// on with the next value and one run reports every problem of a file.
func (d *decoder) try(fn func()) {
	defer func() {
		if r := recover(); r != nil {
			switch r := r.(type) {
			case decodeError:
				d.errs = append(d.errs, r.err)
			case abandoned:
			default:
				panic(r)
			}
		}
	}()
	fn()
}

// settled abandons the value being decoded if errors were recorded since there were before:
// the checks across its keys would only repeat them.
func (d *decoder) settled(before int) {
	if len(d.errs) > before {
		panic(abandoned{})
	}
}

// failedSince reports whether an error recorded since the first before was about field or
// a field below it: a check that reads field's value must not judge what failed to decode.
func (d *decoder) failedSince(before int, field string) bool {
	for _, e := range d.errs[before:] {
		if e.Field == field || strings.HasPrefix(e.Field, field+".") || strings.HasPrefix(e.Field, field+"[") {
			return true
		}
	}
	return false
}

// err is the decode's error: the one *Error, all of them in document order, or the first
// MaxErrors of them and how many more there are.
func (d *decoder) err() error {
	slices.SortStableFunc(d.errs, func(a, b *Error) int {
		if a.Line != b.Line {
			return a.Line - b.Line
		}
		return d.cols[a] - d.cols[b]
	})
	switch {
	case len(d.errs) == 1:
		return d.errs[0]
	case len(d.errs) > MaxErrors:
		return &TooManyErrors{Errors: Errors(d.errs[:MaxErrors:MaxErrors]), More: len(d.errs) - MaxErrors}
	}
	return Errors(d.errs)
}

var yamlLineErr = regexp.MustCompile(`^yaml: line (\d+): (.*)$`)

// parserProblems are the messages of yaml's parser (not its scanner). For those the line in
// the error is counted from 0 (and names where the enclosing collection starts, when known).
var parserProblems = []string{
	"did not find expected ',' or ']'",
	"did not find expected ',' or '}'",
	"did not find expected '-' indicator",
	"did not find expected <document start>",
	"did not find expected key",
	"did not find expected node content",
	"found duplicate %TAG directive",
	"found duplicate %YAML directive",
	"found incompatible YAML document",
	"found undefined tag handle",
}

// syntax turns a yaml error into an *Error with the line it names.
func (d *decoder) syntax(err error, data []byte) {
	msg := err.Error()
	line := 0
	if m := yamlLineErr.FindStringSubmatch(msg); m != nil {
		line, _ = strconv.Atoi(m[1])
		msg = m[2]
		if contains(parserProblems, msg) {
			line = min(line+1, bytes.Count(bytes.TrimSuffix(data, []byte("\n")), []byte("\n"))+1)
		}
	} else {
		msg = strings.TrimPrefix(msg, "yaml: ")
		if contains(parserProblems, msg) {
			line = 1
		}
	}
	panic(decodeError{&Error{File: d.file, Line: line, Msg: msg}})
}

// document parses data into its single top-level node.
func (d *decoder) document(data []byte) *yaml.Node {
	dec := yaml.NewDecoder(bytes.NewReader(data))
	var doc yaml.Node
	if err := dec.Decode(&doc); err != nil {
		if errors.Is(err, io.EOF) {
			d.fail(&yaml.Node{Line: 1}, "", "the policy is empty")
		}
		d.syntax(err, data)
	}
	var extra yaml.Node
	switch err := dec.Decode(&extra); {
	case err == nil:
		d.fail(&extra, "", "only one YAML document is allowed")
	case !errors.Is(err, io.EOF):
		d.syntax(err, data)
	}
	if doc.Kind == yaml.DocumentNode && len(doc.Content) == 1 {
		return doc.Content[0]
	}
	return &doc
}

func (d *decoder) config(top *yaml.Node) *Config {
	c := &Config{
		Log:        Log{Format: DefaultLogFormat, Level: DefaultLogLevel},
		Quarantine: Retention{MaxAge: DefaultQuarantineMaxAge, MaxBytes: DefaultQuarantineBytes},
		LastGood:   LastGoodLimits{MaxFileBytes: DefaultLastGoodFile, MaxTotalBytes: DefaultLastGoodTotal},
	}
	top = resolve(top)
	if top.Kind != yaml.MappingNode {
		d.fail(top, "", "expected a mapping at the top level, got %s", describe(top))
	}
	// The version decides how to read the rest, so it is checked first: a version other
	// than 1 ends the decode (the rest would be read with the wrong schema); a missing one
	// is an error, and the rest is read as version 1.
	if v := lookup(top, "version"); v == nil {
		d.try(func() { d.fail(top, "version", "missing (want 1)") })
		c.Version = 1
	} else if c.Version = d.integer(v, "version"); c.Version != 1 {
		d.fail(v, "version", "%d is not supported (want 1)", c.Version)
	}
	var haveRules bool
	d.mapping(top, "", func(key string, k, v *yaml.Node, f string) {
		switch key {
		case "version":
		case "state_dir":
			c.StateDir = d.path(v, f)
		case "log":
			d.mapping(v, f, func(key string, k, v *yaml.Node, f string) {
				switch key {
				case "format":
					c.Log.Format = d.oneOf(v, f, "log format", logFormats)
				case "level":
					c.Log.Level = d.oneOf(v, f, "log level", logLevels)
				default:
					d.fail(k, f, "unknown key")
				}
			})
		case "http":
			d.mapping(v, f, func(key string, k, v *yaml.Node, f string) {
				switch key {
				case "listen":
					c.HTTP.Listen = d.listen(v, f)
				case "pprof":
					c.HTTP.Pprof = d.boolean(v, f)
				default:
					d.fail(k, f, "unknown key")
				}
			})
		case "quarantine":
			d.mapping(v, f, func(key string, k, v *yaml.Node, f string) {
				switch key {
				case "max_age":
					c.Quarantine.MaxAge = d.duration(v, f)
				case "max_bytes":
					c.Quarantine.MaxBytes, c.Quarantine.maxBytesText = d.size(v, f)
				default:
					d.fail(k, f, "unknown key")
				}
			})
		case "last_good":
			d.mapping(v, f, func(key string, k, v *yaml.Node, f string) {
				switch key {
				case "max_file_bytes":
					c.LastGood.MaxFileBytes, c.LastGood.maxFileText = d.size(v, f)
				case "max_total_bytes":
					c.LastGood.MaxTotalBytes, c.LastGood.maxTotalText = d.size(v, f)
				default:
					d.fail(k, f, "unknown key")
				}
			})
		case "watch_budget":
			if c.WatchBudget = d.integer(v, f); c.WatchBudget < 0 {
				d.fail(v, f, "%d is negative (0 = a quarter of fs.inotify.max_user_watches)", c.WatchBudget)
			}
		case "rules":
			haveRules = true
			c.Rules = d.rules(v, f)
		default:
			d.fail(k, f, "unknown key")
		}
	})
	if !haveRules {
		d.try(func() { d.fail(top, "rules", "missing (want at least one rule)") })
	}
	if c.StateDir == "" {
		c.StateDir = defaultStateDir(d.env)
	}
	if len(d.errs) == 0 {
		c.Warnings = d.shadowed(c)
	}
	return c
}

// shadowed warns of each rule path under which an earlier rule takes every file the rule
// could cover (see [Config.ShadowedBy]): valid, but the rule guards nothing there.
func (d *decoder) shadowed(c *Config) []*Error {
	var ws []*Error
	for j, r := range c.Rules {
		node := d.ruleNodes[j]
		paths := lookup(node, "paths")
		for k, root := range r.Paths {
			i := c.shadowing(j, root)
			if i < 0 {
				continue
			}
			w := &Error{File: d.file, Line: node.Line, Field: fmt.Sprintf("rules[%d]", j)}
			if paths != nil && paths.Kind == yaml.SequenceNode && k < len(paths.Content) {
				w.Line, w.Field = resolve(paths.Content[k]).Line, fmt.Sprintf("rules[%d].paths[%d]", j, k)
			}
			w.Msg = fmt.Sprintf("%s: shadowed by rule %q (rules[%d]), which takes every file this rule matches there first: "+
				"this rule guards nothing there", root, c.Rules[i].Name, i)
			ws = append(ws, w)
		}
	}
	return ws
}

func (d *decoder) rules(n *yaml.Node, field string) []Rule {
	items := d.sequence(n, field)
	if len(items) == 0 {
		d.fail(n, field, "must not be empty")
	}
	d.ruleNodes = items
	rules := make([]Rule, 0, len(items))
	names := map[string]int{}
	before := len(d.errs)
	for i, item := range items {
		f := fmt.Sprintf("%s[%d]", field, i)
		d.try(func() {
			before := len(d.errs)
			r, nameNode := d.rule(item, f)
			rules = append(rules, r)
			// A name is checked even when the rule has other errors: each is its own.
			if nameNode == nil || d.failedSince(before, f+".name") {
				return
			}
			if j, dup := names[r.Name]; dup {
				d.fail(nameNode, f+".name", "%q is already the name of %s[%d]", r.Name, field, j)
			}
			names[r.Name] = i
		})
	}
	d.settled(before)
	return rules
}

// TooManyErrors is the error of a policy file with more than MaxErrors problems: the first
// MaxErrors of them in document order, then a line saying how many more there are.
type TooManyErrors struct {
	Errors Errors // the first MaxErrors
	More   int    // how many more were found
}

func (e *TooManyErrors) Error() string {
	return fmt.Sprintf("%s\n%s: %d more errors not shown", e.Errors.Error(), e.Errors[0].File, e.More)
}

// Unwrap gives the errors listed to errors.Is and errors.As.
func (e *TooManyErrors) Unwrap() error { return e.Errors }

// Errors are the problems of one policy file, in document order, one a line.
type Errors []*Error

func (es Errors) Error() string {
	lines := make([]string, len(es))
	for i, e := range es {
		lines[i] = e.Error()
	}
	return strings.Join(lines, "\n")
}

// Unwrap gives the errors to errors.Is and errors.As: an *Error is found in Errors.
func (es Errors) Unwrap() []error {
	out := make([]error, len(es))
	for i, e := range es {
		out[i] = e
	}
	return out
}
