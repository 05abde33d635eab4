package daemon

import (
	"os"
	"path/filepath"
	"slices"
	"testing"
)

// TestResolvePolicyPath: resolve names every path a policy path goes through — each link, in
// the file's name or in a directory on the way, relative or absolute — then the file it ends
// at, or the first component that is missing; a loop of links ends.
func TestResolvePolicyPath(t *testing.T) {
	root, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	p := func(s string) string { return filepath.Join(root, s) }
	for _, d := range []string{"a", "b", "c", "k/..2026_x"} {
		os.MkdirAll(p(d), 0o755)
	}
	os.WriteFile(p("c/policy.yaml"), nil, 0o644)
	os.WriteFile(p("k/..2026_x/policy.yaml"), nil, 0o644)
	os.Symlink(p("b/current.yaml"), p("a/chain.yaml"))
	os.Symlink("../c/policy.yaml", p("b/current.yaml"))
	os.Symlink("..2026_x", p("k/..data"))
	os.Symlink("..data/policy.yaml", p("k/policy.yaml"))
	os.Symlink(p("c"), p("a/dir"))
	os.Symlink("missing/policy.yaml", p("a/dangling.yaml"))
	os.Symlink("loop2", p("a/loop1"))
	os.Symlink("loop1", p("a/loop2"))
	for _, c := range []struct {
		path string
		want []string
	}{
		{p("c/policy.yaml"), []string{p("c/policy.yaml"), p("c/policy.yaml")}},
		{p("a/chain.yaml"), []string{p("a/chain.yaml"), p("a/chain.yaml"), p("b/current.yaml"), p("c/policy.yaml")}},
		{p("k/policy.yaml"), []string{p("k/policy.yaml"), p("k/policy.yaml"), p("k/..data"), p("k/..2026_x/policy.yaml")}},
		{p("a/dir/policy.yaml"), []string{p("a/dir/policy.yaml"), p("a/dir"), p("c/policy.yaml")}},
		{p("a/dangling.yaml"), []string{p("a/dangling.yaml"), p("a/dangling.yaml"), p("a/missing")}},
		{p("a/absent.yaml"), []string{p("a/absent.yaml"), p("a/absent.yaml")}},
	} {
		if got := resolve(c.path); !slices.Equal(got, c.want) {
			t.Errorf("resolve(%s):\n got %q\nwant %q", c.path, got, c.want)
		}
	}
	if got := resolve(p("a/loop1")); len(got) > maxLinks+2 {
		t.Errorf("a loop of links: %d paths", len(got))
	}
}
