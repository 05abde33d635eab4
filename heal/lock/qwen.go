package lock

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/sessionmedic/sessionmedic/internal/resolve"
)

// Qwen Code (qwen-code.md, "Lock protocol and liveness") takes no session lock: it opens a
// session file for each record it appends (append, fsync, close). A session is taken to be
// live while a Qwen process has the file open, names the session in its arguments, or works
// in the session's project root (the records' cwd), or while the project's scheduler lock
// (<runtime>/tmp/<sha256 of the project root>/scheduled_tasks.lock) names the session for a
// running pid.

// qwenSchedMax bounds how much of a scheduler lock is read (it is one small JSON object).
const qwenSchedMax = 4 << 10

// QwenSession is a Qwen Code session: the file, its id and project root (AppSession), and
// the runtime directory its projects/ is in ("" when the file is not under one).
type QwenSession struct {
	AppSession
	Runtime string
}

// QwenLive reports whether a running Qwen Code process has the session (see the package
// comment on Qwen); why names the process or the lock and the reason.
func QwenLive(s QwenSession) (live bool, why string) {
	a, ok := s.AppSession.clean()
	if !ok {
		return false, ""
	}
	if live, why := qwenScheduler(s.Runtime, a); live {
		return true, why
	}
	return appLive(a, "qwen", QwenArgv)
}

// Qwen waits, polling within o.Wait, until no Qwen process has the session (see
// [QwenLive]): nil once none has, an error matching [ErrBusy] when one still has at the
// deadline, ctx.Err() when the context ends first. Nothing is held.
func Qwen(ctx context.Context, s QwenSession, o Options) error {
	_, err := acquire(ctx, o, s.Path, func() (Held, error) {
		if live, why := QwenLive(s); live {
			return nil, busy(s.Path, why)
		}
		return nothingHeld{}, nil
	})
	return err
}

// qwenScheduler reads the scheduler lock of the session's project: live when it names the
// session and its pid runs. A lock that is a symlink, too big or not this shape says nothing.
func qwenScheduler(runtime string, s AppSession) (bool, string) {
	if runtime == "" || s.Cwd == "" || s.ID == "" || !filepath.IsAbs(runtime) {
		return false, ""
	}
	sum := sha256.Sum256([]byte(s.Cwd))
	p := filepath.Join(runtime, "tmp", hex.EncodeToString(sum[:]), "scheduled_tasks.lock")
	line, _ := resolve.ReadSmall(p, qwenSchedMax)
	if len(line) == 0 {
		return false, ""
	}
	var l struct {
		PID       json.Number `json:"pid"`
		SessionID string      `json:"sessionId"`
	}
	if json.Unmarshal(line, &l) != nil || l.SessionID != s.ID {
		return false, ""
	}
	pid, err := strconv.ParseInt(l.PID.String(), 10, 64)
	if err != nil || !pidAlive(pid) {
		return false, ""
	}
	return true, "Qwen Code process " + strconv.FormatInt(pid, 10) + " runs the session's scheduler (" + p + ")"
}

// QwenArgv reports whether a command line is Qwen Code's: argv[0]'s base name is "qwen" (the
// installed bin), a runtime (node, bun) runs a script whose base name is "qwen", or an
// argument is a path into the npm package (…/@qwen-code/qwen-code/…: the bin's entry and
// the CLI it relaunches with --expose-gc).
func QwenArgv(argv []string) bool {
	if len(argv) == 0 {
		return false
	}
	if filepath.Base(argv[0]) == "qwen" {
		return true
	}
	for _, a := range argv {
		if strings.Contains(a, "/@qwen-code/qwen-code/") {
			return true
		}
	}
	if rt := filepath.Base(argv[0]); !strings.HasPrefix(rt, "node") && rt != "bun" {
		return false
	}
	for _, a := range argv[1:] {
		if !strings.HasPrefix(a, "-") {
			return filepath.Base(a) == "qwen"
		}
	}
	return false
}
