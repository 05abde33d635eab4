package lock

import (
	"context"
	"path/filepath"
	"strings"
)

// Gemini CLI (gemini-cli.md, "Lock protocol") takes no lock, keeps no descriptor open between
// its appends and writes no pid file: the only sign that a project's chat files are live is a
// running Gemini process working in the project's root. The root is the content of the
// project's tmp/<slug>/.project_root, which the caller reads.

// GeminiLive reports whether a running process looks like Gemini CLI (see [GeminiArgv]) and
// works in projectRoot (its current directory is that root). Where the system offers no view
// of other processes' arguments and directories (anything but Linux) it is always false.
func GeminiLive(projectRoot string) bool {
	if projectRoot == "" || !filepath.IsAbs(projectRoot) {
		return false
	}
	return geminiLive(filepath.Clean(projectRoot))
}

// Gemini waits, polling within o.Wait, until no Gemini process works in projectRoot: nil
// once none does, an error matching [ErrBusy] when one still does at the deadline, ctx.Err()
// when the context ends first. Nothing is held: an append that starts right after the last
// look remains possible, which is why the caller also waits for the file to be quiet.
func Gemini(ctx context.Context, projectRoot string, o Options) error {
	_, err := acquire(ctx, o, projectRoot, func() (Held, error) {
		if GeminiLive(projectRoot) {
			return nil, busy(projectRoot, "a Gemini CLI process works in this project")
		}
		return nothingHeld{}, nil
	})
	return err
}

// GeminiArgv reports whether a command line is Gemini CLI's: argv[0]'s base name is
// "gemini", or an argument names the npm package (@google/gemini-cli) or a path ending in
// /gemini (node running the installed entry point; the app re-executes itself, so a parent
// and a child both match).
func GeminiArgv(argv []string) bool {
	if len(argv) == 0 {
		return false
	}
	if filepath.Base(argv[0]) == "gemini" {
		return true
	}
	for _, a := range argv {
		if strings.Contains(a, "@google/gemini-cli") || strings.HasSuffix(a, "/gemini") {
			return true
		}
	}
	return false
}
