package pathx

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/sessionmedic/sessionmedic/internal/layering"
)

func TestRel(t *testing.T) {
	for _, tc := range []struct {
		root, p, rel string
		ok           bool
	}{
		{"/a/b", "/a/b/c.json", "c.json", true},
		{"/a/b", "/a/b/x/y/c.json", "x/y/c.json", true},
		{"/a/b", "/a/b", ".", true},  // the root itself
		{"/a/b", "/a/bc", "", false}, // a sibling sharing a prefix
		{"/a/b", "/a/bc/d.json", "", false},
		{"/a/bc", "/a/b", "", false},
		{"/a/b", "/a", "", false}, // the parent
		{"/a/b", "/", "", false},
		{"/a/b", "/a/b/..", "", false}, // .. climbing out
		{"/a/b", "/a/b/../c/d", "", false},
		{"/a/b", "/a/b/../b/c", "c", true}, // .. coming back in
		{"/a/b/c/..", "/a/b/d", "d", true}, // .. in the root
		{"/a/b/", "/a/b/c", "c", true},     // trailing slash
		{"/a/b", "/a/b/", ".", true},
		{"/a/b/", "/a/bc", "", false},
		{"/a//b", "/a/b/c", "c", true}, // non-clean inputs
		{"/a/b", "/a//b//c", "c", true},
		{"/a/./b", "/a/b/./c", "c", true},
		{"/", "/", ".", true}, // / as root
		{"/", "/x/y", "x/y", true},
		{"/", "/..", ".", true},  // cleans to /
		{"/", "x", "", false},    // relative below absolute
		{"a", "/a/b", "", false}, // absolute below relative
		{"a", "a/b", "b", true},  // relative paths
		{"a", "ab", "", false},
		{"a", "a/../b", "", false},
		{".", "x/y", "x/y", true},
		{".", ".", ".", true},
		{".", "..", "", false},
		{".", "../x", "", false},
		{".", "..x", "..x", true}, // a name that starts with ..
		{"", "x", "x", true},      // "" cleans to .
		{"..", "../x", "x", true},
		{"..", "../..", "", false},
		{"..", "../../x", "", false},
		{"..", "x", "", false},
		{"../a", "../a/b", "b", true},
		{"/a/b", "/a/b/..c/d", "..c/d", true}, // names that start with ..
		{"/a/b", "/a/b/c..", "c..", true},
		{"/a/b", "/a/b/.hidden", ".hidden", true},
	} {
		rel, ok := Rel(tc.root, tc.p)
		if rel != tc.rel || ok != tc.ok {
			t.Errorf("Rel(%q, %q) = %q, %v; want %q, %v", tc.root, tc.p, rel, ok, tc.rel, tc.ok)
		}
		if Within(tc.root, tc.p) != tc.ok {
			t.Errorf("Within(%q, %q) = %v, want %v", tc.root, tc.p, !tc.ok, tc.ok)
		}
	}
}

// paths is every pair of which the tests below ask both questions.
var paths = []string{
	"", ".", "..", "../..", "./", "a", "a/", "ab", "a/b", "a/bc", "a/b/c", "a/../b", "../a",
	"../a/b", "../../a", "..a", "a/..b", "a/.",
	"/", "//", "/.", "/..", "/a", "/a/", "/ab", "/a/b", "/a/b/", "/a/bc", "/a//b", "/a/./b",
	"/a/b/c", "/a/b/..", "/a/b/../c", "/a/b/../b/c", "/a/b/..c", "/b", "/b/a",
}

// TestRelIsFilepathRel pins the definition: p is within root when filepath.Rel gives a path
// that does not climb out, and rel is that path. This is the check daemon, heal and
// heal/lock each wrote inline before.
func TestRelIsFilepathRel(t *testing.T) {
	for _, root := range paths {
		for _, p := range paths {
			want, err := filepath.Rel(root, p)
			wantOK := err == nil && want != ".." && !strings.HasPrefix(want, "../")
			if !wantOK {
				want = ""
			}
			if rel, ok := Rel(root, p); rel != want || ok != wantOK {
				t.Errorf("Rel(%q, %q) = %q, %v; filepath.Rel gives %q, %v", root, p, rel, ok, want, wantOK)
			}
		}
	}
}

// TestWithinIsPrefix: for absolute paths, Within is the string test that policy, heal's
// coverage and watcher each wrote before: the cleaned p is the cleaned root, or starts with
// it and a separator. (They differed from filepath.Rel only for relative roots.)
func TestWithinIsPrefix(t *testing.T) {
	for _, root := range paths {
		for _, p := range paths {
			if !filepath.IsAbs(root) || !filepath.IsAbs(p) {
				continue
			}
			r, c := filepath.Clean(root), filepath.Clean(p)
			want := c == r || strings.HasPrefix(c, strings.TrimSuffix(r, "/")+"/")
			if got := Within(root, p); got != want {
				t.Errorf("Within(%q, %q) = %v, want %v", root, p, got, want)
			}
		}
	}
}

func TestRelAllocs(t *testing.T) {
	n := testing.AllocsPerRun(100, func() {
		Rel("/srv/sessions", "/srv/sessions/a/b.jsonl")
		Rel("/srv/sessions", "/srv/other/b.jsonl")
		Rel("/srv/sessions", "relative")
	})
	if n != 0 {
		t.Errorf("Rel on clean paths allocates %v times, want 0", n)
	}
}

// TestImports keeps the layering of DESIGN.md §2: pathx is a leaf: watcher and policy import
// it, so it imports no package of ours.
func TestImports(t *testing.T) {
	layering.Check(t, ".", false, func(string) bool { return false })
}
