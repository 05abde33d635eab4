package race

import (
	"bufio"
	"bytes"
	"context"
	"encoding/base64"
	"encoding/hex"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"
)

// style is one app's way of writing its session files.
type style interface {
	name() string
	// create makes a new session file with its first record.
	create(ctx context.Context) (*session, error)
	// lock takes the app's lock for s (a no-op for apps without one); release records the
	// span it was held.
	lock(ctx context.Context, s *session) (release func(), err error)
	// write commits one more record the app's way and returns the bytes now on disk.
	write(s *session, id string) ([]byte, error)
	// damage lands damaged bytes in s (as a crash or a racing writer leaves them) and returns
	// them. With racing, the app goes on writing at once, so the damage must be one it can
	// write past (for an append-only app: a whole bad line).
	damage(ctx context.Context, rng *rand.Rand, s *session, racing bool) (kind string, bad []byte, err error)
	// putBack restores s to before (an unhealed damage; the app would have to).
	putBack(s *session, before []byte) error
	// keepsInode: the app writes in place, so its file keeps its inode between its writes.
	keepsInode() bool
	// heldOpen: the app keeps the file open for writing, so a heal must keep its inode too.
	heldOpen() bool
	// hasLock: the app takes a lock a heal must honour.
	hasLock() bool
	close()
}

// runWriter is one app: it writes records until ctx is done, checking before every write
// (under its lock) that the file is what it left there, and injecting damage now and then.
// Half the damages are awaited (the app is down until the daemon heals or reports them); the
// other half race: the app writes on at once, over or past the damage, while the daemon is
// still looking at the damaged version.
func runWriter(ctx context.Context, e *env, st style, prefix string, rng *rand.Rand) []*session {
	var sessions []*session
	newSession := func() *session {
		s, err := st.create(ctx)
		if err != nil {
			e.problem("%s: create a session: %v", st.name(), err)
			return nil
		}
		e.fig.writes.Add(int64(len(s.ids)))
		e.fig.sessions.Add(1)
		sessions = append(sessions, s)
		return s
	}
	s := newSession()
	for s != nil && ctx.Err() == nil {
		if s.damages >= maxDamagesPerFile && s.alt == nil {
			if s = newSession(); s == nil {
				break
			}
		}
		release, err := st.lock(ctx, s)
		if err != nil {
			if ctx.Err() == nil {
				e.fig.lockTimeouts.Add(1)
				e.problem("%s %s: app lock: %v", st.name(), s.path, err)
			}
			continue
		}
		e.check(st.name(), s, "under the app's lock, before its write", st.keepsInode(), st.heldOpen())
		if st.hasLock() {
			// A turn takes a while, and the lock is held all along: nobody else may touch the
			// file meanwhile.
			b0, ino0 := readWithInode(s.path)
			sleep(ctx, holdTime(rng))
			if b1, ino1 := readWithInode(s.path); !bytes.Equal(b0, b1) || ino0 != ino1 {
				e.fig.healInLock.Add(1)
				e.problem("%s %s: the file changed while the app held its lock (inode %d→%d)\n  was %q\n  now %q", st.name(), s.path, ino0, ino1, clip(b0), clip(b1))
				e.check(st.name(), s, "under the app's lock, after someone else wrote", st.keepsInode(), st.heldOpen())
			}
		}
		if s.alt == nil && s.damages < maxDamagesPerFile && damageNow(rng) {
			racing := rng.IntN(2) == 0
			before := s.last
			at := time.Now()
			kind, bad, err := st.damage(ctx, rng, s, racing)
			release()
			if err != nil {
				e.problem("%s %s: inject damage: %v", st.name(), s.path, err)
				return sessions
			}
			e.fig.damages.Add(1)
			s.damages++
			inj := &injection{style: st.name(), path: s.path, kind: kind, at: at, racing: racing, badSHA: shaOf(bad)}
			e.record(inj)
			if racing {
				e.fig.racing.Add(1)
				s.last, s.alt, s.altInj = bad, before, inj
				sleep(ctx, time.Duration(20+rng.IntN(100))*time.Millisecond)
				continue
			}
			e.awaitVerdict(ctx, inj)
			e.afterHeal(inj, s, before, st.heldOpen(), func(b []byte) {
				rel, err := st.lock(context.Background(), s)
				if err != nil {
					e.problem("%s %s: lock to put back: %v", st.name(), s.path, err)
					return
				}
				defer rel()
				if err := st.putBack(s, b); err != nil {
					e.problem("%s %s: put back: %v", st.name(), s.path, err)
				}
			})
			continue
		}
		id := e.newID(prefix)
		prev := s.last
		b, err := st.write(s, id)
		if err != nil {
			release()
			e.problem("%s %s: app write: %v", st.name(), s.path, err)
			return sessions
		}
		e.committed(st, s, id, prev, b)
		e.fig.writes.Add(1)
		e.check(st.name(), s, "under the app's lock, after its write", st.keepsInode(), st.heldOpen())
		release()
		pause(ctx, rng)
	}
	return sessions
}

// committed notes the app's write of record id: the file went from prev to b, as the app
// knows it.
func (e *env) committed(st style, s *session, id string, prev, b []byte) {
	s.ids = append(s.ids, id)
	s.last, s.ino = b, inode(s.path)
	if s.alt != nil {
		if ap, ok := st.(interface{ appendsPast() bool }); st.heldOpen() || (ok && ap.appendsPast()) {
			// Appended past the bad line: a heal may still drop it.
			s.alt = append(s.alt, b[len(prev):]...)
		} else {
			// The app's own rewrite replaced the damage before the daemon healed it.
			e.resolveRacing(s, "superseded")
		}
	}
}

// holdTime is how long an app holds its lock before it writes: mostly a moment, sometimes a
// slow turn or a commit.
func holdTime(rng *rand.Rand) time.Duration {
	switch x := rng.IntN(100); {
	case x < 60:
		return time.Duration(rng.IntN(5000)) * time.Microsecond
	case x < 92:
		return time.Duration(10+rng.IntN(30)) * time.Millisecond
	default:
		return time.Duration(100+rng.IntN(150)) * time.Millisecond
	}
}

func readWithInode(path string) ([]byte, uint64) {
	b, _ := os.ReadFile(path)
	return b, inode(path)
}

func sleep(ctx context.Context, d time.Duration) {
	select {
	case <-ctx.Done():
	case <-time.After(d):
	}
}

// ---- CoPaw: one-line JSON, open("w") in place, no lock ----

type copaw struct {
	dir  string
	n    int
	tag  string
	host *env
	app  *helper // the CoPaw process that saves
}

func (c *copaw) name() string     { return "copaw" }
func (c *copaw) keepsInode() bool { return true }
func (c *copaw) heldOpen() bool   { return false }
func (c *copaw) hasLock() bool    { return false }

func (c *copaw) close() {
	if c.app != nil {
		c.app.close()
		c.app = nil
	}
}

// save is CoPaw's open("w") + write, done by its own process.
func (c *copaw) save(path string, b []byte) error {
	if c.app == nil {
		h, err := startHelper("rewriter", "")
		if err != nil {
			return err
		}
		c.app = h
	}
	return c.app.send(hex.EncodeToString([]byte(path)) + " " + hex.EncodeToString(b))
}

func (c *copaw) render(ids []string, extra int) []byte {
	var b strings.Builder
	b.WriteString(`{"agent": {"memory": {"_compressed_summary": "", "content": [`)
	for i, id := range ids {
		if i > 0 {
			b.WriteString(", ")
		}
		fmt.Fprintf(&b, `[{"id": "%s", "name": "user", "role": "user", "content": "turn %d of the session", "metadata": {}, "timestamp": "2026-11-21 07:42:09.662"}, []]`, id, i)
	}
	for i := 0; i < extra; i++ {
		fmt.Fprintf(&b, `, [{"id": "x-%d", "name": "QwenPaw", "role": "assistant", "content": "a longer older answer", "metadata": {}}, []]`, i)
	}
	b.WriteString(`]}, "toolkit": {"active_groups": []}, "name": "QwenPaw", "_sys_prompt": "You are QwenPaw."}}`)
	return []byte(b.String())
}

func (c *copaw) create(ctx context.Context) (*session, error) {
	c.n++
	s := &session{path: filepath.Join(c.dir, fmt.Sprintf("u%s_console--s%d.json", c.tag, c.n))}
	id := c.host.newID("cp" + c.tag)
	s.ids = []string{id}
	s.last = c.render(s.ids, 0)
	if err := c.save(s.path, s.last); err != nil {
		return nil, err
	}
	s.ino = inode(s.path)
	return s, nil
}

func (c *copaw) lock(context.Context, *session) (func(), error) { return func() {}, nil }

func (c *copaw) write(s *session, id string) ([]byte, error) {
	b := c.render(append(append([]string(nil), s.ids...), id), 0)
	return b, c.save(s.path, b)
}

func (c *copaw) damage(ctx context.Context, rng *rand.Rand, s *session, racing bool) (string, []byte, error) {
	if rng.IntN(2) == 0 && c.host.lastGoodHolds(ctx, s.last, 1500*time.Millisecond) {
		// A crash mid-write: only a prefix landed.
		bad := s.last[:1+rng.IntN(len(s.last)-1)]
		return "torn", bad, c.save(s.path, bad)
	}
	// Two saves raced: the shorter JSON over the tail of a longer one (issue #3277).
	longer := c.render(s.ids, 2)
	bad := append(append([]byte(nil), s.last...), longer[len(s.last):]...)
	return "trailing-garbage", bad, c.save(s.path, bad)
}

func (c *copaw) putBack(s *session, b []byte) error { return c.save(s.path, b) }

// ---- PraisonAI: indent-2 JSON, temp + rename under flock on <file>.lock ----

type praison struct {
	dir  string
	n    int
	tag  string
	host *env
	rng  *rand.Rand
}

func (p *praison) name() string     { return "praisonai" }
func (p *praison) keepsInode() bool { return false }
func (p *praison) heldOpen() bool   { return false }
func (p *praison) hasLock() bool    { return true }
func (p *praison) close()           {}

func (p *praison) render(s *session, ids []string) []byte {
	var b strings.Builder
	sid := strings.TrimSuffix(filepath.Base(s.path), ".json")
	fmt.Fprintf(&b, "{\n  \"session_id\": %q,\n  \"messages\": [", sid)
	for i, id := range ids {
		if i > 0 {
			b.WriteString(",")
		}
		fmt.Fprintf(&b, "\n    {\n      \"role\": \"user\",\n      \"content\": \"message %d\",\n      \"id\": %q,\n      \"timestamp\": 1795246942.6944535,\n      \"metadata\": {}\n    }", i, id)
	}
	if len(ids) > 0 {
		b.WriteString("\n  ")
	}
	b.WriteString("],\n  \"created_at\": 1795246942.0,\n  \"updated_at\": 1795246943.5\n}")
	return []byte(b.String())
}

func (p *praison) tmp() string {
	const chars = "abcdefghijklmnopqrstuvwxyz0123456789_"
	b := make([]byte, 8)
	for i := range b {
		b[i] = chars[p.rng.IntN(len(chars))]
	}
	return filepath.Join(p.dir, "tmp"+string(b)+".tmp")
}

func (p *praison) create(ctx context.Context) (*session, error) {
	p.n++
	s := &session{path: filepath.Join(p.dir, fmt.Sprintf("chat-%s-%d.json", p.tag, p.n))}
	rel, err := p.lock(ctx, s)
	if err != nil {
		return nil, err
	}
	defer rel()
	s.ids = []string{p.host.newID("pr" + p.tag)}
	s.last = p.render(s, s.ids)
	if err := writeReplace(s.path, p.tmp(), s.last); err != nil {
		return nil, err
	}
	s.ino = inode(s.path)
	return s, nil
}

func (p *praison) lock(ctx context.Context, s *session) (func(), error) {
	lp := s.path + ".lock"
	f, waited, err := flockAcquire(ctx, lp, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, false, 50*time.Millisecond, 5*time.Second)
	p.host.fig.noteLockWait(waited)
	if err != nil {
		return nil, err
	}
	acq := time.Now()
	return func() {
		p.host.held(lp, acq, time.Now())
		flockRelease(f, lp, false)
	}, nil
}

func (p *praison) write(s *session, id string) ([]byte, error) {
	b := p.render(s, append(append([]string(nil), s.ids...), id))
	return b, writeReplace(s.path, p.tmp(), b)
}

func (p *praison) damage(ctx context.Context, rng *rand.Rand, s *session, racing bool) (string, []byte, error) {
	if rng.IntN(2) == 0 && p.host.lastGoodHolds(ctx, s.last, 1500*time.Millisecond) {
		bad := s.last[:1+rng.IntN(len(s.last)-1)]
		return "torn", bad, writeInPlace(s.path, bad)
	}
	bad := append(append([]byte(nil), s.last...), "\n  }\n}"...)
	return "trailing-garbage", bad, writeInPlace(s.path, bad)
}

func (p *praison) putBack(s *session, b []byte) error { return writeReplace(s.path, p.tmp(), b) }

// ---- nanobot era D: JSONL, .<name>.<16hex>.tmp + rename under flock on <ns>/.session-files.lock ----

type nanobot struct {
	ns   string // sessions/<32 hex>
	tag  string
	n    int
	host *env
	rng  *rand.Rand
}

func (n *nanobot) name() string     { return "nanobot" }
func (n *nanobot) keepsInode() bool { return false }
func (n *nanobot) heldOpen() bool   { return false }
func (n *nanobot) hasLock() bool    { return true }
func (n *nanobot) close()           {}

func (n *nanobot) key(s *session) string {
	b, _ := base64.RawURLEncoding.DecodeString(strings.TrimSuffix(filepath.Base(s.path), ".jsonl"))
	return string(b)
}

func (n *nanobot) render(s *session, ids []string) []byte {
	var b bytes.Buffer
	fmt.Fprintf(&b, `{"_type": "metadata", "key": %q, "created_at": "2026-11-21T07:42:12.139847", "updated_at": "2026-11-21T07:42:12.%06d", "metadata": {}, "last_consolidated": 0}`+"\n", n.key(s), len(ids))
	for i, id := range ids {
		fmt.Fprintf(&b, `{"role": "user", "content": "turn %d", "timestamp": "2026-11-21T07:42:12.139866", "id": %q}`+"\n", i, id)
	}
	return b.Bytes()
}

func (n *nanobot) tmp(s *session) string {
	return filepath.Join(n.ns, fmt.Sprintf(".%s.%016x.tmp", filepath.Base(s.path), n.rng.Uint64()))
}

func (n *nanobot) create(ctx context.Context) (*session, error) {
	n.n++
	key := fmt.Sprintf("cli:w%s-%d", n.tag, n.n)
	s := &session{path: filepath.Join(n.ns, base64.RawURLEncoding.EncodeToString([]byte(key))+".jsonl")}
	rel, err := n.lock(ctx, s)
	if err != nil {
		return nil, err
	}
	defer rel()
	s.ids = []string{n.host.newID("nb" + n.tag)}
	s.last = n.render(s, s.ids)
	if err := writeReplace(s.path, n.tmp(s), s.last); err != nil {
		return nil, err
	}
	s.ino = inode(s.path)
	return s, nil
}

func (n *nanobot) lock(ctx context.Context, s *session) (func(), error) {
	lp := filepath.Join(n.ns, ".session-files.lock")
	f, waited, err := flockAcquire(ctx, lp, os.O_RDWR|os.O_CREATE|os.O_TRUNC, true, 50*time.Millisecond, 30*time.Second)
	n.host.fig.noteLockWait(waited)
	if err != nil {
		return nil, err
	}
	acq := time.Now()
	return func() {
		n.host.held(lp, acq, time.Now())
		flockRelease(f, lp, true)
	}, nil
}

func (n *nanobot) write(s *session, id string) ([]byte, error) {
	b := n.render(s, append(append([]string(nil), s.ids...), id))
	return b, writeReplace(s.path, n.tmp(s), b)
}

func (n *nanobot) damage(ctx context.Context, rng *rand.Rand, s *session, racing bool) (string, []byte, error) {
	last := s.last
	switch rng.IntN(3) {
	case 0: // a crash mid-write of the last line
		bad := append(append([]byte(nil), last...), `{"role": "user", "content": "tu`...)
		return "torn-tail", bad, writeInPlace(s.path, bad)
	case 1: // trailing bytes after the last line
		bad := append(append([]byte(nil), last...), "}}\x00\x00garbage"...)
		return "trailing-garbage", bad, writeInPlace(s.path, bad)
	}
	// a malformed line between two records
	lines := bytes.SplitAfter(last, []byte("\n"))
	at := 1 + rng.IntN(len(lines)-1)
	var b []byte
	for i, l := range lines {
		if i == at {
			b = append(b, `{"role": "user", "content": "half a line`+"\n"...)
		}
		b = append(b, l...)
	}
	return "garbage-line", b, writeInPlace(s.path, b)
}

func (n *nanobot) putBack(s *session, b []byte) error { return writeReplace(s.path, n.tmp(s), b) }

// ---- OpenViking: messages.jsonl rewritten in place (O_TRUNC) under <sid>/.path.ovlock, then .meta.json ----

type openviking struct {
	sessions string // .../sessions
	tag      string
	n        int
	host     *env
}

func (o *openviking) name() string     { return "openviking" }
func (o *openviking) keepsInode() bool { return true }
func (o *openviking) heldOpen() bool   { return false }
func (o *openviking) hasLock() bool    { return true }
func (o *openviking) close()           {}

func (o *openviking) render(ids []string) []byte {
	var b bytes.Buffer
	for i, id := range ids {
		fmt.Fprintf(&b, `{"id": %q, "role": "%s", "parts": [{"type": "text", "text": "message %d"}], "created_at": "2026-11-21T07:42:27.224633+00:00"}`+"\n",
			id, [2]string{"user", "assistant"}[i%2], i)
	}
	return b.Bytes()
}

func (o *openviking) meta(sid string, count int) []byte {
	return fmt.Appendf(nil, `{"session_id": %q, "created_at": "2026-11-21T07:42:27.221Z", "updated_at": "2026-11-21T07:42:27.230Z", "message_count": %d, "commit_count": 0, "total_message_count": %d}`, sid, count, count)
}

func (o *openviking) create(ctx context.Context) (*session, error) {
	o.n++
	sid := filepath.Join(o.sessions, fmt.Sprintf("sess-%s-%d", o.tag, o.n))
	if err := os.MkdirAll(sid, 0o755); err != nil {
		return nil, err
	}
	s := &session{path: filepath.Join(sid, "messages.jsonl")}
	rel, err := o.lock(ctx, s)
	if err != nil {
		return nil, err
	}
	defer rel()
	s.ids = []string{o.host.newID("ov" + o.tag)}
	s.last = o.render(s.ids)
	if err := writeInPlace(s.path, s.last); err != nil {
		return nil, err
	}
	if err := writeInPlace(filepath.Join(sid, ".meta.json"), o.meta(filepath.Base(sid), 1)); err != nil {
		return nil, err
	}
	s.ino = inode(s.path)
	return s, nil
}

func (o *openviking) lock(ctx context.Context, s *session) (func(), error) {
	lp := filepath.Join(filepath.Dir(s.path), ".path.ovlock")
	release, waited, err := ovAcquire(ctx, lp, 10*time.Second)
	o.host.fig.noteLockWait(waited)
	if err != nil {
		return nil, err
	}
	acq := time.Now()
	meta := filepath.Join(filepath.Dir(s.path), ".meta.json")
	wantMeta := o.meta(filepath.Base(filepath.Dir(s.path)), len(s.ids))
	if b, err := os.ReadFile(meta); err == nil && !bytes.Equal(b, wantMeta) && s.ids != nil {
		o.host.fig.unexpected.Add(1)
		o.host.problem("openviking %s: .meta.json is not what the app left there:\n  want %q\n  got  %q", meta, wantMeta, b)
	}
	return func() {
		o.host.held(lp, acq, time.Now())
		release()
	}, nil
}

func (o *openviking) write(s *session, id string) ([]byte, error) {
	ids := append(append([]string(nil), s.ids...), id)
	b := o.render(ids)
	if err := writeInPlace(s.path, b); err != nil {
		return nil, err
	}
	sid := filepath.Dir(s.path)
	return b, writeInPlace(filepath.Join(sid, ".meta.json"), o.meta(filepath.Base(sid), len(ids)))
}

func (o *openviking) damage(ctx context.Context, rng *rand.Rand, s *session, racing bool) (string, []byte, error) {
	last := s.last
	if rng.IntN(2) == 0 {
		bad := append(append([]byte(nil), last...), `{"id": "ov-torn", "role": "user", "par`...)
		return "torn-tail", bad, writeInPlace(s.path, bad)
	}
	lines := bytes.SplitAfter(last, []byte("\n"))
	at := rng.IntN(len(lines))
	var b []byte
	for i, l := range lines {
		if i == at {
			b = append(b, "\x00\x00\x00 garbage line\n"...)
		}
		b = append(b, l...)
	}
	return "garbage-line", b, writeInPlace(s.path, b)
}

func (o *openviking) putBack(s *session, b []byte) error { return writeInPlace(s.path, b) }

// ---- an agent CLI: JSONL appended through one long-lived O_APPEND descriptor, no lock ----

type agent struct {
	dir  string
	tag  string
	n    int
	host *env
	app  *helper // the agent process, holding the transcript open
}

func (a *agent) name() string     { return "agent" }
func (a *agent) keepsInode() bool { return true }
func (a *agent) heldOpen() bool   { return true }
func (a *agent) hasLock() bool    { return false }

func (a *agent) close() {
	if a.app != nil {
		a.app.close()
		a.app = nil
	}
}

func (a *agent) send(b []byte) error { return a.app.send(hex.EncodeToString(b)) }

// helper is this test binary re-executed as an app process, driven line by line on stdin.
type helper struct {
	cmd *exec.Cmd
	in  io.WriteCloser
	out *bufio.Scanner
}

func startHelper(kind, file string) (*helper, error) {
	h := &helper{cmd: exec.Command(os.Args[0], "-test.run=^$")}
	h.cmd.Env = append(os.Environ(), helperEnv+"="+kind, "SESSIONMEDIC_RACE_FILE="+file)
	h.cmd.Stderr = os.Stderr
	var err error
	if h.in, err = h.cmd.StdinPipe(); err != nil {
		return nil, err
	}
	stdout, err := h.cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	h.out = bufio.NewScanner(stdout)
	if err := h.cmd.Start(); err != nil {
		return nil, err
	}
	return h, nil
}

func (h *helper) send(line string) error {
	if _, err := fmt.Fprintf(h.in, "%s\n", line); err != nil {
		return err
	}
	if !h.out.Scan() {
		return fmt.Errorf("app process: %v", h.out.Err())
	}
	if h.out.Text() != "ok" {
		return fmt.Errorf("app process: %s", h.out.Text())
	}
	return nil
}

func (h *helper) close() {
	h.in.Close()
	h.cmd.Wait()
}

func (a *agent) line(id string, n int) []byte {
	return fmt.Appendf(nil, `{"type": "message", "id": %q, "seq": %d, "role": "assistant", "text": "step %d done"}`+"\n", id, n, n)
}

func (a *agent) create(ctx context.Context) (*session, error) {
	a.close()
	a.n++
	s := &session{path: filepath.Join(a.dir, fmt.Sprintf("run-%s-%d.jsonl", a.tag, a.n))}
	app, err := startHelper("appender", s.path)
	if err != nil {
		return nil, err
	}
	a.app = app
	id := a.host.newID("ag" + a.tag)
	s.ids = []string{id}
	s.last = a.line(id, 0)
	if err := a.send(s.last); err != nil {
		return nil, err
	}
	s.ino = inode(s.path)
	return s, nil
}

func (a *agent) lock(context.Context, *session) (func(), error) { return func() {}, nil }

func (a *agent) write(s *session, id string) ([]byte, error) {
	l := a.line(id, len(s.ids))
	return append(append([]byte(nil), s.last...), l...), a.send(l)
}

func (a *agent) damage(ctx context.Context, rng *rand.Rand, s *session, racing bool) (string, []byte, error) {
	kind, tail := "garbage-line", "this is not json\n"
	switch x := rng.IntN(3); {
	case racing:
	case x == 0:
		kind, tail = "torn-tail", `{"type": "message", "id": "ag-torn", "se`
	case x == 1:
		kind, tail = "trailing-garbage", "}}garbage"
	}
	return kind, append(append([]byte(nil), s.last...), tail...), a.send([]byte(tail))
}

// putBack: the transcript cannot be rewritten under the agent's descriptor; cut it back.
func (a *agent) putBack(s *session, b []byte) error {
	cur, err := os.ReadFile(s.path)
	if err != nil {
		return err
	}
	if !bytes.HasPrefix(cur, b) {
		return fmt.Errorf("the transcript no longer starts with what the agent wrote")
	}
	return os.Truncate(s.path, int64(len(b)))
}
