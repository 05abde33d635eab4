package policy

import (
	"path"
	"strings"

	"github.com/sessionmedic/sessionmedic/internal/pathx"
)

// A file belongs to the first rule that covers it (see [Config.RuleFor]), so an earlier rule
// can take every file a later one matches: the later rule then guards nothing there, and a
// walk only finds it "no file" (rule.no_files). ShadowedBy names the earlier rule when that
// is certain from the rules alone; where it is not (patterns that only overlap, several
// earlier rules that take a share each, a root read through a symlink), it says nothing.

// ShadowedBy returns the name of an earlier rule that takes every file the rule named rule
// could cover under root (one of its paths), or "" when no earlier rule certainly does.
func (c *Config) ShadowedBy(rule, root string) string {
	for j := range c.Rules {
		if c.Rules[j].Name == rule {
			if i := c.shadowing(j, root); i >= 0 {
				return c.Rules[i].Name
			}
			return ""
		}
	}
	return ""
}

// shadowing returns the index of the first rule before rule j that takes every file rule j
// could cover under root, or -1.
func (c *Config) shadowing(j int, root string) int {
	for i := range j {
		if takesAll(&c.Rules[i], &c.Rules[j], root) {
			return i
		}
	}
	return -1
}

// takesAll reports whether rule a certainly covers every file rule b covers under b's path
// broot: one of a's paths is broot or above it; each of b's match patterns is the same as
// one of a's under the same path, or every name it matches is matched by a base-name
// pattern of a; none of a's exclude patterns can exclude a file of b's; and a calls no file
// a temp that b does not.
func takesAll(a, b *Rule, broot string) bool {
	if len(b.Match) == 0 {
		return false
	}
	for _, t := range a.Temps {
		if !contains(b.Temps, t) {
			return false
		}
	}
	for _, aroot := range a.Paths {
		below, ok := pathx.Rel(aroot, broot)
		if !ok {
			continue
		}
		same := below == "."
		if coversPatterns(a, b, same) && excludesNone(a, b, same, below) {
			return true
		}
	}
	return false
}

// coversPatterns: every file one of b's match patterns matches, one of a's matches too.
func coversPatterns(a, b *Rule, same bool) bool {
	for _, q := range b.Match {
		covered := false
		for _, p := range a.Match {
			if (same && p == q) || (!strings.Contains(p, "/") && baseCovers(p, lastSegment(q))) {
				covered = true
				break
			}
		}
		if !covered {
			return false
		}
	}
	return true
}

// excludesNone: none of a's exclude patterns excludes a file of b under b's path, which is
// below (slash-separated) under a's path.
func excludesNone(a, b *Rule, same bool, below string) bool {
	for _, x := range a.Exclude {
		switch {
		case contains(b.Exclude, x) && (same || !strings.Contains(x, "/")):
			// b excludes the same files itself
		case !same && strings.Contains(x, "/") && literal(strings.Split(x, "/")[0]) && strings.Split(x, "/")[0] != strings.Split(below, "/")[0]:
			// anchored under another directory of a's path than the one b's is in
		default:
			return false
		}
	}
	return true
}

// lastSegment is what the base name of a file a pattern matches must match ("*" for "**").
func lastSegment(pattern string) string {
	seg := pattern[strings.LastIndex(pattern, "/")+1:]
	if seg == "**" {
		return "*"
	}
	return seg
}

// baseCovers reports whether the base-name pattern p certainly matches every name the
// base-name pattern q matches.
func baseCovers(p, q string) bool {
	switch {
	case p == q || p == "*":
		return true
	case literal(q):
		ok, _ := path.Match(p, q)
		return ok
	case strings.HasPrefix(p, "*") && literal(p[1:]):
		// "*.jsonl" takes any name that ends in ".jsonl": q's own literal end says so.
		return strings.HasSuffix(q, p[1:]) && literal(q[len(q)-len(p)+1:])
	case strings.HasSuffix(p, "*") && literal(p[:len(p)-1]):
		return strings.HasPrefix(q, p[:len(p)-1]) && literal(q[:len(p)-1])
	}
	return false
}

// literal reports whether a pattern segment has no special character: it matches itself only.
func literal(s string) bool { return !strings.ContainsAny(s, `*?[]\`) }
