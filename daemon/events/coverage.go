package events

import (
	"os"

	"github.com/sessionmedic/sessionmedic/heal"
	"github.com/sessionmedic/sessionmedic/internal/pathx"
	"github.com/sessionmedic/sessionmedic/internal/resolve"
	"github.com/sessionmedic/sessionmedic/policy"
)

// RootCoverage is what one path of a rule holds: whether it exists, and how many files of
// the rule a walk found below it. A rule path that is missing or holds no file guards
// nothing, and says so (rule.path_missing, rule.no_files).
type RootCoverage struct {
	Rule     string
	Path     string
	Patterns []string
	Missing  bool // the path does not exist (or cannot be reached)
	Err      string
	Files    int // session files found below it (temps and missing-file targets not counted)
	// ShadowedBy names the earlier rule that takes every file this rule matches under the
	// path, when the rules alone say so for certain (see policy.Config.ShadowedBy); "" else.
	ShadowedBy string
}

// Coverage counts, per rule path of cfg, the targets found below it.
func Coverage(cfg *policy.Config, targets []heal.Target) []RootCoverage {
	type key struct{ rule, root string }
	count := map[key]int{}
	for _, t := range targets {
		if t.Temp || t.Missing || t.Skip != "" || t.Rule == nil {
			continue
		}
		for _, root := range t.Rule.Paths {
			if pathx.Within(root, t.Path) {
				count[key{t.Rule.Name, root}]++
			}
		}
	}
	var out []RootCoverage
	for _, r := range cfg.Rules {
		for _, p := range r.Paths {
			c := RootCoverage{Rule: r.Name, Path: p, Patterns: r.Match, Files: count[key{r.Name, p}]}
			if err := resolve.RootRefused(p); err != nil {
				c.Missing, c.Err, c.Files = true, err.Error(), 0
			} else if _, err := os.Stat(p); err != nil {
				c.Missing = true
				if !os.IsNotExist(err) {
					c.Err = err.Error()
				}
			} else if c.Files == 0 {
				c.ShadowedBy = cfg.ShadowedBy(r.Name, p)
			}
			out = append(out, c)
		}
	}
	return out
}
