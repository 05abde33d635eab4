package lock

import (
	"context"
	"path/filepath"
	"strings"
)

// pi coding agent (pi.md, "Lock protocol and liveness") takes no lock and writes no pid file:
// it opens a session file only for each append (appendFileSync) and for a rewrite in place.
// A session is taken to be live while a pi process has the file open, names the file or its
// id in its arguments, or works in the session's directory (its header's cwd). pi sets its
// process title to "pi", which overwrites its command line: its arguments are gone from
// /proc/<pid>/cmdline, so the directory and the open file are what tell in practice; the
// arguments still tell for a process that kept them (a wrapper, a fork under another title).

// AppSession is what tells the processes that have an app's session apart from the others
// (pi's, Qwen Code's: apps that take no lock).
type AppSession struct {
	Path string // the session file, absolute
	ID   string // the session id (the uuid of the file name); "" when unknown
	Cwd  string // the header's cwd, absolute; "" when unknown
}

// PiLive reports whether a running pi process (see [PiArgv]) has the session: it holds the
// file open, names the file or its id in its arguments, or its current directory is the
// session's cwd. why names the process and the reason. Where the system offers no view of
// other processes (anything but Linux) it is always false.
func PiLive(s AppSession) (live bool, why string) {
	s, ok := s.clean()
	if !ok {
		return false, ""
	}
	return appLive(s, "pi", PiArgv)
}

// clean is s with its paths cleaned and a relative cwd dropped; ok is false when its path
// is not absolute.
func (s AppSession) clean() (AppSession, bool) {
	if s.Path == "" || !filepath.IsAbs(s.Path) {
		return s, false
	}
	s.Path = filepath.Clean(s.Path)
	if s.Cwd != "" {
		if !filepath.IsAbs(s.Cwd) {
			s.Cwd = ""
		} else {
			s.Cwd = filepath.Clean(s.Cwd)
		}
	}
	return s, true
}

// Pi waits, polling within o.Wait, until no pi process has the session (see [PiLive]): nil
// once none has, an error matching [ErrBusy] when one still has at the deadline, ctx.Err()
// when the context ends first. Nothing is held: pi's next append may start right after the
// last look, which is why the caller also waits for the file to be quiet.
func Pi(ctx context.Context, s AppSession, o Options) error {
	_, err := acquire(ctx, o, s.Path, func() (Held, error) {
		if live, why := PiLive(s); live {
			return nil, busy(s.Path, why)
		}
		return nothingHeld{}, nil
	})
	return err
}

// PiArgv reports whether a command line is pi's: argv[0]'s base name is "pi" (the process
// title pi sets, or the installed bin), a runtime (node, bun) runs a script whose base name
// is "pi", or an argument is a path into the npm package (…/pi-coding-agent/…).
func PiArgv(argv []string) bool {
	if len(argv) == 0 {
		return false
	}
	if filepath.Base(argv[0]) == "pi" {
		return true
	}
	for _, a := range argv {
		if strings.Contains(a, "/pi-coding-agent/") {
			return true
		}
	}
	if rt := filepath.Base(argv[0]); !strings.HasPrefix(rt, "node") && rt != "bun" {
		return false
	}
	for _, a := range argv[1:] {
		if !strings.HasPrefix(a, "-") {
			return filepath.Base(a) == "pi" // the runtime's script: node /usr/local/bin/pi
		}
	}
	return false
}

// PiNamesSession reports whether an argument of a pi command line (argv[0] apart) names the
// session: its path (as given, or relative to the process's directory cwd), its file name,
// or its id, whole or as the partial id pi's --session resolves (at least 8 characters of
// it). A "--flag=value" argument is read as its value.
func PiNamesSession(argv []string, cwd string, s AppSession) bool {
	base := filepath.Base(s.Path)
	for _, a := range argv[min(1, len(argv)):] {
		v := a
		if i := strings.IndexByte(a, '='); strings.HasPrefix(a, "-") && i > 0 {
			v = a[i+1:]
		}
		if v == "" || strings.HasPrefix(v, "-") {
			continue
		}
		p := v
		if !filepath.IsAbs(p) && cwd != "" {
			p = filepath.Join(cwd, p)
		}
		switch {
		case filepath.Clean(p) == s.Path, filepath.Base(v) == base:
			return true
		case s.ID != "" && (strings.Contains(v, s.ID) || len(v) >= 8 && strings.HasPrefix(s.ID, v)):
			return true
		}
	}
	return false
}

// PiWorksIn reports whether a process whose current directory is dir (as /proc reads it)
// works in the session's cwd, or in the directory that cwd resolves to (resolved, "" when
// the same).
func PiWorksIn(dir string, s AppSession, resolved string) bool {
	if s.Cwd == "" || dir == "" {
		return false
	}
	return dir == s.Cwd || (resolved != "" && dir == resolved)
}
