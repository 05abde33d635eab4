package heal

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/sessionmedic/sessionmedic/heal/fsio"
	"github.com/sessionmedic/sessionmedic/heal/lock"
	"github.com/sessionmedic/sessionmedic/policy"
)

// journalEntry records a heal in flight: which files, which temp names, and the hashes of the
// old and new bytes, so that a restart can tell what a crash left and clean it up.
type journalEntry struct {
	ID      string        `json:"id"`
	PID     int           `json:"pid"`   // the process applying it
	Start   uint64        `json:"start"` // and its start time: a live owner's entry is not ours to resolve
	Created time.Time     `json:"created"`
	Edits   []journalEdit `json:"edits"`
	file    string
}

type journalEdit struct {
	Path       string `json:"path"`
	Temp       string `json:"temp"`
	Missing    bool   `json:"missing"`
	OldSHA256  string `json:"old_sha256"`
	NewSHA256  string `json:"new_sha256"`
	Quarantine string `json:"quarantine,omitempty"`
}

// Journal is state_dir/journal.
type Journal struct {
	Root string
	fs   fsio.FS // writes the entries

	// inflight holds the ids of the entries its engine is applying now (New makes it, apply
	// adds and removes them): Recover leaves those alone.
	inflight *sync.Map
}

// applying reports whether the journal's engine is applying the entry id now.
func (j Journal) applying(id string) bool {
	if j.inflight == nil {
		return false
	}
	_, ok := j.inflight.Load(id)
	return ok
}

func (j Journal) begin(e *journalEntry) error {
	e.PID = os.Getpid()
	e.Start, _ = lock.ProcessStart(e.PID)
	if err := j.fs.MkdirAllSync(j.Root); err != nil {
		return fmt.Errorf("journal: %w", err)
	}
	b, _ := json.MarshalIndent(e, "", "  ")
	e.file = filepath.Join(j.Root, e.ID+".json")
	// Written under a temp name and renamed: an entry is either whole or absent, so a
	// restart never has to guess whether a torn one belongs to a live process.
	tmp := filepath.Join(j.Root, "."+e.ID+"."+strconv.Itoa(e.PID)+".json.tmp")
	if err := j.fs.WriteNew(tmp, b, 0o600, true); err != nil {
		return fmt.Errorf("journal: %w", err)
	}
	if err := j.fs.Do("rename", e.file, func() error { return os.Rename(tmp, e.file) }); err != nil {
		os.Remove(tmp)
		return fmt.Errorf("journal: %w", err)
	}
	if err := j.fs.SyncDir(j.Root); err != nil {
		os.Remove(e.file)
		return fmt.Errorf("journal: %w", err)
	}
	return nil
}

// end closes an entry. Its removal need not be durable: an entry that reappears after a
// crash is resolved harmlessly at the next start (the target holds the new bytes).
func (j Journal) end(e *journalEntry) error {
	if err := os.Remove(e.file); err != nil && !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("journal: %w", err)
	}
	_ = j.fs.SyncDir(j.Root)
	return nil
}

// Recovered says how one unfinished heal was resolved at start-up.
type Recovered struct {
	ID, Path, Outcome string // outcome: applied | rolled-back | superseded
}

// Recover resolves every unfinished entry: stray temps are removed, and each target is found
// holding either its old or its new bytes (or newer bytes the app wrote since).
//
// An entry of another live process is left alone, and so is one this journal's engine is
// applying; an entry of this process that its engine is not applying is taken for a leftover.
// So one process recovers before it starts healing, as the daemon and the CLI do, not while
// another engine of its own heals under the same state directory.
func (j Journal) Recover() ([]Recovered, error) {
	ents, err := os.ReadDir(j.Root)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var out []Recovered
	for _, de := range ents {
		name := de.Name()
		full := filepath.Join(j.Root, name)
		if strings.HasPrefix(name, ".") && strings.HasSuffix(name, ".json.tmp") {
			// A journal write that never completed (nothing was applied after it), unless its
			// writer (named in it: .<id>.<pid>.json.tmp) is alive and about to rename it.
			parts := strings.Split(strings.TrimSuffix(name[1:], ".json.tmp"), ".")
			pid, _ := strconv.Atoi(parts[len(parts)-1])
			mine := j.applying(parts[0])
			if pid <= 0 || (pid == os.Getpid() && !mine) || (pid != os.Getpid() && !lock.ProcessRunning(pid)) {
				os.Remove(full)
			}
			continue
		}
		if !strings.HasSuffix(name, ".json") {
			continue
		}
		b, err := os.ReadFile(full)
		if errors.Is(err, os.ErrNotExist) {
			continue // its heal just finished
		}
		if err != nil {
			return out, err
		}
		var e journalEntry
		if err := json.Unmarshal(b, &e); err != nil {
			os.Remove(full) // entries are renamed into place whole: this one is not ours to read
			continue
		}
		if j.applying(e.ID) {
			continue // being applied by this process right now
		}
		if e.PID != 0 && e.PID != os.Getpid() && lock.ProcessAlive(e.PID, e.Start) {
			continue // a heal in flight in another live process (a daemon beside this CLI run)
		}
		out = append(out, j.resolve(&e)...)
		if err := os.Remove(full); err != nil {
			return out, err
		}
		_ = j.fs.SyncDir(j.Root)
	}
	return out, nil
}

// resolve removes the stray temps of one entry and says what each target holds.
func (j Journal) resolve(e *journalEntry) []Recovered {
	var out []Recovered
	for _, ed := range e.Edits {
		if ed.Temp != "" && policy.IsOwnTemp(filepath.Base(ed.Temp)) {
			if err := os.Remove(ed.Temp); err == nil {
				_ = j.fs.SyncDir(filepath.Dir(ed.Temp))
			}
		}
		outcome := "superseded"
		cur, err := shaFile(ed.Path) // streaming: the file may be of any size
		switch {
		case err == nil && cur == ed.NewSHA256:
			outcome = "applied"
		case err == nil && cur == ed.OldSHA256:
			outcome = "rolled-back"
		case errors.Is(err, os.ErrNotExist) && ed.Missing:
			outcome = "rolled-back"
		}
		out = append(out, Recovered{ID: e.ID, Path: ed.Path, Outcome: outcome})
	}
	return out
}

// abort resolves one entry of this process right away (a heal that failed midway).
func (j Journal) abort(e *journalEntry) {
	j.resolve(e)
	_ = j.end(e)
}
