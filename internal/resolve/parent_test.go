package resolve

import (
	"math/rand"
	"path/filepath"
	"strings"
	"testing"
)

// TestParentOfIsDir: on clean absolute paths (what confinedRootOf walks up), parentOf is
// filepath.Dir, every step up to "/".
func TestParentOfIsDir(t *testing.T) {
	rng := rand.New(rand.NewSource(7))
	parts := []string{"a", "b", ".x", "..y", "sess ion", "é", "a.b", "-", "…"}
	paths := []string{"/", "/a", "/a/b", "/.", "/.."}
	for range 2000 {
		var b strings.Builder
		for range rng.Intn(6) {
			b.WriteString("/")
			b.WriteString(parts[rng.Intn(len(parts))])
		}
		paths = append(paths, filepath.Clean("/"+b.String()))
	}
	for _, p := range paths {
		p = filepath.Clean(p)
		for steps := 0; ; steps++ {
			if got, want := parentOf(p), filepath.Dir(p); got != want {
				t.Fatalf("parentOf(%q) = %q, filepath.Dir gives %q", p, got, want)
			}
			if p == "/" {
				break
			}
			if steps > 20 {
				t.Fatalf("no end walking up from %q", p)
			}
			p = parentOf(p)
		}
	}
}
