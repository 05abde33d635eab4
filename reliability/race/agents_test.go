package race

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"syscall"
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
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND|os.O_CREATE|syscall.O_CLOEXEC, 0o644)
	if err != nil {
		return err
	}
	_, err = f.Write(b)
	if err == nil && p.app == "qwen-code" {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return err
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
