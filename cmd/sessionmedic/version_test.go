package main

import (
	"errors"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"runtime/debug"
	"strings"
	"testing"
)

func TestDescribeBuild(t *testing.T) {
	vcs := func(rev, modified string) []debug.BuildSetting {
		return []debug.BuildSetting{{Key: "vcs", Value: "git"}, {Key: "vcs.revision", Value: rev}, {Key: "vcs.modified", Value: modified}}
	}
	cases := []struct {
		name          string
		ldVer, ldRev  string
		bi            *debug.BuildInfo
		version, rev  string
		goVersionFrom string
	}{
		{"no build info", "", "", nil, "dev", "", ""},
		{"devel, no vcs", "", "", &debug.BuildInfo{GoVersion: "go1.26.8", Main: debug.Module{Version: "(devel)"}}, "dev", "", "go1.26.8"},
		{"devel, clean tree", "", "", &debug.BuildInfo{Main: debug.Module{Version: "(devel)"}, Settings: vcs("abc123", "false")}, "dev", "abc123", ""},
		{"devel, modified tree", "", "", &debug.BuildInfo{Main: debug.Module{Version: "(devel)"}, Settings: vcs("abc123", "true")}, "dev", "abc123-dirty", ""},
		{"go install at a version", "", "", &debug.BuildInfo{Main: debug.Module{Version: "v1.4.0"}}, "v1.4.0", "", ""},
		{"checkout: pseudo-version", "", "", &debug.BuildInfo{Main: debug.Module{Version: "v0.0.0-20261123014000-aee508c43761"}, Settings: vcs("aee508c43761", "false")},
			"dev", "aee508c43761", ""},
		{"checkout: pseudo-version, modified", "", "", &debug.BuildInfo{Main: debug.Module{Version: "v0.0.0-20261123014000-aee508c43761+dirty"}, Settings: vcs("aee508c43761", "true")},
			"dev", "aee508c43761-dirty", ""},
		{"checkout: pseudo-version after a tag", "", "", &debug.BuildInfo{Main: debug.Module{Version: "v1.2.4-0.20261123014000-aee508c43761"}, Settings: vcs("aee508c43761", "false")},
			"dev", "aee508c43761", ""},
		{"checkout: pseudo-version after a pre-release tag", "", "", &debug.BuildInfo{Main: debug.Module{Version: "v1.2.4-rc.1.0.20261123014000-aee508c43761"}, Settings: vcs("aee508c43761", "false")},
			"dev", "aee508c43761", ""},
		{"checkout: at a tag", "", "", &debug.BuildInfo{Main: debug.Module{Version: "v1.2.3"}, Settings: vcs("aee508c43761", "false")}, "v1.2.3", "aee508c43761", ""},
		{"go install at a commit: no revision but the pseudo-version", "", "", &debug.BuildInfo{Main: debug.Module{Version: "v0.0.0-20261123014000-aee508c43761"}},
			"v0.0.0-20261123014000-aee508c43761", "", ""},
		{"release: -X wins", "1.2.0", "", &debug.BuildInfo{Main: debug.Module{Version: "v1.4.0"}, Settings: vcs("abc123", "false")}, "1.2.0", "abc123", ""},
		{"release: -X revision wins", "1.2.0", "def456-dirty", &debug.BuildInfo{Main: debug.Module{Version: "(devel)"}, Settings: vcs("abc123", "false")}, "1.2.0", "def456-dirty", ""},
	}
	for _, c := range cases {
		b := describeBuild(c.ldVer, c.ldRev, c.bi)
		wantGo := c.goVersionFrom
		if wantGo == "" {
			wantGo = runtime.Version()
		}
		if b.Version != c.version || b.Revision != c.rev || b.GoVersion != wantGo {
			t.Errorf("%s: got %+v, want version %q revision %q go %q", c.name, b, c.version, c.rev, wantGo)
		}
	}
	line := buildInfo{Version: "1.2.0", GoVersion: "go1.26.8"}.String()
	if want := "sessionmedic 1.2.0 (revision unknown, go1.26.8, " + runtime.GOOS + "/" + runtime.GOARCH + ")"; line != want {
		t.Errorf("String() = %q, want %q", line, want)
	}
}

// TestVersionOfBuiltBinaries builds the binary as a release does (-ldflags -X) and as a plain
// `go build` in a git checkout does, and runs `sessionmedic version` on each.
func TestVersionOfBuiltBinaries(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the binary four times")
	}
	dir := t.TempDir()
	goBuild := func(srcDir, out string, args ...string) {
		t.Helper()
		cmd := exec.Command("go", append(append([]string{"build", "-trimpath", "-o", out}, args...), "./cmd/sessionmedic")...)
		cmd.Dir = srcDir
		if b, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("go build %v: %v\n%s", args, err, b)
		}
	}
	versionOf := func(bin string) string {
		t.Helper()
		b, err := exec.Command(bin, "version").CombinedOutput()
		if err != nil {
			t.Fatalf("%s version: %v\n%s", bin, err, b)
		}
		t.Logf("%s version: %s", filepath.Base(bin), b)
		return strings.TrimSpace(string(b))
	}
	goVersion := regexp.QuoteMeta(runtime.Version() + ", " + runtime.GOOS + "/" + runtime.GOARCH)

	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	rel := filepath.Join(dir, "release")
	goBuild(root, rel, "-buildvcs=false", "-ldflags=-s -w -X main.version=9.8.7-test -X main.revision=0123abcd")
	if got, want := versionOf(rel), "sessionmedic 9.8.7-test (revision 0123abcd, "+runtime.Version()+", "+runtime.GOOS+"/"+runtime.GOARCH+")"; got != want {
		t.Errorf("release build: %q, want %q", got, want)
	}

	// Plain builds in a git checkout: the revision the go command stamps, and "dev" unless the
	// commit is tagged. This tree may be a linked worktree, where the go command finds no
	// repository (golang/go#58218), so the builds run in a new repository holding a copy of
	// the working tree's files, in one commit.
	files, err := exec.Command("git", "-C", root, "ls-files", "-z", "--cached", "--others", "--exclude-standard").Output()
	if err != nil {
		t.Skipf("not a git checkout (or no git): %v", err)
	}
	repo := filepath.Join(dir, "repo")
	for _, name := range strings.Split(strings.TrimRight(string(files), "\x00"), "\x00") {
		b, err := os.ReadFile(filepath.Join(root, name))
		if errors.Is(err, fs.ErrNotExist) {
			continue // deleted in the working tree
		}
		if err != nil {
			t.Fatal(err)
		}
		os.MkdirAll(filepath.Dir(filepath.Join(repo, name)), 0o755)
		if err := os.WriteFile(filepath.Join(repo, name), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	git := func(args ...string) string {
		t.Helper()
		cmd := exec.Command("git", append([]string{"-C", repo, "-c", "user.name=test", "-c", "user.email=test@example.invalid",
			"-c", "commit.gpgsign=false", "-c", "tag.gpgsign=false"}, args...)...)
		b, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("git %v: %v\n%s", args, err, b)
		}
		return strings.TrimSpace(string(b))
	}
	git("init", "-q")
	git("add", "-A")
	git("commit", "-q", "-m", "snapshot")
	rev := git("rev-parse", "HEAD")
	tail := regexp.MustCompile(", " + goVersion + `\)$`)
	plain := filepath.Join(dir, "plain")
	// -buildvcs=true is the default, stated because GOFLAGS may turn it off.
	goBuild(repo, plain, "-buildvcs=true")
	if got, want := versionOf(plain), "sessionmedic dev (revision "+rev; !strings.HasPrefix(got, want+",") || !tail.MatchString(got) {
		t.Errorf("plain build in a clean checkout: %q, want %q, %s…", got, want, runtime.Version())
	}

	// A modified tracked file makes the tree dirty.
	readme := filepath.Join(repo, "README.md")
	orig, err := os.ReadFile(readme)
	if err != nil {
		t.Fatal(err)
	}
	os.WriteFile(readme, append(orig, "\nmodified\n"...), 0o644)
	goBuild(repo, plain, "-buildvcs=true")
	if got, want := versionOf(plain), "sessionmedic dev (revision "+rev+"-dirty,"; !strings.HasPrefix(got, want) {
		t.Errorf("plain build in a modified checkout: %q, want %q…", got, want)
	}

	// At a tagged commit the go command takes the tag for the module's version.
	os.WriteFile(readme, orig, 0o644)
	git("tag", "v1.2.3")
	goBuild(repo, plain, "-buildvcs=true")
	if got, want := versionOf(plain), "sessionmedic v1.2.3 (revision "+rev+","; !strings.HasPrefix(got, want) {
		t.Errorf("plain build at a tag: %q, want %q…", got, want)
	}
}
