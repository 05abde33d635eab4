package race

import (
	"bytes"
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"sync"
	"syscall"
	"time"
)

// ---- Claude Code: a transcript appended in batches, each batch open(O_APPEND) + one write +
// close, two batches in flight from different threads, no lock ----

type claude struct {
	dir  string // <config>/projects/<slug>
	tag  string
	n    int
	host *env

	// land, when set, lands a write's two batches instead of two threads racing (tests: an
	// order, and what the daemon does around them, chosen).
	land func(path string, meta, rec []byte) error
}

func (c *claude) name() string     { return "claude-code" }
func (c *claude) keepsInode() bool { return true }
func (c *claude) heldOpen() bool   { return false }
func (c *claude) hasLock() bool    { return false }
func (c *claude) close()           {}

// appendsPast: the app appends after a bad line instead of rewriting the file.
func (c *claude) appendsPast() bool { return true }

// sessionID is a UUID made of the tag and the session number.
func (c *claude) sessionID() string {
	return fmt.Sprintf("7c2e1b4a-9d3f-4e8a-b6c1-%04d%08d", int(c.tag[0]-'0'), c.n)
}

func (c *claude) record(s *session, id string, n int) []byte {
	parent := "null"
	if n > 0 {
		parent = fmt.Sprintf("%q", s.ids[n-1])
	}
	typ := "user"
	if n%2 == 1 {
		typ = "assistant"
	}
	sid := filepath.Base(s.path)
	sid = sid[:len(sid)-len(".jsonl")]
	return fmt.Appendf(nil, `{"parentUuid":%s,"isSidechain":false,"type":%q,"message":{"role":%q,"content":"turn %d","id":%q},"uuid":%q,"timestamp":"2026-11-22T21:40:41.823Z","sessionId":%q,"version":"2.1.330"}`+"\n",
		parent, typ, typ, n, id, id, sid)
}

// appendBatch is Claude's fs.promises.appendFile: open O_APPEND, one write, close.
func appendBatch(path string, b []byte) error {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND|os.O_CREATE|syscall.O_CLOEXEC, 0o600)
	if err != nil {
		return err
	}
	_, err = f.Write(b)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return err
}

func (c *claude) create(ctx context.Context) (*session, error) {
	c.n++
	s := &session{path: filepath.Join(c.dir, c.sessionID()+".jsonl")}
	id := c.host.newID("cc" + c.tag)
	s.ids = []string{id}
	s.last = c.record(s, id, 0)
	if err := appendBatch(s.path, s.last); err != nil {
		return nil, err
	}
	s.ino = inode(s.path)
	return s, nil
}

func (c *claude) lock(context.Context, *session) (func(), error) { return func() {}, nil }

// write commits the record as two batches from two threads at once: a queue-operation meta
// record and the chain record, in whichever order the kernel lands them. Which it was is
// not read back here: a heal may have changed the bytes before them by now, or hold one of
// them in the inode it replaced until it puts it back. The bytes returned have the meta
// record first; s.pair lets the checks take the other order when the file shows it.
func (c *claude) write(s *session, id string) ([]byte, error) {
	sid := filepath.Base(s.path)
	sid = sid[:len(sid)-len(".jsonl")]
	meta := fmt.Appendf(nil, `{"type":"queue-operation","operation":"dequeue","timestamp":"2026-11-22T21:40:41.823Z","sessionId":%q}`+"\n", sid)
	rec := c.record(s, id, len(s.ids))
	if c.land != nil {
		if err := c.land(s.path, meta, rec); err != nil {
			return nil, err
		}
	} else {
		var wg sync.WaitGroup
		errs := make([]error, 2)
		for i, b := range [][]byte{meta, rec} {
			wg.Add(1)
			go func() {
				defer wg.Done()
				errs[i] = appendBatch(s.path, b)
			}()
		}
		wg.Wait()
		for _, err := range errs {
			if err != nil {
				return nil, err
			}
		}
	}
	s.pair = [2][]byte{meta, rec}
	return append(append(append([]byte(nil), s.last...), meta...), rec...), nil
}

func (c *claude) damage(ctx context.Context, rng *rand.Rand, s *session, racing bool) (string, []byte, error) {
	kind, tail := "garbage-line", `{"type":"cost-state","sessionId":"torn`+"\n"
	switch x := rng.IntN(2); {
	case racing:
	case x == 0: // killed mid-append
		kind, tail = "torn-tail", `{"parentUuid":null,"isSidechain":false,"type":"user","mess`
	default: // a power loss: the tail's blocks were allocated, never written
		kind, tail = "nul-tail", string(make([]byte, 64+rng.IntN(512)))
	}
	bad := append(append([]byte(nil), s.last...), tail...)
	return kind, bad, appendBatch(s.path, []byte(tail))
}

// putBack: the app's own bytes, as an in-place rewrite (Claude's tombstone path).
func (c *claude) putBack(s *session, b []byte) error { return writeInPlace(s.path, b) }

// ---- Codex CLI: a rollout appended through one long-lived descriptor while the thread's
// writer flock is held (taken under the coordination lock) ----

type codex struct {
	home string // CODEX_HOME
	tag  string
	n    int
	host *env
	app  *helper // the Codex process, holding the rollout open
}

func (c *codex) name() string     { return "codex" }
func (c *codex) keepsInode() bool { return true }
func (c *codex) heldOpen() bool   { return true }
func (c *codex) hasLock() bool    { return true }

func (c *codex) close() {
	if c.app != nil {
		c.app.close()
		c.app = nil
	}
}

func (c *codex) threadID(s *session) string {
	b := filepath.Base(s.path)
	return b[len(b)-len("01a20539-677f-7710-87e4-54a740761238.jsonl") : len(b)-len(".jsonl")]
}

func (c *codex) record(id string, ordinal int) []byte {
	return fmt.Appendf(nil, `{"timestamp":"2026-11-22T21:46:17.468Z","ordinal":%d,"type":"event_msg","payload":{"type":"agent_message","id":%q,"message":"step %d"}}`+"\n", ordinal, id, ordinal)
}

func (c *codex) create(ctx context.Context) (*session, error) {
	c.close()
	c.n++
	thread := fmt.Sprintf("01a20539-677f-7710-87e4-%04d%08d", int(c.tag[0]-'0'), c.n)
	dir := filepath.Join(c.home, "sessions", "2026", "11", "22")
	s := &session{path: filepath.Join(dir, "rollout-2026-11-22T21-46-17-"+thread+".jsonl")}
	rel, err := c.lock(ctx, s)
	if err != nil {
		return nil, err
	}
	defer rel()
	app, err := startHelper("appender", s.path)
	if err != nil {
		return nil, err
	}
	c.app = app
	id := c.host.newID("cx" + c.tag)
	s.ids = []string{id}
	s.last = fmt.Appendf(nil, `{"timestamp":"2026-11-22T21:46:17.468Z","ordinal":0,"type":"session_meta","payload":{"session_id":%q,"id":%q,"timestamp":"2026-11-22T21:46:17.468Z","cwd":"/tmp/demo/proj","originator":"codex_exec","cli_version":"0.169.0","history_mode":"paginated","note":{"id":%q}}}`+"\n", thread, thread, id)
	if err := c.send(s.last); err != nil {
		return nil, err
	}
	s.ino = inode(s.path)
	return s, nil
}

func (c *codex) send(b []byte) error { return c.app.send(fmt.Sprintf("%x", b)) }

// lock is Codex's writer lock: the coordination lock, then LOCK_EX|LOCK_NB on the thread's
// lock file, the coordination lock let go; held for a turn.
func (c *codex) lock(ctx context.Context, s *session) (func(), error) {
	locks := filepath.Join(c.home, "thread-writer-locks")
	coord := filepath.Join(locks, ".coordination.lock")
	lp := filepath.Join(locks, c.threadID(s)+".lock")
	start := time.Now()
	for {
		cf, _, err := flockAcquire(ctx, coord, os.O_RDWR|os.O_CREATE, false, 5*time.Millisecond, 30*time.Second)
		if err != nil {
			return nil, err
		}
		f, err := os.OpenFile(lp, os.O_RDWR|os.O_CREATE|syscall.O_CLOEXEC, 0o644)
		if err != nil {
			flockRelease(cf, coord, false)
			return nil, err
		}
		err = syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB)
		flockRelease(cf, coord, false)
		if err == nil {
			c.host.fig.noteLockWait(time.Since(start))
			acq := time.Now()
			return func() {
				c.host.held(lp, acq, time.Now())
				flockRelease(f, lp, false)
			}, nil
		}
		f.Close()
		if time.Since(start) > 30*time.Second || ctx.Err() != nil {
			return nil, errLockTimeout
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func (c *codex) write(s *session, id string) ([]byte, error) {
	l := c.record(id, len(s.ids))
	return append(append([]byte(nil), s.last...), l...), c.send(l)
}

func (c *codex) damage(ctx context.Context, rng *rand.Rand, s *session, racing bool) (string, []byte, error) {
	kind, tail := "garbage-line", `{"timestamp":"2026-11-22T21:46:17.468Z","ordinal":9`+"\n"
	if !racing {
		// The process died mid-write; its successor has not opened the file yet.
		kind, tail = "torn-tail", `{"timestamp":"2026-11-22T21:46:17.468Z","ordinal":`
	}
	bad := append(append([]byte(nil), s.last...), tail...)
	return kind, bad, c.send([]byte(tail))
}

// putBack: the rollout cannot be rewritten under Codex's descriptor; cut it back.
func (c *codex) putBack(s *session, b []byte) error {
	cur, err := os.ReadFile(s.path)
	if err != nil {
		return err
	}
	if !bytes.HasPrefix(cur, b) {
		return fmt.Errorf("the rollout no longer starts with what Codex wrote")
	}
	return os.Truncate(s.path, int64(len(b)))
}
