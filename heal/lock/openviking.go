package lock

import (
	"bytes"
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"io/fs"
	"math"
	"math/big"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/sessionmedic/sessionmedic/internal/pathx"
	"github.com/sessionmedic/sessionmedic/internal/resolve"
	"golang.org/x/sys/unix"
)

// OpenViking PathLock file names (crates/ragfs core/internal_names.rs).
const (
	OVPathLockName    = ".path.ovlock"
	OVExactLockPrefix = ".exact.ovlock."
)

// OVDefaultStale is OpenViking's default lock_expire_secs.
const OVDefaultStale = 30 * time.Second

// testHookOVCreated, when set by tests, runs right after our token file was
// created and before the post-check.
var testHookOVCreated func(sid string)

// OpenVikingSafeName is OpenViking's safe_name rule for exact-lock sidecar
// names: ASCII letters, digits, '.', '_' and '-' are kept, each run of other
// characters becomes one '_', leading and trailing '.' and '_' are trimmed,
// an empty result becomes "path", and at most 80 characters are kept.
func OpenVikingSafeName(base string) string {
	var b strings.Builder
	replacing := false
	for _, c := range base {
		if c < 0x80 && (c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '.' || c == '_' || c == '-') {
			b.WriteRune(c)
			replacing = false
		} else if !replacing {
			b.WriteByte('_')
			replacing = true
		}
	}
	s := strings.Trim(b.String(), "._")
	if s == "" {
		s = "path"
	}
	if len(s) > 80 { // only ASCII is left, so bytes are characters
		s = s[:80]
	}
	return s
}

// u128Max is the largest time_ns OpenViking's decoder (u128) accepts.
var u128Max = new(big.Int).Sub(new(big.Int).Lsh(big.NewInt(1), 128), big.NewInt(1))

// ParseOVToken decodes an OpenViking lock token `<owner_id>:<time_ns>:<kind>`
// the way OpenViking's LockTokenCodec does: surrounding whitespace is
// trimmed, owner_id is everything before the first ':' (any string),
// time_ns is an unsigned decimal (a leading '+' is accepted, as Rust's u128
// parser does), and kind is exactly one character, 'T' or 'E'. Anything else
// is rejected (ok == false). A time_ns beyond int64 (valid for the app's
// u128) is returned as math.MaxInt64, i.e. far in the future.
func ParseOVToken(b []byte) (owner string, ns int64, kind byte, ok bool) {
	raw := strings.TrimSpace(string(b))
	owner, rest, found := strings.Cut(raw, ":")
	if !found {
		return "", 0, 0, false
	}
	ts, k, found := strings.Cut(rest, ":")
	if !found || len(k) != 1 || (k[0] != 'T' && k[0] != 'E') {
		return "", 0, 0, false
	}
	digits := strings.TrimPrefix(ts, "+")
	if digits == "" {
		return "", 0, 0, false
	}
	for i := 0; i < len(digits); i++ {
		if digits[i] < '0' || digits[i] > '9' {
			return "", 0, 0, false
		}
	}
	if v, err := strconv.ParseInt(digits, 10, 64); err == nil {
		ns = v
	} else {
		n, good := new(big.Int).SetString(digits, 10)
		if !good || n.Cmp(u128Max) > 0 {
			return "", 0, 0, false
		}
		ns = math.MaxInt64
	}
	return owner, ns, k[0], true
}

func newUUID4() (string, error) {
	var u [16]byte
	if _, err := rand.Read(u[:]); err != nil {
		return "", err
	}
	u[6] = u[6]&0x0f | 0x40
	u[8] = u[8]&0x3f | 0x80
	return fmt.Sprintf("%x-%x-%x-%x-%x", u[0:4], u[4:6], u[6:8], u[8:10], u[10:16]), nil
}

func ovToken(owner string, ns int64) []byte {
	return []byte(owner + ":" + strconv.FormatInt(ns, 10) + ":T")
}

// ovState is the judgement of one lock file.
type ovState struct {
	live   bool
	parsed bool
	owner  string
	kind   byte
}

// judgeOV decides whether a token file is live, following OpenViking's
// reader:
//   - a parseable token is live while now_ns - time_ns <= stale;
//   - an empty file is live while its mtime is younger than stale (the app
//     treats an old empty token as absent);
//   - a legacy encrypted token (starts with "OVE1") is not live (the app
//     removes it as an upgrade leftover);
//   - any other unparseable body is rejected by the app (its acquire fails
//     outright); we treat it as live unless its mtime is older than stale.
func judgeOV(s snapshot, now time.Time, stale time.Duration) ovState {
	if owner, ns, kind, ok := ParseOVToken(s.data); ok {
		age := new(big.Int).Sub(big.NewInt(now.UnixNano()), big.NewInt(ns))
		return ovState{
			live:   age.Cmp(big.NewInt(int64(stale))) <= 0,
			parsed: true,
			owner:  owner,
			kind:   kind,
		}
	}
	if bytes.HasPrefix(s.data, []byte("OVE1")) {
		return ovState{}
	}
	return ovState{live: now.Sub(s.mtime) <= stale}
}

// ovLocker holds the parameters of one OpenViking acquisition.
type ovLocker struct {
	sid, root string
	owner     string
	o         Options
	stale     time.Duration
}

// OpenViking takes OpenViking's PathLock tree lock on a session directory
// (openviking.md "Taking the session lock from outside", steps 1-6): it
// creates sid/.path.ovlock with O_WRONLY|O_CREAT|O_EXCL and the body
// `<uuid4>:<unix_ns>:T` (no newline) after checking, and re-checking once the
// token exists, that there is
//   - no live T token of another owner in a .path.ovlock of any ancestor
//     from the parent of sid up to and including root,
//   - no live `.exact.ovlock.<safe_name(basename sid)>.<16 hex>` in the
//     parent of sid (the directory's own exact sidecar),
//   - no live .path.ovlock or .exact.ovlock.* anywhere below sid.
//
// On a conflict found after creation our token is removed again. Stale
// tokens (now_ns - time_ns > o.Stale, default 30 s) are not conflicts; a
// stale token at sid/.path.ovlock itself is broken by re-reading it and
// unlinking it only if the bytes are identical. See judgeOV for unparseable
// token files.
//
// root is the `<workspace>/viking` directory (the app's backend `/local`
// mount) and must contain sid. If root is "", the nearest ancestor of sid
// named "viking" is used; if there is none the walk goes up to "/" (extra
// ancestors only cost a stat each and can only add conflicts).
//
// The returned Held is an *OVLock, which can also Refresh the token.
func OpenViking(ctx context.Context, sid, root string, o Options) (Held, error) {
	sid, err := filepath.Abs(sid)
	if err != nil {
		return nil, err
	}
	st, err := resolve.Lstat(sid)
	if err != nil {
		return nil, err
	}
	if st.Mode&unix.S_IFMT != unix.S_IFDIR {
		return nil, fmt.Errorf("openviking lock: %s is not a directory", sid)
	}
	if root == "" {
		root = ovDefaultRoot(sid)
	} else {
		if root, err = filepath.Abs(root); err != nil {
			return nil, err
		}
		if !pathx.Within(root, sid) {
			return nil, fmt.Errorf("openviking lock: %s is not inside root %s", sid, root)
		}
	}
	owner, err := newUUID4()
	if err != nil {
		return nil, err
	}
	l := &ovLocker{sid: sid, root: root, owner: owner, o: o, stale: o.stale(OVDefaultStale)}
	lockPath := filepath.Join(sid, OVPathLockName)
	return acquire(ctx, o, lockPath, l.try)
}

func ovDefaultRoot(sid string) string {
	for d := filepath.Dir(sid); ; d = filepath.Dir(d) {
		if filepath.Base(d) == "viking" {
			return d
		}
		if d == filepath.Dir(d) {
			return d
		}
	}
}

func (l *ovLocker) try() (Held, error) {
	if err := l.conflicts(); err != nil {
		return nil, err
	}
	if l.o.Probe {
		// Every live token of another owner is a conflict, sid's own .path.ovlock included
		// (our owner is new); a stale one there a heal would break.
		return nothingHeld{}, nil
	}
	lockPath := filepath.Join(l.sid, OVPathLockName)
	body := ovToken(l.owner, l.o.now().UnixNano())
	snap, err := createExcl(lockPath, 0o644, body, l.o.Faults)
	if err != nil {
		if !errors.Is(err, fs.ErrExist) {
			return nil, fmt.Errorf("create %s: %w", lockPath, err)
		}
		return nil, l.existing(lockPath)
	}
	if testHookOVCreated != nil {
		testHookOVCreated(l.sid)
	}
	if err := l.conflicts(); err != nil {
		if _, rerr := removeIfSame(lockPath, snap); rerr != nil {
			return nil, errors.Join(err, fmt.Errorf("remove own token %s: %w", lockPath, rerr))
		}
		return nil, err
	}
	return &OVLock{tokenHeld: tokenHeld{path: lockPath, snap: snap}, owner: l.owner, now: l.o.now}, nil
}

// existing handles EEXIST on sid/.path.ovlock: busy if live, else break it by
// compare-and-remove and ask for an immediate retry.
func (l *ovLocker) existing(lockPath string) error {
	s, err := readSnapshot(lockPath)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return errRetry
		}
		return fmt.Errorf("read %s: %w", lockPath, err)
	}
	st := judgeOV(s, l.o.now(), l.stale)
	if st.live {
		return busy(lockPath, ovHolder(st))
	}
	if _, err := removeIfSame(lockPath, s); err != nil {
		return fmt.Errorf("break stale %s: %w", lockPath, err)
	}
	return errRetry
}

func ovHolder(st ovState) string {
	if !st.parsed {
		return "unparseable token"
	}
	return fmt.Sprintf("owner %s kind %c", st.owner, st.kind)
}

// conflicts runs the checks of step 1 (and step 3), ignoring our own token.
func (l *ovLocker) conflicts() error {
	now := l.o.now()
	// Ancestors: a live T token of another owner.
	if l.sid != l.root {
		for d := filepath.Dir(l.sid); ; d = filepath.Dir(d) {
			p := filepath.Join(d, OVPathLockName)
			s, err := readSnapshot(p)
			switch {
			case err == nil:
				st := judgeOV(s, now, l.stale)
				if st.live && (!st.parsed || (st.kind == 'T' && st.owner != l.owner)) {
					return busy(p, ovHolder(st))
				}
			case !errors.Is(err, fs.ErrNotExist) && !errors.Is(err, fs.ErrPermission):
				return fmt.Errorf("read %s: %w", p, err)
			}
			if d == l.root || d == filepath.Dir(d) {
				break
			}
		}
	}
	// The session directory's own exact sidecar in its parent.
	parent := filepath.Dir(l.sid)
	prefix := OVExactLockPrefix + OpenVikingSafeName(filepath.Base(l.sid)) + "."
	ents, err := resolve.ReadDir(parent)
	if err != nil {
		return fmt.Errorf("read dir %s: %w", parent, err)
	}
	for _, e := range ents {
		name := e.Name()
		if !strings.HasPrefix(name, prefix) || !isHex16(name[len(prefix):]) {
			continue
		}
		if err := l.checkAny(filepath.Join(parent, name), now); err != nil {
			return err
		}
	}
	// Every lock file below sid, its own .path.ovlock included.
	return walkNoLinks(l.sid, func(p string, d fs.DirEntry) error {
		name := d.Name()
		if name != OVPathLockName && !strings.HasPrefix(name, OVExactLockPrefix) {
			return nil
		}
		return l.checkAny(p, now)
	})
}

// walkNoLinks calls fn for every name that is not a directory below dir, in lexical order,
// listing each directory through the resolver (a directory swapped for a symlink is not
// entered: an error). A directory that disappears meanwhile is skipped.
func walkNoLinks(dir string, fn func(p string, d fs.DirEntry) error) error {
	ents, err := resolve.ReadDir(dir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	for _, e := range ents {
		p := filepath.Join(dir, e.Name())
		if e.IsDir() {
			err = walkNoLinks(p, fn)
		} else {
			err = fn(p, e)
		}
		if err != nil {
			return err
		}
	}
	return nil
}

// checkAny reports a live lock file of another owner, of either kind.
func (l *ovLocker) checkAny(p string, now time.Time) error {
	s, err := readSnapshot(p)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return nil
		}
		return fmt.Errorf("read %s: %w", p, err)
	}
	st := judgeOV(s, now, l.stale)
	if st.live && (!st.parsed || st.owner != l.owner) {
		return busy(p, ovHolder(st))
	}
	return nil
}

func isHex16(s string) bool {
	if len(s) != 16 {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !(c >= '0' && c <= '9' || c >= 'a' && c <= 'f') {
			return false
		}
	}
	return true
}

var _ Held = (*OVLock)(nil)

// OVLock is a held OpenViking tree lock (sid/.path.ovlock).
type OVLock struct {
	tokenHeld // Release: compare-and-remove (step 5)
	owner     string
	now       func() time.Time
}

// Path is the token file, sid/.path.ovlock.
func (h *OVLock) Path() string { return h.path }

// Owner is our owner id (a UUIDv4).
func (h *OVLock) Owner() string { return h.owner }

// Token is the token body currently written by us.
func (h *OVLock) Token() []byte {
	h.mu.Lock()
	defer h.mu.Unlock()
	return append([]byte(nil), h.snap.data...)
}

// Refresh rewrites the token with the current time_ns, only if the file
// still holds our bytes (step 4; OpenViking's holders refresh every 10 s). The
// rewrite is in place, without truncating first, so readers never see an
// empty token. It returns ErrLost if the token is no longer ours.
func (h *OVLock) Refresh() error {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.done {
		return errors.New("openviking lock: refresh after release")
	}
	cur, err := readSnapshot(h.path)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return fmt.Errorf("%w: %s", ErrLost, h.path)
		}
		return err
	}
	if !cur.same(h.snap) {
		return fmt.Errorf("%w: %s", ErrLost, h.path)
	}
	body := ovToken(h.owner, h.now().UnixNano())
	fd, err := openLock(h.path, unix.O_WRONLY, 0)
	if err != nil {
		return err
	}
	f := os.NewFile(uintptr(fd), h.path)
	fi, err := f.Stat()
	if err == nil {
		if id, _ := idOf(fi); id != h.snap.id {
			f.Close()
			return fmt.Errorf("%w: %s", ErrLost, h.path)
		}
	}
	if err == nil {
		_, err = f.WriteAt(body, 0)
	}
	if err == nil && int64(len(body)) != cur.size {
		err = f.Truncate(int64(len(body)))
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return err
	}
	h.snap = snapshot{data: body, id: h.snap.id, size: int64(len(body))}
	return nil
}
