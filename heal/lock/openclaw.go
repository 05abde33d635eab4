package lock

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"math"
	"os"
	"strconv"
	"strings"
	"sync"
	"time"
)

// OpenClaw lock defaults (openclaw.md "Lock protocol").
const (
	// OpenClawStoreStale is the stale age of sessions.json.lock.
	OpenClawStoreStale = 30 * time.Second
	// OpenClawTranscriptStale is the stale age of <transcript>.jsonl.lock.
	OpenClawTranscriptStale = 30 * time.Minute
	// OpenClawTranscriptMaxHoldMs is written as "maxHoldMs" in transcript
	// locks: OpenClaw's default max hold (5 min).
	OpenClawTranscriptMaxHoldMs = 5 * 60 * 1000
	// openClawMtimeGrace caps the mtime age used when only pid/createdAt
	// are missing or invalid: stale only if mtime is older than
	// min(stale, 5 s).
	openClawMtimeGrace = 5 * time.Second
)

// jsISOLayout is JavaScript's Date.prototype.toISOString format.
const jsISOLayout = "2006-01-02T15:04:05.000Z"

// OpenClaw takes an OpenClaw O_EXCL JSON-body lock file: sessions.json.lock
// (store, ≤ 2026.4.29), or <transcript>.jsonl.lock when transcript is true.
// The file is created O_WRONLY|O_CREAT|O_EXCL|O_CLOEXEC 0600 and holds,
// 2-space indented with no trailing newline:
//
//	{"pid": <own pid>, "createdAt": "<now, toISOString>", "starttime": <field 22 of /proc/self/stat>}
//
// with "maxHoldMs" (OpenClawTranscriptMaxHoldMs) before "starttime" for
// transcript locks; starttime is omitted when unreadable.
//
// An existing lock is judged as OpenClaw does: stale when pid is missing or
// invalid, kill(pid, 0) fails (any error, EPERM included), the pid is a
// zombie, its /proc starttime differs from the stored one, or createdAt is
// older than o.Stale (default 30 s store, 30 min transcript). When the only
// reasons are a missing/invalid pid or createdAt, it is stale only if the
// file's mtime is older than min(o.Stale, 5 s). A stale lock is broken only
// after re-reading identical bytes; a live one means ErrBusy.
//
// Run with the same uid and in the same PID namespace as the Gateway, or
// OpenClaw will judge our lock dead (rule 4).
func OpenClaw(ctx context.Context, lockPath string, transcript bool, o Options) (Held, error) {
	stale := o.stale(OpenClawStoreStale)
	if transcript {
		stale = o.stale(OpenClawTranscriptStale)
	}
	return acquire(ctx, o, lockPath, func() (Held, error) {
		if o.Probe {
			s, err := readSnapshot(lockPath)
			switch {
			case errors.Is(err, fs.ErrNotExist):
				return nothingHeld{}, nil
			case err != nil:
				return nil, fmt.Errorf("read %s: %w", lockPath, err)
			}
			if isStale, why := openClawStale(s, o.now(), stale); !isStale {
				return nil, busy(lockPath, why)
			}
			return nothingHeld{}, nil // stale: a heal would break it
		}
		body := openClawBody(os.Getpid(), o.now(), transcript)
		snap, err := createExcl(lockPath, 0o600, body, o.Faults)
		if err == nil {
			return &tokenHeld{path: lockPath, snap: snap}, nil
		}
		if !errors.Is(err, fs.ErrExist) {
			return nil, fmt.Errorf("create %s: %w", lockPath, err)
		}
		s, err := readSnapshot(lockPath)
		if err != nil {
			if errors.Is(err, fs.ErrNotExist) {
				return nil, errRetry
			}
			return nil, fmt.Errorf("read %s: %w", lockPath, err)
		}
		isStale, why := openClawStale(s, o.now(), stale)
		if !isStale {
			return nil, busy(lockPath, why)
		}
		if _, err := removeIfSame(lockPath, s); err != nil {
			return nil, fmt.Errorf("break stale %s: %w", lockPath, err)
		}
		return nil, errRetry
	})
}

// openClawBody renders the lock body exactly as
// JSON.stringify({pid, createdAt, [maxHoldMs,] starttime}, null, 2).
func openClawBody(pid int, now time.Time, transcript bool) []byte {
	created, _ := json.Marshal(now.UTC().Format(jsISOLayout))
	var b bytes.Buffer
	b.WriteString("{\n  \"pid\": ")
	b.WriteString(strconv.Itoa(pid))
	b.WriteString(",\n  \"createdAt\": ")
	b.Write(created)
	if transcript {
		b.WriteString(",\n  \"maxHoldMs\": ")
		b.WriteString(strconv.Itoa(OpenClawTranscriptMaxHoldMs))
	}
	if st, ok := procStartTime(pid); ok {
		b.WriteString(",\n  \"starttime\": ")
		b.WriteString(strconv.FormatUint(st, 10))
	}
	b.WriteString("\n}")
	return b.Bytes()
}

// jsLockNumber mirrors OpenClaw's isValidLockNumber: a JSON number that is an
// integer and >= 0.
func jsLockNumber(v any) (float64, bool) {
	n, ok := v.(json.Number)
	if !ok {
		return 0, false
	}
	f, err := strconv.ParseFloat(string(n), 64)
	if err != nil || math.IsInf(f, 0) || math.IsNaN(f) || f != math.Trunc(f) || f < 0 {
		return 0, false
	}
	return f, true
}

// parseJSDate accepts the ISO-8601 forms JavaScript's Date.parse accepts.
// Date-only forms are UTC, date-time forms without an offset are local time.
func parseJSDate(s string) (time.Time, bool) {
	for _, layout := range []string{time.RFC3339Nano, "2006-01-02T15:04Z07:00"} {
		if t, err := time.Parse(layout, s); err == nil {
			return t, true
		}
	}
	for _, layout := range []string{"2006-01-02", "2006-01", "2006"} {
		if t, err := time.Parse(layout, s); err == nil {
			return t, true
		}
	}
	for _, layout := range []string{"2006-01-02T15:04:05.999999999", "2006-01-02T15:04"} {
		if t, err := time.ParseInLocation(layout, s, time.Local); err == nil {
			return t, true
		}
	}
	return time.Time{}, false
}

// openClawStale judges an existing OpenClaw lock file (inspectLockPayload and
// shouldReclaimContendedLockFile). It returns the reasons it found.
func openClawStale(s snapshot, now time.Time, stale time.Duration) (bool, string) {
	var payload map[string]any
	if json.Valid(s.data) {
		dec := json.NewDecoder(bytes.NewReader(s.data))
		dec.UseNumber()
		if err := dec.Decode(&payload); err != nil {
			payload = nil
		}
	}
	var reasons []string
	needsMtime := true

	pid, pidOK := jsLockNumber(payload["pid"])
	pidOK = pidOK && pid > 0
	alive := pidOK && pidAlive(int64(min(pid, math.MaxInt64/2)))
	switch {
	case !pidOK:
		reasons = append(reasons, "missing-pid")
	case !alive:
		reasons = append(reasons, "dead-pid")
		needsMtime = false
	default:
		if st, ok := jsLockNumber(payload["starttime"]); ok {
			if cur, ok := procStartTime(int(pid)); ok && float64(cur) != st {
				reasons = append(reasons, "recycled-pid")
				needsMtime = false
			}
		}
	}

	created, _ := payload["createdAt"].(string)
	if t, ok := parseJSDate(created); !ok {
		reasons = append(reasons, "invalid-createdAt")
	} else if age := now.Sub(t); age > stale {
		reasons = append(reasons, "too-old")
		needsMtime = false
	}

	holder := "createdAt " + strconv.Quote(created)
	if pidOK {
		holder = "pid " + strconv.FormatFloat(pid, 'f', -1, 64) + ", " + holder
	}
	if len(reasons) == 0 {
		return false, holder
	}
	why := strings.Join(reasons, ", ")
	if !needsMtime {
		return true, why
	}
	grace := min(stale, openClawMtimeGrace)
	if now.Sub(s.mtime) > grace {
		return true, why + ", old mtime"
	}
	return false, why + ", fresh mtime"
}

// tokenHeld is a held O_EXCL lock file released by compare-and-remove.
type tokenHeld struct {
	mu   sync.Mutex
	path string
	snap snapshot
	done bool
}

// Release unlinks the lock file only if it is still the inode we created and
// holds our bytes; otherwise it leaves it and returns ErrLost.
func (h *tokenHeld) Release() error {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.done {
		return nil
	}
	h.done = true
	removed, err := removeIfSame(h.path, h.snap)
	if err != nil {
		return err
	}
	if !removed {
		return fmt.Errorf("%w: %s", ErrLost, h.path)
	}
	return nil
}
