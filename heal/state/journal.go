package state

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
)

// Entry records a heal in flight: which files, which temp names, and the hashes of the old
// and new bytes, so that a restart can tell what a crash left and clean it up.
type Entry struct {
	ID      string    `json:"id"`
	PID     int       `json:"pid"`   // the process applying it
	Start   uint64    `json:"start"` // and its start time: a live owner's entry is not ours to resolve
	Created time.Time `json:"created"`
	Edits   []Edit    `json:"edits"`
	file    string
}

// Edit is one file of an entry.
type Edit struct {
	Path       string `json:"path"`
	PathB64    string `json:"path_b64,omitempty"` // Path's exact bytes when not UTF-8 (see names.go)
	Temp       string `json:"temp"`
	TempB64    string `json:"temp_b64,omitempty"`
	Missing    bool   `json:"missing"`
	OldSHA256  string `json:"old_sha256"`
	NewSHA256  string `json:"new_sha256"`
	Quarantine string `json:"quarantine,omitempty"`
}

// Journal is state_dir/journal.
type Journal struct {
	Root string
	fs   fsio.FS // writes the entries

	// inflight holds the ids of the entries being applied now (Begin adds them, End removes
	// them): Recover leaves those alone.
	inflight *sync.Map

	ownTemp func(base string) bool            // whether a temp an entry names is ours to remove
	hash    func(path string) (string, error) // the sha256 of the file at path
	q       Quarantine                        // where the entries' quarantine entries are
}

// NewJournal returns the journal under root, whose entries fs writes and whose edits keep
// their original bytes in q. Resolving an entry removes the temps it names that ownTemp
// (given a base name) says are sessionmedic's own, tells what each target holds by hash (the
// sha256 of the file at a path, of any size), and records in each edit's quarantine entry a
// change that did not stand.
func NewJournal(root string, fs fsio.FS, q Quarantine, ownTemp func(base string) bool, hash func(path string) (string, error)) Journal {
	return Journal{Root: root, fs: fs, inflight: &sync.Map{}, ownTemp: ownTemp, hash: hash, q: q}
}

// applying reports whether the entry id is being applied now, by this journal.
func (j Journal) applying(id string) bool {
	if j.inflight == nil {
		return false
	}
	_, ok := j.inflight.Load(id)
	return ok
}

// Begin writes an entry durably, whole or not at all, before its heal touches any file; the
// entry is in flight from then until End (or Abort), and Recover leaves it alone.
func (j Journal) Begin(e *Entry) error {
	j.inflight.Store(e.ID, struct{}{})
	if err := j.begin(e); err != nil {
		j.inflight.Delete(e.ID)
		return err
	}
	return nil
}

func (j Journal) begin(e *Entry) error {
	e.PID = os.Getpid()
	e.Start, _ = lock.ProcessStart(e.PID)
	if err := j.fs.MkdirAllSync(j.Root); err != nil {
		return fmt.Errorf("journal: %w", err)
	}
	e.encodeNames()
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

// Update writes an entry Begin wrote again, durably and whole (a heal that learns an edit's
// NewSHA256 only once its new file is written tells the journal before that file replaces
// the old one: a restart that finds the entry without it knows no rename happened).
func (j Journal) Update(e *Entry) error { return j.begin(e) }

// End closes an entry. Its removal need not be durable: an entry that reappears after a
// crash is resolved harmlessly at the next start (the target holds the new bytes).
func (j Journal) End(e *Entry) error {
	defer j.inflight.Delete(e.ID)
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

// The outcomes of an edit a crash (or a failure) left unfinished.
const (
	OutcomeApplied    = "applied"     // the file holds the edit's new bytes
	OutcomeRolledBack = "rolled-back" // the file holds its old bytes (or is still missing): the edit never replaced it
	OutcomeSuperseded = "superseded"  // the file holds other bytes: written since
)

// Recover resolves every unfinished entry: stray temps are removed, and each target is found
// holding either its old or its new bytes (or newer bytes the app wrote since).
//
// An entry of another live process is left alone, and so is one this journal is applying; an
// entry of this process that it is not applying is taken for a leftover. So one process
// recovers before it starts healing, as the daemon and the CLI do, not while another engine
// of its own heals under the same state directory.
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
		var e Entry
		if err := json.Unmarshal(b, &e); err != nil {
			os.Remove(full) // entries are renamed into place whole: this one is not ours to read
			continue
		}
		e.decodeNames()
		if j.applying(e.ID) {
			continue // being applied by this process right now
		}
		if e.PID != 0 && e.PID != os.Getpid() && lock.ProcessAlive(e.PID, e.Start) {
			continue // a heal in flight in another live process (a daemon beside this CLI run)
		}
		rec, marked := j.resolve(&e)
		out = append(out, rec...)
		if !marked {
			// A quarantine entry's status could not be recorded: the journal entry stays,
			// and the next start resolves it again.
			continue
		}
		if err := os.Remove(full); err != nil {
			return out, err
		}
		_ = j.fs.SyncDir(j.Root)
	}
	return out, nil
}

// resolve removes the stray temps of one entry, says what each target holds, and records in
// the quarantine entry of each edit that did not stand how it ended (before the journal
// entry goes: a crash in between resolves it again). marked is false when such a record
// could not be written.
func (j Journal) resolve(e *Entry) (out []Recovered, marked bool) {
	marked = true
	for _, ed := range e.Edits {
		if ed.Temp != "" && j.ownTemp(filepath.Base(ed.Temp)) {
			if err := os.Remove(ed.Temp); err == nil {
				_ = j.fs.SyncDir(filepath.Dir(ed.Temp))
			}
		}
		outcome := OutcomeSuperseded
		cur, err := j.hash(ed.Path)
		switch {
		case err == nil && cur == ed.NewSHA256:
			outcome = OutcomeApplied
		case err == nil && cur == ed.OldSHA256:
			outcome = OutcomeRolledBack
		case errors.Is(err, os.ErrNotExist) && ed.Missing:
			outcome = OutcomeRolledBack
		case err == nil && ed.OldSHA256 == "" && !ed.Missing:
			// The original's sum is told the journal before the rename, with the new one,
			// when it was taken beside the new file's write: an entry without it never
			// reached the rename.
			outcome = OutcomeRolledBack
		}
		if ed.Quarantine != "" && outcome != OutcomeApplied {
			status := StatusSuperseded
			if outcome == OutcomeRolledBack {
				status = StatusRolledBack
			}
			if err := j.q.mark(ed.Quarantine, status); err != nil {
				marked = false
			}
		}
		out = append(out, Recovered{ID: e.ID, Path: ed.Path, Outcome: outcome})
	}
	return out, marked
}

// Pending returns the quarantine entries (their directories, cleaned) that the journal's
// entries name now: those of heals in progress, and of heals a crash cut short that no start
// has resolved yet.
func (j Journal) Pending() map[string]bool {
	out := map[string]bool{}
	ents, _ := os.ReadDir(j.Root)
	for _, de := range ents {
		if strings.HasPrefix(de.Name(), ".") || !strings.HasSuffix(de.Name(), ".json") {
			continue
		}
		b, err := os.ReadFile(filepath.Join(j.Root, de.Name()))
		if err != nil {
			continue
		}
		var e Entry
		if json.Unmarshal(b, &e) != nil {
			continue
		}
		for _, ed := range e.Edits {
			if ed.Quarantine != "" {
				out[filepath.Clean(ed.Quarantine)] = true
			}
		}
	}
	return out
}

// Abort resolves one entry of this process right away (a heal that failed midway). The
// statuses of its quarantine entries are recorded as well as they can be: the entry ends
// either way.
func (j Journal) Abort(e *Entry) {
	j.resolve(e)
	_ = j.End(e)
}
