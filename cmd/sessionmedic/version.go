package main

import (
	"flag"
	"fmt"
	"io"
	"regexp"
	"runtime"
	"runtime/debug"
)

// Set at link time by a release build (deploy/release/build.sh):
//
//	go build -ldflags "-X main.version=1.2.0 -X main.revision=<commit>[-dirty]" ./cmd/sessionmedic
//
// Both are empty in any other build, which then reports what the Go toolchain recorded.
var (
	// version is the release's version.
	version string
	// revision is the commit the release was built from. The script passes it because the go
	// command cannot stamp one everywhere: it finds no repository in a linked git worktree
	// (golang/go#58218), and -buildvcs=false turns stamping off.
	revision string
)

// buildInfo is what `sessionmedic version` reports.
type buildInfo struct {
	Version   string // the -X version, else the module's version, else "dev"
	Revision  string // the VCS revision with "-dirty" for a modified tree, else ""
	GoVersion string // the toolchain that built the binary
}

// pseudoVersion matches a Go pseudo-version (golang.org/x/mod/module's pattern), with the
// "+dirty" the go command appends for a modified tree.
var pseudoVersion = regexp.MustCompile(`^v[0-9]+\.(0\.0-|\d+\.\d+-([^+]*\.)?0\.)\d{14}-[A-Za-z0-9]+(\+[0-9A-Za-z-]+)?$`)

// describeBuild works out the version from the link-time values and the build info the go
// command embeds (nil when there is none). The module's version there is "(devel)", or what
// the go command derived: the version asked for (`go install …@v1.2.0`), a tag at the
// checked-out commit, or a pseudo-version made up from the commit. A pseudo-version of a
// build in a checkout says no more than the revision printed beside it: that build is "dev".
func describeBuild(ldVersion, ldRevision string, bi *debug.BuildInfo) buildInfo {
	b := buildInfo{Version: ldVersion, Revision: ldRevision, GoVersion: runtime.Version()}
	if bi == nil {
		bi = &debug.BuildInfo{}
	}
	vcsRevision, modified := "", false
	for _, s := range bi.Settings {
		switch s.Key {
		case "vcs.revision":
			vcsRevision = s.Value
		case "vcs.modified":
			modified = s.Value == "true"
		}
	}
	if b.Version == "" {
		switch v := bi.Main.Version; {
		case v == "", v == "(devel)":
		case vcsRevision != "" && pseudoVersion.MatchString(v):
		default:
			b.Version = v
		}
	}
	if b.Version == "" {
		b.Version = "dev"
	}
	if b.Revision == "" && vcsRevision != "" {
		b.Revision = vcsRevision
		if modified {
			b.Revision += "-dirty"
		}
	}
	if bi.GoVersion != "" {
		b.GoVersion = bi.GoVersion
	}
	return b
}

func currentBuild() buildInfo {
	bi, _ := debug.ReadBuildInfo()
	return describeBuild(version, revision, bi)
}

// buildVersion is the version alone, as the daemon reports it in its log and metrics.
func buildVersion() string { return currentBuild().Version }

// String is the `sessionmedic version` line, e.g.
//
//	sessionmedic 1.2.0 (revision 0123abcd…, go1.26.8, linux/amd64)
func (b buildInfo) String() string {
	rev := b.Revision
	if rev == "" {
		rev = "unknown"
	}
	return fmt.Sprintf("sessionmedic %s (revision %s, %s, %s/%s)", b.Version, rev, b.GoVersion, runtime.GOOS, runtime.GOARCH)
}

// cmdVersion is `version`: it takes no flag and no argument, and -h prints its usage as
// every command's does.
func cmdVersion(args []string, stdout io.Writer) (int, error) {
	fs := flag.NewFlagSet("version", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	pos, err := parseInterleaved(fs, args)
	if err != nil {
		return 0, err
	}
	if len(pos) > 0 {
		return 0, usageError{"version takes no arguments"}
	}
	fmt.Fprintln(stdout, currentBuild())
	return exitOK, nil
}
