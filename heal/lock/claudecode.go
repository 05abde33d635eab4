package lock

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"

	"github.com/sessionmedic/sessionmedic/internal/resolve"
)

// Claude Code (claude-code.md "Lock protocol") takes no lock on a transcript: its live
// processes announce themselves in a registry, <config>/sessions/<pid>.json, one compact JSON
// object per process (pid, sessionId, procStart, pidDomain, …), rewritten in place on status
// changes and unlinked on exit (not after SIGKILL). A transcript is live while an entry names
// its session for a process that still runs. The registry is Claude's: it is only ever read
// here, never written, and a stale entry is left where it is.

// ClaudeCode waits, polling within o.Wait, until no live Claude Code process of the config
// dir cfgDir has the session sessionID open. It returns nil when none has, an error matching
// [ErrBusy] when one still has at the deadline, ctx.Err() when ctx is done first, or the error
// that kept the registry from being read.
func ClaudeCode(ctx context.Context, cfgDir, sessionID string, o Options) error {
	_, err := acquire(ctx, o, filepath.Join(cfgDir, "sessions"), func() (Held, error) {
		live, entry, why, err := claudeSessionLive(cfgDir, sessionID)
		switch {
		case err != nil:
			return nil, err
		case live:
			return nil, busy(entry, "it names session "+sessionID+" and "+why)
		}
		return nothingHeld{}, nil
	})
	return err
}

// nothingHeld stands for a protocol that holds nothing once it has let the caller go on
// (Claude's registry, Gemini's running processes): what the poll loop gets when it is free.
type nothingHeld struct{}

func (nothingHeld) Release() error { return nil }

// ClaudeSessionLive reads the registry of cfgDir once: live is true when an entry names
// sessionID for a process that runs, or whose liveness cannot be checked from here (another
// pid domain; outside Linux, any entry); holder is that entry's path and why. A missing
// registry names no session.
func ClaudeSessionLive(cfgDir, sessionID string) (live bool, holder string, err error) {
	live, entry, why, err := claudeSessionLive(cfgDir, sessionID)
	if live {
		holder = entry + ": " + why
	}
	return live, holder, err
}

// claudeSessionLive is ClaudeSessionLive with the entry that names the session and why its
// process counts as running apart.
func claudeSessionLive(cfgDir, sessionID string) (live bool, entry, why string, err error) {
	if sessionID == "" {
		return false, "", "", nil
	}
	dir := filepath.Join(cfgDir, "sessions")
	ents, err := resolve.ReadDir(dir)
	if errors.Is(err, fs.ErrNotExist) {
		return false, "", "", nil
	}
	if err != nil {
		return false, "", "", fmt.Errorf("read Claude Code's session registry: %w", err)
	}
	for _, de := range ents {
		name := de.Name()
		if !strings.HasSuffix(name, ".json") || strings.HasPrefix(name, ".") || !de.Type().IsRegular() {
			continue // not an entry (.fleetview-heartbeat, a directory, a link)
		}
		p := filepath.Join(dir, name)
		data, err := readClaudeEntry(p)
		switch {
		case errors.Is(err, fs.ErrNotExist) || errors.Is(err, errNotEntry):
			continue // the process exited meanwhile, or a link or special file took its name
		case err != nil:
			return false, "", "", fmt.Errorf("read Claude Code's session registry entry: %w", err)
		}
		e, named := parseClaudeEntry(name, data, sessionID)
		if !named {
			continue
		}
		if ok, why := claudeEntryLive(e); ok {
			return true, p, why, nil
		}
	}
	return false, "", "", nil
}

// maxClaudeEntry bounds what is read of a registry entry (Claude's are about 500 bytes).
const maxClaudeEntry = 64 << 10

// errNotEntry: a name of the registry that is not a regular file.
var errNotEntry = errors.New("not a regular file")

// readClaudeEntry reads at most maxClaudeEntry bytes of a registry entry, without following a
// link or blocking on a FIFO.
func readClaudeEntry(p string) ([]byte, error) {
	f, err := resolve.OpenFile(p, syscall.O_RDONLY|syscall.O_NONBLOCK, 0)
	if errors.Is(err, syscall.ELOOP) {
		return nil, errNotEntry
	}
	if err != nil {
		return nil, err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, err
	}
	if !fi.Mode().IsRegular() {
		return nil, errNotEntry
	}
	return io.ReadAll(io.LimitReader(f, maxClaudeEntry))
}

// claudeEntry is what one registry entry says of its process.
type claudeEntry struct {
	pid       int    // 0 when neither the entry nor its name gives one
	procStart string // field 22 of /proc/<pid>/stat when the process started; "" when not recorded
	domain    string // pidDomain; "" when not recorded
	torn      bool   // not a whole entry (read mid-rewrite): only its pid is known
}

// parseClaudeEntry reads an entry named name; named reports whether it names sessionID. An
// entry rewritten in place may be read with the old bytes' tail after the new ones (the
// first value is what counts), or cut short: then it names the session when its bytes hold
// the id at all.
func parseClaudeEntry(name string, data []byte, sessionID string) (e claudeEntry, named bool) {
	if n, err := strconv.Atoi(strings.TrimSuffix(name, ".json")); err == nil && n > 0 {
		e.pid = n
	}
	var m map[string]any
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	if err := dec.Decode(&m); err != nil || m == nil {
		e.torn = true
		return e, bytes.Contains(data, []byte(sessionID))
	}
	if sid, _ := m["sessionId"].(string); sid != sessionID {
		return e, false
	}
	if n, ok := m["pid"].(json.Number); ok {
		if v, err := strconv.Atoi(n.String()); err == nil && v > 0 {
			e.pid = v
		}
	}
	switch v := m["procStart"].(type) {
	case string:
		e.procStart = v
	case json.Number:
		e.procStart = v.String()
	}
	e.domain, _ = m["pidDomain"].(string)
	return e, true
}
