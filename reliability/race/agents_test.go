package race

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"syscall"
	"time"
)

// ---- pi and Qwen Code: one record a write, each through its own open(O_APPEND) + write +
// close (pi's appendFileSync; Qwen's appendFile with flush: an fsync before the close), no
// lock, the file never held open ----

type perRecord struct {
	app  string // "pi" or "qwen-code"
	dir  string // pi: <sessions>/--tmp-demo-proj--; Qwen: <runtime>/projects/-tmp-demo-proj/chats
	tag  string
	n    int
	host *env
}

func (p *perRecord) name() string     { return p.app }
func (p *perRecord) keepsInode() bool { return true }
func (p *perRecord) heldOpen() bool   { return false }
func (p *perRecord) hasLock() bool    { return false }
func (p *perRecord) close()           {}

// appendsPast: both append after a bad line without looking at the file.
func (p *perRecord) appendsPast() bool { return true }

func (p *perRecord) sessionID() string {
	return fmt.Sprintf("01a20fe0-6e4b-74a6-a8ea-%04d%08d", int(p.tag[0]-'0'), p.n)
}

// record is the n-th record of s (0: pi's header, or Qwen's first record).
func (p *perRecord) record(s *session, id string, n int) []byte {
	sid := p.fileID(s)
	parent := "null"
	if n > 1 || (p.app == "qwen-code" && n > 0) {
		parent = fmt.Sprintf("%q", s.ids[n-1])
	}
	if p.app == "pi" {
		if n == 0 {
			return fmt.Appendf(nil, `{"type":"session","version":3,"id":%q,"timestamp":"2026-11-24T23:24:56.267Z","cwd":"/tmp/demo/proj"}`+"\n", sid)
		}
		return fmt.Appendf(nil, `{"type":"message","id":%q,"parentId":%s,"timestamp":"2026-11-24T23:24:57.000Z","message":{"role":"user","content":[{"type":"text","text":"turn %d"}]}}`+"\n", id, parent, n)
	}
	typ := "user"
	if n%2 == 1 {
		typ = "assistant"
	}
	return fmt.Appendf(nil, `{"uuid":%q,"parentUuid":%s,"sessionId":%q,"timestamp":"2026-11-25T03:10:51.278Z","type":%q,"cwd":"/tmp/demo/proj","version":"0.24.4","message":{"role":"user","parts":[{"text":"turn %d"}]}}`+"\n",
		id, parent, sid, typ, n)
}

func (p *perRecord) fileID(s *session) string {
	base := filepath.Base(s.path)
	base = base[:len(base)-len(".jsonl")]
	if i := len(base) - 36; p.app == "pi" && i > 0 {
		return base[i:]
	}
	return base
}

// appendRecord is one append: open O_APPEND, one write, (Qwen: fsync,) close.
func (p *perRecord) appendRecord(path string, b []byte) error {
	return appendOnce(path, b, 0o644, p.app == "qwen-code")
}

func (p *perRecord) create(ctx context.Context) (*session, error) {
	p.n++
	name := p.sessionID() + ".jsonl"
	if p.app == "pi" {
		name = "2026-11-24T23-24-56-267Z_" + name
	}
	s := &session{path: filepath.Join(p.dir, name)}
	id := p.host.newID(p.app[:2] + p.tag)
	s.ids = []string{id}
	s.last = p.record(s, id, 0)
	if err := p.appendRecord(s.path, s.last); err != nil {
		return nil, err
	}
	s.ino = inode(s.path)
	return s, nil
}

func (p *perRecord) lock(context.Context, *session) (func(), error) { return func() {}, nil }

func (p *perRecord) write(s *session, id string) ([]byte, error) {
	rec := p.record(s, id, len(s.ids))
	if err := p.appendRecord(s.path, rec); err != nil {
		return nil, err
	}
	return append(append([]byte(nil), s.last...), rec...), nil
}

func (p *perRecord) damage(ctx context.Context, rng *rand.Rand, s *session, racing bool) (string, []byte, error) {
	kind, tail := "garbage-line", "garbage: not a JSON record\n"
	switch x := rng.IntN(2); {
	case racing:
	case x == 0: // killed mid-append
		kind, tail = "torn-tail", `{"type":"message","id":"torn","parentId":"x","mess`
		if p.app == "qwen-code" {
			tail = `{"uuid":"torn","parentUuid":"x","sessionId":"`
		}
	default: // a power loss: the tail's blocks were allocated, never written
		kind, tail = "nul-tail", string(make([]byte, 64+rng.IntN(512)))
	}
	bad := append(append([]byte(nil), s.last...), tail...)
	return kind, bad, p.appendRecord(s.path, []byte(tail))
}

// putBack: the app's own bytes, written in place.
func (p *perRecord) putBack(s *session, b []byte) error { return writeInPlace(s.path, b) }

// ---- Copilot CLI: a run (one turn) holds flock(LOCK_EX) on <session>/inuse.<pid>.hold for
// its life and the session's operation flock while it loads and sends; each batch of events
// goes through its own open(O_APPEND) + write + close, no fsync; at exit the inuse files are
// unlinked ----

type copilot struct {
	state string // <home>/session-state
	tag   string
	n     int
	host  *env
}

func (c *copilot) name() string          { return "copilot-cli" }
func (c *copilot) keepsInode() bool      { return true }
func (c *copilot) heldOpen() bool        { return false }
func (c *copilot) hasLock() bool         { return true }
func (c *copilot) close()                {}
func (c *copilot) appendsPast() bool     { return true }
func (c *copilot) dir(s *session) string { return filepath.Dir(s.path) }

// record is the n-th event of s. Copilot's envelope takes only UUIDs as ids: the writer's id
// is kept in the data (where the checks find it), the event's id made from it.
func (c *copilot) record(s *session, id string, n int) []byte {
	sid := filepath.Base(filepath.Dir(s.path))
	eid := copilotEventID(id)
	if n == 0 {
		return fmt.Appendf(nil, `{"type":"session.start","data":{"sessionId":%q,"version":1,"producer":"copilot-agent","copilotVersion":"1.0.102","startTime":"2026-11-25T03:11:26.010Z","context":{"cwd":"/tmp/demo/proj"},"selectedModel":%q},"id":%q,"timestamp":"2026-11-25T03:11:26.061Z","parentId":null}`+"\n", sid, id, eid)
	}
	parent := copilotEventID(s.ids[n-1])
	if n%2 == 1 {
		return fmt.Appendf(nil, `{"type":"user.message","data":{"content":"turn %d %s"},"id":%q,"timestamp":"2026-11-25T03:11:27.000Z","parentId":%q}`+"\n", n, id, eid, parent)
	}
	return fmt.Appendf(nil, `{"type":"assistant.message","data":{"messageId":%q,"content":"ack %d","toolRequests":[]},"id":%q,"timestamp":"2026-11-25T03:11:27.100Z","parentId":%q}`+"\n", id, n, eid, parent)
}

// copilotEventID is a UUID made of a writer's record id (its bytes' SHA-256).
func copilotEventID(id string) string {
	h := sha256.Sum256([]byte(id))
	x := hex.EncodeToString(h[:16])
	return x[:8] + "-" + x[8:12] + "-4" + x[13:16] + "-8" + x[17:20] + "-" + x[20:32]
}

func (c *copilot) create(ctx context.Context) (*session, error) {
	c.n++
	sid := fmt.Sprintf("568f5a60-7fc4-4a49-a663-%04d%08d", int(c.tag[0]-'0'), c.n)
	if err := os.MkdirAll(filepath.Join(c.state, sid), 0o700); err != nil {
		return nil, err
	}
	s := &session{path: filepath.Join(c.state, sid, "events.jsonl")}
	rel, err := c.lock(ctx, s)
	if err != nil {
		return nil, err
	}
	defer rel()
	id := c.host.newID("co" + c.tag)
	s.ids = []string{id}
	s.last = c.record(s, id, 0)
	if err := appendOnce(s.path, s.last, 0o600, false); err != nil {
		return nil, err
	}
	s.ino = inode(s.path)
	return s, nil
}

// lock is one Copilot run: the operation lock (polled, as Copilot does for ≈ 30 s), then
// inuse.<pid>.lock written and inuse.<pid>.hold flocked, both unlinked at the end.
func (c *copilot) lock(ctx context.Context, s *session) (func(), error) {
	op := filepath.Join(c.state, ".session-operation-locks", filepath.Base(c.dir(s))+".lock")
	if err := os.MkdirAll(filepath.Dir(op), 0o700); err != nil { // Copilot makes it on its first load
		return nil, err
	}
	of, wait, err := flockAcquire(ctx, op, os.O_WRONLY|os.O_CREATE, false, 20*time.Millisecond, 30*time.Second)
	if err != nil {
		return nil, err
	}
	c.host.fig.noteLockWait(wait)
	pid := fmt.Sprint(1_000_000 + c.host.ids.Add(1)) // one "process" a run
	hold := filepath.Join(c.dir(s), "inuse."+pid+".hold")
	pidFile := filepath.Join(c.dir(s), "inuse."+pid+".lock")
	os.WriteFile(pidFile, []byte(pid+"\n"), 0o600)
	hf, err := os.OpenFile(hold, os.O_RDWR|os.O_CREATE|syscall.O_CLOEXEC, 0o600)
	if err == nil {
		err = syscall.Flock(int(hf.Fd()), syscall.LOCK_EX|syscall.LOCK_NB)
	}
	if err != nil {
		if hf != nil {
			hf.Close()
		}
		flockRelease(of, op, false)
		return nil, err
	}
	acq := time.Now()
	return func() {
		c.host.held("copilot:"+c.dir(s), acq, time.Now())
		os.Remove(hold)
		os.Remove(pidFile)
		hf.Close()
		flockRelease(of, op, false)
	}, nil
}

func (c *copilot) write(s *session, id string) ([]byte, error) {
	rec := c.record(s, id, len(s.ids))
	return append(append([]byte(nil), s.last...), rec...), appendOnce(s.path, rec, 0o600, false)
}

func (c *copilot) damage(ctx context.Context, rng *rand.Rand, s *session, racing bool) (string, []byte, error) {
	kind, tail := "garbage-line", "garbage: not an event\n"
	switch x := rng.IntN(2); {
	case racing:
	case x == 0: // killed mid-append
		kind, tail = "torn-tail", `{"type":"user.message","data":{"content":"tor`
	default: // a power loss: the tail's blocks were allocated, never written
		kind, tail = "nul-tail", string(make([]byte, 64+rng.IntN(512)))
	}
	bad := append(append([]byte(nil), s.last...), tail...)
	return kind, bad, appendOnce(s.path, []byte(tail), 0o600, false)
}

func (c *copilot) putBack(s *session, b []byte) error { return writeInPlace(s.path, b) }

// appendOnce is one append: open O_APPEND (creating the file with perm), one write, an
// fsync when sync is set, close.
func appendOnce(path string, b []byte, perm os.FileMode, sync bool) error {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND|os.O_CREATE|syscall.O_CLOEXEC, perm)
	if err != nil {
		return err
	}
	_, err = f.Write(b)
	if err == nil && sync {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return err
}
