package lock

import (
	"context"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"regexp"
	"testing"
	"time"
)

// ovFixture is <tmp>/ws/viking/default/user/default/sessions/demo-live.
type ovFixture struct {
	ws, viking, user, sessions, sid string
}

func newOVFixture(t *testing.T) ovFixture {
	t.Helper()
	ws := filepath.Join(t.TempDir(), "ws")
	f := ovFixture{ws: ws, viking: filepath.Join(ws, "viking")}
	f.user = filepath.Join(f.viking, "default", "user", "default")
	f.sessions = filepath.Join(f.user, "sessions")
	f.sid = filepath.Join(f.sessions, "demo-live")
	if err := os.MkdirAll(filepath.Join(f.sid, "history", "archive_001"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(f.sid, "messages.jsonl"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	return f
}

func writeFile(t *testing.T, path, body string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
}

func readFile(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func exists(path string) bool {
	_, err := os.Lstat(path)
	return err == nil
}

func liveToken(kind byte) string {
	return fmt.Sprintf("0f3c2b1a-9d8e-4f70-8a6b-5c4d3e2f1a0b:%d:%c", time.Now().UnixNano(), kind)
}

var uuid4Token = regexp.MustCompile(`^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}:[0-9]+:T$`)

func mustOV(t *testing.T, sid, root string, o Options) *OVLock {
	t.Helper()
	h, err := OpenViking(context.Background(), sid, root, o)
	if err != nil {
		t.Fatalf("OpenViking: %v", err)
	}
	return h.(*OVLock)
}

func TestOpenVikingAcquireRelease(t *testing.T) {
	f := newOVFixture(t)
	now := time.Date(2026, 11, 21, 8, 0, 0, 123456789, time.UTC)
	h := mustOV(t, f.sid, "", Options{Now: func() time.Time { return now }})
	lockPath := filepath.Join(f.sid, ".path.ovlock")
	body := readFile(t, lockPath)
	if !uuid4Token.MatchString(body) {
		t.Fatalf("token %q: not <uuid4>:<ns>:T without newline", body)
	}
	owner, ns, kind, ok := ParseOVToken([]byte(body))
	if !ok || owner != h.Owner() || ns != now.UnixNano() || kind != 'T' {
		t.Fatalf("ParseOVToken(%q) = %q %d %c %v", body, owner, ns, kind, ok)
	}
	if h.Path() != lockPath || string(h.Token()) != body {
		t.Fatalf("Path/Token = %q %q", h.Path(), h.Token())
	}

	// A second acquirer sees our live token.
	later := func() time.Time { return now.Add(30 * time.Second) }
	if _, err := OpenViking(context.Background(), f.sid, "", Options{Now: later}); !errors.Is(err, ErrBusy) {
		t.Fatalf("second acquire: %v, want ErrBusy", err)
	}
	// 30 s + 1 ns later it is stale and a second acquirer breaks it.
	stale := func() time.Time { return now.Add(30*time.Second + 1) }
	h2, err := OpenViking(context.Background(), f.sid, "", Options{Now: stale})
	if err != nil {
		t.Fatalf("acquire over a stale token: %v", err)
	}
	if err := h.Release(); !errors.Is(err, ErrLost) {
		t.Fatalf("Release after being broken: %v, want ErrLost", err)
	}
	if err := h2.Release(); err != nil {
		t.Fatal(err)
	}
	h = mustOV(t, f.sid, "", Options{})

	if err := h.Release(); err != nil {
		t.Fatal(err)
	}
	if exists(lockPath) {
		t.Fatal("token left after Release")
	}
	if err := h.Release(); err != nil {
		t.Fatalf("second Release: %v", err)
	}
	if !exists(filepath.Join(f.sid, "messages.jsonl")) {
		t.Fatal("session file touched")
	}
}

func TestOpenVikingLiveAncestorTreeToken(t *testing.T) {
	f := newOVFixture(t)
	for _, dir := range []string{f.sessions, f.user, f.viking} {
		p := filepath.Join(dir, ".path.ovlock")
		writeFile(t, p, liveToken('T'))
		if _, err := OpenViking(context.Background(), f.sid, "", Options{}); !errors.Is(err, ErrBusy) {
			t.Fatalf("ancestor %s: %v, want ErrBusy", dir, err)
		}
		if exists(filepath.Join(f.sid, ".path.ovlock")) {
			t.Fatal("token left behind after busy")
		}
		if !exists(p) {
			t.Fatal("ancestor token removed")
		}
		os.Remove(p)
	}

	// An exact (E) token on an ancestor does not cover descendants.
	writeFile(t, filepath.Join(f.sessions, ".path.ovlock"), liveToken('E'))
	h := mustOV(t, f.sid, "", Options{})
	if err := h.Release(); err != nil {
		t.Fatal(err)
	}

	// Above root (the viking dir) is not checked.
	os.Remove(filepath.Join(f.sessions, ".path.ovlock"))
	writeFile(t, filepath.Join(f.ws, ".path.ovlock"), liveToken('T'))
	h = mustOV(t, f.sid, "", Options{})
	if err := h.Release(); err != nil {
		t.Fatal(err)
	}
	// ... unless root says so.
	if _, err := OpenViking(context.Background(), f.sid, filepath.Dir(f.ws), Options{}); !errors.Is(err, ErrBusy) {
		t.Fatalf("root above ws: %v, want ErrBusy", err)
	}
	// An explicit root that does not contain sid is an error.
	if _, err := OpenViking(context.Background(), f.sid, f.sid+"x", Options{}); err == nil || errors.Is(err, ErrBusy) {
		t.Fatalf("foreign root: %v, want a plain error", err)
	}
}

func TestOpenVikingStaleTokenIsBroken(t *testing.T) {
	f := newOVFixture(t)
	lockPath := filepath.Join(f.sid, ".path.ovlock")
	const sample = "deadbeefdeadbeef:1795246000000000000:T" // samples/openviking/stale_path_lock
	writeFile(t, lockPath, sample)
	now := time.Unix(0, 1795246000000000000).Add(time.Hour)
	o := Options{Now: func() time.Time { return now }}

	h := mustOV(t, f.sid, "", o)
	body := readFile(t, lockPath)
	if body == sample || !uuid4Token.MatchString(body) {
		t.Fatalf("token after break: %q", body)
	}
	if err := h.Release(); err != nil {
		t.Fatal(err)
	}

	// The same token 10 s old is live.
	writeFile(t, lockPath, sample)
	young := time.Unix(0, 1795246000000000000).Add(10 * time.Second)
	if _, err := OpenViking(context.Background(), f.sid, "", Options{Now: func() time.Time { return young }}); !errors.Is(err, ErrBusy) {
		t.Fatalf("10 s old token: %v, want ErrBusy", err)
	}
	if readFile(t, lockPath) != sample {
		t.Fatal("live token modified")
	}

	// Stale tokens elsewhere are not conflicts and are left alone.
	os.Remove(lockPath)
	for _, p := range []string{
		filepath.Join(f.sessions, ".path.ovlock"),
		filepath.Join(f.sessions, ".exact.ovlock.demo-live.0123456789abcdef"),
		filepath.Join(f.sid, "history", ".path.ovlock"),
	} {
		writeFile(t, p, sample)
	}
	h = mustOV(t, f.sid, "", o)
	if err := h.Release(); err != nil {
		t.Fatal(err)
	}
	if readFile(t, filepath.Join(f.sid, "history", ".path.ovlock")) != sample {
		t.Fatal("stale descendant token touched")
	}
}

func TestOpenVikingLiveTokenBelowSid(t *testing.T) {
	f := newOVFixture(t)
	for _, p := range []string{
		filepath.Join(f.sid, "history", "archive_001", ".exact.ovlock.messages.jsonl.0123456789abcdef"),
		filepath.Join(f.sid, "history", ".path.ovlock"),
		filepath.Join(f.sid, ".exact.ovlock.messages.jsonl.fedcba9876543210"),
	} {
		kind := byte('E')
		if filepath.Base(p) == ".path.ovlock" {
			kind = 'T'
		}
		writeFile(t, p, liveToken(kind))
		if _, err := OpenViking(context.Background(), f.sid, "", Options{}); !errors.Is(err, ErrBusy) {
			t.Fatalf("live %s: %v, want ErrBusy", p, err)
		}
		if exists(filepath.Join(f.sid, ".path.ovlock")) {
			t.Fatal("token left behind after busy")
		}
		os.Remove(p)
	}
	h := mustOV(t, f.sid, "", Options{})
	h.Release()
}

func TestOpenVikingExactSidecarInParent(t *testing.T) {
	f := newOVFixture(t)
	own := filepath.Join(f.sessions, ".exact.ovlock.demo-live.0123456789abcdef")
	writeFile(t, own, liveToken('E'))
	if _, err := OpenViking(context.Background(), f.sid, "", Options{}); !errors.Is(err, ErrBusy) {
		t.Fatalf("live exact sidecar: %v, want ErrBusy", err)
	}
	os.Remove(own)

	// Sidecars of other names in sessions/ are not ours to care about.
	for _, name := range []string{
		".exact.ovlock.demo-live2.0123456789abcdef",
		".exact.ovlock.demo-live.x.0123456789abcdef",
		".exact.ovlock.demo-live.0123",
	} {
		writeFile(t, filepath.Join(f.sessions, name), liveToken('E'))
	}
	h := mustOV(t, f.sid, "", Options{})
	if err := h.Release(); err != nil {
		t.Fatal(err)
	}

	// The sidecar name uses safe_name of the directory name.
	odd := filepath.Join(f.sessions, "chat 1")
	if err := os.Mkdir(odd, 0o755); err != nil {
		t.Fatal(err)
	}
	writeFile(t, filepath.Join(f.sessions, ".exact.ovlock.chat_1.0123456789abcdef"), liveToken('E'))
	if _, err := OpenViking(context.Background(), odd, "", Options{}); !errors.Is(err, ErrBusy) {
		t.Fatalf("safe-named sidecar: %v, want ErrBusy", err)
	}
}

func TestOpenVikingUnparseableTokens(t *testing.T) {
	f := newOVFixture(t)
	lockPath := filepath.Join(f.sid, ".path.ovlock")
	old := time.Now().Add(-time.Minute)
	for _, body := range []string{"", "not-a-token", "owner:100:P"} {
		writeFile(t, lockPath, body)
		if _, err := OpenViking(context.Background(), f.sid, "", Options{}); !errors.Is(err, ErrBusy) {
			t.Fatalf("fresh %q: %v, want ErrBusy", body, err)
		}
		if readFile(t, lockPath) != body {
			t.Fatal("fresh unparseable token modified")
		}
		if err := os.Chtimes(lockPath, old, old); err != nil {
			t.Fatal(err)
		}
		h := mustOV(t, f.sid, "", Options{})
		if !uuid4Token.MatchString(readFile(t, lockPath)) {
			t.Fatal("old unparseable token not replaced")
		}
		h.Release()
	}
	// A legacy encrypted token is an upgrade leftover the app removes.
	writeFile(t, lockPath, "OVE1legacy-ciphertext")
	h := mustOV(t, f.sid, "", Options{})
	h.Release()

	// Unparseable below sid: same mtime rule.
	below := filepath.Join(f.sid, "history", ".path.ovlock")
	writeFile(t, below, "garbage")
	if _, err := OpenViking(context.Background(), f.sid, "", Options{}); !errors.Is(err, ErrBusy) {
		t.Fatalf("fresh garbage below: %v, want ErrBusy", err)
	}
	os.Chtimes(below, old, old)
	h = mustOV(t, f.sid, "", Options{})
	h.Release()
	if readFile(t, below) != "garbage" {
		t.Fatal("descendant garbage touched")
	}
}

// A conflict that appears after our token was written (the TOCTOU
// post-check) makes us remove our token and back off.
func TestOpenVikingPostCheck(t *testing.T) {
	f := newOVFixture(t)
	lockPath := filepath.Join(f.sid, ".path.ovlock")
	late := filepath.Join(f.sid, "history", "archive_001", ".exact.ovlock.messages.jsonl.0123456789abcdef")
	created := 0
	testHookOVCreated = func(sid string) {
		created++
		if !uuid4Token.MatchString(readFile(t, lockPath)) {
			t.Error("hook ran before our token was written")
		}
		writeFile(t, late, liveToken('E'))
	}
	t.Cleanup(func() { testHookOVCreated = nil })
	if _, err := OpenViking(context.Background(), f.sid, "", Options{}); !errors.Is(err, ErrBusy) {
		t.Fatalf("late conflict: %v, want ErrBusy", err)
	}
	if created != 1 {
		t.Fatalf("hook ran %d times", created)
	}
	if exists(lockPath) {
		t.Fatal("our token left after the post-check conflict")
	}
}

func TestOpenVikingReleaseLeavesForeignToken(t *testing.T) {
	f := newOVFixture(t)
	h := mustOV(t, f.sid, "", Options{})
	lockPath := filepath.Join(f.sid, ".path.ovlock")
	theirs := liveToken('T')
	writeFile(t, lockPath, theirs) // same inode, other bytes
	if err := h.Release(); !errors.Is(err, ErrLost) {
		t.Fatalf("Release of a replaced token: %v, want ErrLost", err)
	}
	if readFile(t, lockPath) != theirs {
		t.Fatal("foreign token removed")
	}

	// Removed by someone else: nothing to do, the token is lost.
	os.Remove(lockPath)
	h = mustOV(t, f.sid, "", Options{})
	os.Remove(lockPath)
	if err := h.Release(); !errors.Is(err, ErrLost) {
		t.Fatalf("Release of a removed token: %v, want ErrLost", err)
	}
}

func TestOpenVikingRefresh(t *testing.T) {
	f := newOVFixture(t)
	now := time.Unix(0, 1795246000000000000)
	clock := func() time.Time { return now }
	h := mustOV(t, f.sid, "", Options{Now: clock})
	lockPath := filepath.Join(f.sid, ".path.ovlock")
	before, _ := os.Stat(lockPath)

	now = now.Add(20 * time.Second)
	if err := h.Refresh(); err != nil {
		t.Fatal(err)
	}
	body := readFile(t, lockPath)
	_, ns, _, ok := ParseOVToken([]byte(body))
	if !ok || ns != now.UnixNano() || string(h.Token()) != body {
		t.Fatalf("after Refresh: %q", body)
	}
	after, _ := os.Stat(lockPath)
	if inodeOf(t, before) != inodeOf(t, after) {
		t.Fatal("Refresh replaced the inode")
	}

	// After a refresh the token is still ours to release.
	theirs := liveToken('T')
	writeFile(t, lockPath, theirs)
	if err := h.Refresh(); !errors.Is(err, ErrLost) {
		t.Fatalf("Refresh of a replaced token: %v, want ErrLost", err)
	}
	if readFile(t, lockPath) != theirs {
		t.Fatal("Refresh overwrote a foreign token")
	}
	os.Remove(lockPath)
	h = mustOV(t, f.sid, "", Options{Now: clock})
	now = now.Add(time.Second)
	if err := h.Refresh(); err != nil {
		t.Fatal(err)
	}
	if err := h.Release(); err != nil {
		t.Fatal(err)
	}
	if exists(lockPath) {
		t.Fatal("token left after Release following Refresh")
	}
}

func TestOpenVikingNotADirectory(t *testing.T) {
	f := newOVFixture(t)
	if _, err := OpenViking(context.Background(), filepath.Join(f.sid, "messages.jsonl"), "", Options{}); err == nil || errors.Is(err, ErrBusy) {
		t.Fatalf("file as sid: %v", err)
	}
	if _, err := OpenViking(context.Background(), filepath.Join(f.sid, "missing"), "", Options{}); err == nil || errors.Is(err, ErrBusy) {
		t.Fatalf("missing sid: %v", err)
	}
}

func TestOpenVikingSafeName(t *testing.T) {
	long := ""
	for range 100 {
		long += "a"
	}
	for in, want := range map[string]string{
		"hello world":     "hello_world",
		"a/b":             "a_b",
		"ok.txt":          "ok.txt",
		"中文名":             "path",
		"":                "path",
		"中文 name..txt":    "name..txt",
		"__a__":           "a",
		"..x..":           "x",
		"a  b\tc":         "a_b_c",
		"demo-live":       "demo-live",
		"a中b":             "a_b",
		long:              long[:80],
		"_" + long + "x":  long[:80],
		"x!@#$%^&*()y.md": "x_y.md",
	} {
		if got := OpenVikingSafeName(in); got != want {
			t.Errorf("OpenVikingSafeName(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestParseOVToken(t *testing.T) {
	good := []struct {
		in    string
		owner string
		ns    int64
		kind  byte
	}{
		{"deadbeefdeadbeef:1795246000000000000:T", "deadbeefdeadbeef", 1795246000000000000, 'T'},
		{"owner:123:E", "owner", 123, 'E'},
		{" abc-123:42:T\n", "abc-123", 42, 'T'},
		{":7:E", "", 7, 'E'},
		{"o:+9:T", "o", 9, 'T'},
		{"o:99999999999999999999:T", "o", math.MaxInt64, 'T'},
	}
	for _, c := range good {
		owner, ns, kind, ok := ParseOVToken([]byte(c.in))
		if !ok || owner != c.owner || ns != c.ns || kind != c.kind {
			t.Errorf("ParseOVToken(%q) = %q %d %c %v", c.in, owner, ns, kind, ok)
		}
	}
	for _, in := range []string{
		"owner:100:P", "owner:100:S", "no-colons", "a:b:c:d", "owner:100:E:1",
		"a:not-a-number:E", "a::T", "a:-1:T", "a:1:", "a:1:TT", "a:1 :T", "",
		"o:999999999999999999999999999999999999999999:T",
	} {
		if _, _, _, ok := ParseOVToken([]byte(in)); ok {
			t.Errorf("ParseOVToken(%q) accepted", in)
		}
	}
}
