package lock

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"
)

func ocBody(pid int, createdAt time.Time, starttime uint64) string {
	return fmt.Sprintf("{\n  \"pid\": %d,\n  \"createdAt\": %q,\n  \"starttime\": %d\n}",
		pid, createdAt.UTC().Format(jsISOLayout), starttime)
}

// liveChild starts a helper that stays alive until the test ends, and
// returns its pid and /proc starttime.
func liveChild(t *testing.T) (int, uint64) {
	t.Helper()
	h := startHelper(t, "wait", "", "ready")
	pid := h.cmd.Process.Pid
	st, ok := procStartTime(pid)
	if !ok {
		t.Fatal("no starttime for child")
	}
	return pid, st
}

func ocDir(t *testing.T) string {
	t.Helper()
	d := filepath.Join(t.TempDir(), "agents", "main", "sessions")
	if err := os.MkdirAll(d, 0o755); err != nil {
		t.Fatal(err)
	}
	return d
}

var isoMs = regexp.MustCompile(`^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$`)

func TestOpenClawBodyFormat(t *testing.T) {
	for _, transcript := range []bool{false, true} {
		dir := ocDir(t)
		lockPath := filepath.Join(dir, "sessions.json.lock")
		wantKeys := []string{"pid", "createdAt", "starttime"}
		if transcript {
			lockPath = filepath.Join(dir, "0b7c7a52-1f0e-4c55-9a3f-2f8f3c1d9e11.jsonl.lock")
			wantKeys = []string{"pid", "createdAt", "maxHoldMs", "starttime"}
		}
		now := time.Date(2026, 11, 21, 7, 42, 27, 239_430_000, time.FixedZone("x", 3600))
		h, err := OpenClaw(context.Background(), lockPath, transcript, Options{Now: func() time.Time { return now }})
		if err != nil {
			t.Fatal(err)
		}
		raw, err := os.ReadFile(lockPath)
		if err != nil {
			t.Fatal(err)
		}
		if bytes.HasSuffix(raw, []byte("\n")) {
			t.Errorf("trailing newline in %q", raw)
		}
		lines := strings.Split(string(raw), "\n")
		if lines[0] != "{" || lines[len(lines)-1] != "}" || len(lines) != len(wantKeys)+2 {
			t.Fatalf("body layout:\n%s", raw)
		}
		for i, k := range wantKeys {
			prefix := fmt.Sprintf("  %q: ", k)
			if !strings.HasPrefix(lines[i+1], prefix) {
				t.Errorf("line %d = %q, want prefix %q", i+1, lines[i+1], prefix)
			}
		}
		var v struct {
			Pid       int     `json:"pid"`
			CreatedAt string  `json:"createdAt"`
			Starttime *uint64 `json:"starttime"`
			MaxHoldMs *int    `json:"maxHoldMs"`
		}
		if err := json.Unmarshal(raw, &v); err != nil {
			t.Fatal(err)
		}
		st, _ := procStartTime(os.Getpid())
		if v.Pid != os.Getpid() || v.Starttime == nil || *v.Starttime != st {
			t.Errorf("pid/starttime = %d/%v, want %d/%d", v.Pid, v.Starttime, os.Getpid(), st)
		}
		if v.CreatedAt != "2026-11-21T06:42:27.239Z" || !isoMs.MatchString(v.CreatedAt) {
			t.Errorf("createdAt = %q", v.CreatedAt)
		}
		if transcript != (v.MaxHoldMs != nil) || (transcript && *v.MaxHoldMs != 300000) {
			t.Errorf("maxHoldMs = %v", v.MaxHoldMs)
		}
		// Our own body re-indented by a JSON pretty-printer is unchanged,
		// i.e. it is exactly JSON.stringify(v, null, 2).
		var buf bytes.Buffer
		if err := json.Indent(&buf, raw, "", "  "); err != nil || buf.String() != string(raw) {
			t.Errorf("not 2-space JSON: %q", raw)
		}
		fi, _ := os.Stat(lockPath)
		if fi.Mode().Perm() != 0o600 {
			t.Errorf("mode %v", fi.Mode().Perm())
		}
		// A live lock (ours) keeps others out.
		if _, err := OpenClaw(context.Background(), lockPath, transcript, Options{Now: func() time.Time { return now.Add(time.Second) }}); !errors.Is(err, ErrBusy) {
			t.Errorf("second acquire: %v, want ErrBusy", err)
		}
		if err := h.Release(); err != nil {
			t.Fatal(err)
		}
		if exists(lockPath) {
			t.Fatal("lock left after Release")
		}
		if err := h.Release(); err != nil {
			t.Fatalf("second Release: %v", err)
		}
	}
}

func TestOpenClawLiveLockIsBusy(t *testing.T) {
	lockPath := filepath.Join(ocDir(t), "sessions.json.lock")
	pid, st := liveChild(t)
	body := ocBody(pid, time.Now(), st)
	writeFile(t, lockPath, body)
	wait := 120 * time.Millisecond
	start := time.Now()
	_, err := OpenClaw(context.Background(), lockPath, false, Options{Wait: wait})
	if !errors.Is(err, ErrBusy) {
		t.Fatalf("live lock: %v, want ErrBusy", err)
	}
	if time.Since(start) < wait {
		t.Fatal("gave up before the wait")
	}
	if readFile(t, lockPath) != body {
		t.Fatal("live lock modified")
	}
	// Without starttime (unreadable for the holder) it is live as well.
	body = fmt.Sprintf("{\n  \"pid\": %d,\n  \"createdAt\": %q\n}", pid, time.Now().UTC().Format(jsISOLayout))
	writeFile(t, lockPath, body)
	if _, err := OpenClaw(context.Background(), lockPath, false, Options{}); !errors.Is(err, ErrBusy) {
		t.Fatalf("live lock without starttime: %v, want ErrBusy", err)
	}
}

func TestOpenClawStaleLocksAreBroken(t *testing.T) {
	pid, st := liveChild(t)

	dead := helperCmd("exit", "")
	if err := dead.Run(); err != nil {
		t.Fatal(err)
	}
	deadPid := dead.Process.Pid

	now := time.Now()
	cases := []struct {
		name       string
		body       string
		transcript bool
	}{
		{"dead pid", ocBody(deadPid, now, 1), false},
		{"recycled pid", ocBody(pid, now, st+12345), false},
		{"createdAt older than 30 s", ocBody(pid, now.Add(-31*time.Second), st), false},
		{"transcript createdAt older than 30 min", ocBody(pid, now.Add(-31*time.Minute), st), true},
		{"pid 0", ocBody(0, now.Add(-time.Hour), st), false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			lockPath := filepath.Join(ocDir(t), "sessions.json.lock")
			writeFile(t, lockPath, c.body)
			h, err := OpenClaw(context.Background(), lockPath, c.transcript, Options{})
			if err != nil {
				t.Fatalf("%s: %v, want the stale lock broken", c.name, err)
			}
			if got := readFile(t, lockPath); got == c.body || !strings.Contains(got, fmt.Sprintf(`"pid": %d,`, os.Getpid())) {
				t.Fatalf("lock after break: %q", got)
			}
			if err := h.Release(); err != nil {
				t.Fatal(err)
			}
		})
	}

	// A transcript lock 10 min old is still live (stale after 30 min).
	lockPath := filepath.Join(ocDir(t), "x.jsonl.lock")
	writeFile(t, lockPath, ocBody(pid, now.Add(-10*time.Minute), st))
	if _, err := OpenClaw(context.Background(), lockPath, true, Options{}); !errors.Is(err, ErrBusy) {
		t.Fatalf("10 min transcript lock: %v, want ErrBusy", err)
	}
}

func TestOpenClawZombieHolder(t *testing.T) {
	cmd := helperCmd("exit", "")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	pid := cmd.Process.Pid
	st, _ := procStartTime(pid)
	defer cmd.Wait()
	deadline := time.Now().Add(10 * time.Second)
	for !procZombie(pid) {
		if time.Now().After(deadline) {
			t.Fatal("child never became a zombie")
		}
		time.Sleep(5 * time.Millisecond)
	}
	lockPath := filepath.Join(ocDir(t), "sessions.json.lock")
	writeFile(t, lockPath, ocBody(pid, time.Now(), st))
	h, err := OpenClaw(context.Background(), lockPath, false, Options{})
	if err != nil {
		t.Fatalf("zombie holder: %v, want the lock broken", err)
	}
	h.Release()
}

func TestOpenClawMissingFieldsUseMtime(t *testing.T) {
	pid, st := liveChild(t)
	old := time.Now().Add(-10 * time.Second)
	for _, body := range []string{
		"",
		"{",
		"{}",
		`{"createdAt": "` + time.Now().UTC().Format(jsISOLayout) + `"}`,
		fmt.Sprintf(`{"pid": %d, "createdAt": "yesterday-ish", "starttime": %d}`, pid, st),
		fmt.Sprintf(`{"pid": %d, "starttime": %d}`, pid, st),
		fmt.Sprintf(`{"pid": "%d", "createdAt": 5}`, pid),
		fmt.Sprintf(`{"pid": %d.5, "createdAt": null}`, pid),
	} {
		lockPath := filepath.Join(ocDir(t), "sessions.json.lock")
		writeFile(t, lockPath, body)
		if _, err := OpenClaw(context.Background(), lockPath, false, Options{}); !errors.Is(err, ErrBusy) {
			t.Fatalf("fresh %q: %v, want ErrBusy", body, err)
		}
		// min(stale, 5 s): a store lock 10 s old is stale ...
		if err := os.Chtimes(lockPath, old, old); err != nil {
			t.Fatal(err)
		}
		h, err := OpenClaw(context.Background(), lockPath, false, Options{})
		if err != nil {
			t.Fatalf("old %q: %v, want broken", body, err)
		}
		h.Release()
		// ... and so is a transcript lock (30 min stale, capped to 5 s).
		writeFile(t, lockPath, body)
		os.Chtimes(lockPath, old, old)
		h, err = OpenClaw(context.Background(), lockPath, true, Options{})
		if err != nil {
			t.Fatalf("old transcript %q: %v, want broken", body, err)
		}
		h.Release()
	}

	// Missing pid plus a too-old createdAt: stale without the mtime rule.
	lockPath := filepath.Join(ocDir(t), "sessions.json.lock")
	writeFile(t, lockPath, `{"createdAt": "2020-01-01T00:00:00.000Z"}`)
	h, err := OpenClaw(context.Background(), lockPath, false, Options{})
	if err != nil {
		t.Fatalf("missing pid, old createdAt: %v", err)
	}
	h.Release()
}

func TestOpenClawReleaseLeavesForeignLock(t *testing.T) {
	lockPath := filepath.Join(ocDir(t), "sessions.json.lock")
	h, err := OpenClaw(context.Background(), lockPath, false, Options{})
	if err != nil {
		t.Fatal(err)
	}
	pid, st := liveChild(t)
	theirs := ocBody(pid, time.Now(), st)
	os.Remove(lockPath)
	writeFile(t, lockPath, theirs)
	if err := h.Release(); !errors.Is(err, ErrLost) {
		t.Fatalf("Release of a foreign lock: %v, want ErrLost", err)
	}
	if readFile(t, lockPath) != theirs {
		t.Fatal("foreign lock removed or changed")
	}
}

func TestParseJSDate(t *testing.T) {
	for in, want := range map[string]time.Time{
		"2026-11-21T07:42:27.239Z":      time.Date(2026, 11, 21, 7, 42, 27, 239e6, time.UTC),
		"2026-11-21T07:42:27Z":          time.Date(2026, 11, 21, 7, 42, 27, 0, time.UTC),
		"2026-11-21T08:42:27.239+01:00": time.Date(2026, 11, 21, 7, 42, 27, 239e6, time.UTC),
		"2026-11-21":                    time.Date(2026, 11, 21, 0, 0, 0, 0, time.UTC),
	} {
		got, ok := parseJSDate(in)
		if !ok || !got.Equal(want) {
			t.Errorf("parseJSDate(%q) = %v %v", in, got, ok)
		}
	}
	for _, in := range []string{"", "yesterday", "2026-13-01T00:00:00Z"} {
		if _, ok := parseJSDate(in); ok {
			t.Errorf("parseJSDate(%q) accepted", in)
		}
	}
}
