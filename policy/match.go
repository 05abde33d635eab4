package policy

import (
	"errors"
	"fmt"
	"path"
	"path/filepath"
	"slices"
	"strings"

	"github.com/sessionmedic/sessionmedic/internal/pathx"
)

// Glob patterns (Match, Exclude) are slash-separated and match the path of a file relative
// to a rule's path (its root):
//
//   - '*' matches any run of characters, '?' one character, and '[...]' one character of a
//     class ('[^...]' negated, '\' escapes); none of them matches '/'.
//   - '**' as a whole segment matches zero or more segments.
//   - A pattern without '/' matches the base name at any depth, like gitignore.
//   - Any other pattern is anchored at the root. But a Match pattern that starts with '**/'
//     may also match the root's own directory names, so "**/sessions/*.json" covers a rule
//     whose path is a sessions directory itself. Exclude patterns only see the part below
//     the root, so a directory above it never excludes anything.
//   - Those names are read through the root's location (see [rootLocations]): a root that is
//     a symlink also stands for the directory it points to (followed once, at the root, so
//     "/srv/app -> /data/app/agents/main/sessions" is read as that sessions directory), and
//     a root whose own name has "sessions" as a word ("sessions_legacy_layout",
//     "bot-sessions") also stands for a directory named "sessions". Only the root is read
//     this way: below it, every name counts as it is.
//
// A leading '.' is matched like any other character. Temps are base-name patterns.

// checkGlob validates a Match or Exclude pattern.
func checkGlob(p string) (string, error) {
	switch {
	case p == "":
		return "", errors.New("pattern must not be empty")
	case strings.HasPrefix(p, "/"):
		return "", fmt.Errorf("%q: patterns are relative to the rule's paths (no leading /)", p)
	case strings.HasSuffix(p, "/"):
		return "", fmt.Errorf("%q: patterns match files (no trailing /; use dir/** for a directory)", p)
	}
	for _, seg := range strings.Split(p, "/") {
		switch {
		case seg == "":
			return "", fmt.Errorf("%q has an empty segment", p)
		case seg == "." || seg == "..":
			return "", fmt.Errorf("%q: segments . and .. are not allowed", p)
		case seg != "**" && strings.Contains(seg, "**"):
			return "", fmt.Errorf("%q: ** must be a whole segment", p)
		}
		if _, err := path.Match(seg, ""); err != nil {
			return "", fmt.Errorf("%q is not a valid pattern", p)
		}
	}
	return p, nil
}

// checkBaseGlob validates a Temps pattern, which matches base names.
func checkBaseGlob(p string) (string, error) {
	if strings.Contains(p, "/") {
		return "", fmt.Errorf("%q: temps match base names (no /)", p)
	}
	return checkGlob(p)
}

// splitPath returns the segments of a slash-separated path.
func splitPath(p string) []string { return strings.Split(strings.Trim(p, "/"), "/") }

// matchPattern matches one pattern against a file's segments below the root (rel) and, for
// a leading "**/", against its absolute segments (abs, nil to stay below the root).
func matchPattern(pattern string, rel, abs []string) bool {
	if !strings.Contains(pattern, "/") {
		ok, _ := path.Match(pattern, rel[len(rel)-1])
		return ok
	}
	segs := strings.Split(pattern, "/")
	if abs != nil && segs[0] == "**" {
		return matchSegments(segs, abs)
	}
	return matchSegments(segs, rel)
}

func matchSegments(pat, name []string) bool {
	for len(pat) > 0 {
		if pat[0] == "**" {
			for len(pat) > 0 && pat[0] == "**" {
				pat = pat[1:]
			}
			if len(pat) == 0 {
				return true
			}
			for i := range len(name) + 1 {
				if matchSegments(pat, name[i:]) {
					return true
				}
			}
			return false
		}
		if len(name) == 0 {
			return false
		}
		if ok, _ := path.Match(pat[0], name[0]); !ok {
			return false
		}
		pat, name = pat[1:], name[1:]
	}
	return len(name) == 0
}

// Covers reports whether the rule covers the file p under root (one of its paths): p is
// root or below it, its path matches one of Match and none of Exclude, and its base name is
// not a temp file (the app's Temps or [OwnTempPattern]).
func (r *Rule) Covers(root, p string) bool {
	rel, ok := pathx.Rel(root, p)
	if !ok || r.IsTemp(filepath.Base(p)) {
		return false
	}
	if rel == "." {
		rel = filepath.Base(filepath.Clean(p)) // a rule path naming one file: patterns see its name
	}
	relSegs := splitPath(rel)
	if !r.matches(root, p, relSegs) {
		return false
	}
	for _, x := range r.Exclude {
		if matchPattern(x, relSegs, nil) {
			return false
		}
	}
	return true
}

// matches reports whether one of the rule's Match patterns matches the file p, rel being
// its segments below root. A leading "**/" pattern is tried against p's own absolute path
// first, then against each other location of the root (see [rootLocations]).
func (r *Rule) matches(root, p string, rel []string) bool {
	abs := splitPath(filepath.ToSlash(filepath.Clean(p)))
	reaching := false
	for _, m := range r.Match {
		if matchPattern(m, rel, abs) {
			return true
		}
		reaching = reaching || strings.HasPrefix(m, "**/")
	}
	if !reaching || filepath.Clean(root) == filepath.Clean(p) {
		return false
	}
	return rootLocations(root, func(loc []string) bool {
		full := slices.Concat(loc, rel)
		for _, m := range r.Match {
			if strings.HasPrefix(m, "**/") && matchPattern(m, rel, full) {
				return true
			}
		}
		return false
	})
}

// rootLocations calls try with each other segment list a rule root's own directory names
// are read as, besides its path as written, until try reports true: the same path with its
// last name read as "sessions" when that name has "sessions" as a word; then, when the root
// resolves through a symlink (itself or a directory on its way), the resolved path, read the
// same two ways. The resolution happens at the root only: names below it are never
// resolved, and the filesystem is not consulted when a name alone answers.
//
// A directory named like a sessions directory is taken at its word only when the rule names
// it: the same directory met below a rule's root (an app home, say) counts by its real name,
// so an app's home never starts matching a directory that only resembles a sessions one.
func rootLocations(root string, try func(loc []string) bool) bool {
	root = filepath.Clean(root)
	read := func(p string) bool {
		segs := splitPath(filepath.ToSlash(p))
		if len(segs) == 0 || segs[0] == "" {
			return false
		}
		if p != root && try(segs) {
			return true
		}
		last := segs[len(segs)-1]
		return last != "sessions" && namesSessions(last) && try(append(segs[:len(segs)-1:len(segs)-1], "sessions"))
	}
	if read(root) {
		return true
	}
	real, err := filepath.EvalSymlinks(root)
	return err == nil && real != root && filepath.IsAbs(real) && read(real)
}

// namesSessions reports whether a directory name has "sessions" as a word: delimited by the
// start or end of the name or by a character that is not a letter or a digit
// ("sessions_legacy_layout", "bot-sessions", "Sessions.old"; not "mysessions").
func namesSessions(name string) bool {
	lower := strings.ToLower(name)
	const w = "sessions"
	for i := 0; i+len(w) <= len(lower); i++ {
		if lower[i:i+len(w)] != w {
			continue
		}
		if (i == 0 || !isAlnum(lower[i-1])) && (i+len(w) == len(lower) || !isAlnum(lower[i+len(w)])) {
			return true
		}
	}
	return false
}

func isAlnum(c byte) bool { return c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c >= 0x80 }

// IsTemp reports whether a base name is a temp file of the app (Temps) or sessionmedic's
// own ([OwnTempPattern]). Temp files are never validated as sessions.
func (r *Rule) IsTemp(base string) bool {
	return r.IsAppTemp(base) || IsOwnTemp(base)
}

// IsAppTemp reports whether a base name matches the rule's Temps: a candidate for
// clean-temp.
func (r *Rule) IsAppTemp(base string) bool {
	for _, t := range r.Temps {
		if ok, _ := path.Match(t, base); ok {
			return true
		}
	}
	return false
}

// IsOwnTemp reports whether a base name is one of sessionmedic's own temp files.
func IsOwnTemp(base string) bool {
	ok, _ := path.Match(OwnTempPattern, base)
	return ok
}

// RuleFor returns the first rule, in policy order, that covers path p, and the rule path
// (root) under which it does. p should be absolute; it is cleaned.
func (c *Config) RuleFor(p string) (rule *Rule, root string, ok bool) {
	for i := range c.Rules {
		r := &c.Rules[i]
		for _, root := range r.Paths {
			if r.Covers(root, p) {
				return r, root, true
			}
		}
	}
	return nil, "", false
}

// TempRuleFor returns the first rule with a path containing p whose Temps match p's base
// name: the rule whose clean-temp strategy may move it.
func (c *Config) TempRuleFor(p string) (rule *Rule, root string, ok bool) {
	base := filepath.Base(p)
	for i := range c.Rules {
		r := &c.Rules[i]
		if !r.IsAppTemp(base) {
			continue
		}
		for _, root := range r.Paths {
			if pathx.Within(root, p) {
				return r, root, true
			}
		}
	}
	return nil, "", false
}

// Roots returns every rule path once, in policy order: the trees to watch.
func (c *Config) Roots() []string {
	var roots []string
	for _, r := range c.Rules {
		for _, p := range r.Paths {
			if !contains(roots, p) {
				roots = append(roots, p)
			}
		}
	}
	return roots
}
