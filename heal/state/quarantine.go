package state

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"syscall"
	"time"

	"github.com/sessionmedic/sessionmedic/heal/fsio"
	"github.com/sessionmedic/sessionmedic/internal/pathx"
)

// Manifest describes one quarantined file: where it came from, exactly which version, and why.
type Manifest struct {
	ID          string        `json:"id"`
	Path        string        `json:"path"`
	PathB64     string        `json:"path_b64,omitempty"` // Path's exact bytes when not UTF-8 (see names.go)
	Rule        string        `json:"rule"`
	Created     time.Time     `json:"created"`
	Identity    fsio.Identity `json:"identity"`
	Size        int64         `json:"size"`
	SHA256      string        `json:"sha256"`
	Kind        string        `json:"kind"`
	Offset      int64         `json:"offset"`
	Detail      string        `json:"detail"`
	Strategy    string        `json:"strategy"`
	Status      string        `json:"status,omitempty"` // see StatusHealed; absent on disk means StatusHealed
	NewSHA256   string        `json:"new_sha256,omitempty"`
	LostBytes   int64         `json:"lost_bytes"`
	LostRecords int           `json:"lost_records"`
	File        string        `json:"file"` // the bytes, next to this manifest
	FileB64     string        `json:"file_b64,omitempty"`
	// Prefix, when set, marks the entry of a tail cut (see PutTail): File holds the original's
	// bytes from Prefix to Size, and its first Prefix bytes, whose sha256 is PrefixSHA256,
	// are the ones the cut left where they were, in the file at Path. Size and SHA256 are
	// the whole original's.
	Prefix       int64  `json:"prefix,omitempty"`
	PrefixSHA256 string `json:"prefix_sha256,omitempty"`
	Dir          string `json:"-"`
}

// What became of the change a quarantine entry's bytes were kept for: a manifest is written
// before the file is touched, and the journal's recovery (or a heal that fails midway)
// records in it, durably, a change that did not stand. An entry with no status recorded
// (every entry of a heal that completed, and every entry written before statuses were
// recorded) reads as StatusHealed.
const (
	StatusHealed     = "healed"      // the file was replaced (healed, restored, a temp cleaned)
	StatusRolledBack = "rolled-back" // the change never replaced the file: it kept these bytes
	StatusSuperseded = "superseded"  // the file changed since, to bytes that are neither these nor the change's

	// StatusInFlight is never recorded: it is what a listing may say of an entry a journal
	// entry names (see Journal.Pending) while its heal is in progress, or cut short and not
	// yet resolved.
	StatusInFlight = "in-flight"
)

func sha(b []byte) string {
	s := sha256.Sum256(b)
	return hex.EncodeToString(s[:])
}

// Quarantine is state_dir/quarantine: the damaged bytes, exactly, before anything is touched.
type Quarantine struct {
	Root string
	fs   fsio.FS // writes the entries
}

// NewQuarantine returns the quarantine under root, whose entries fs writes.
func NewQuarantine(root string, fs fsio.FS) Quarantine { return Quarantine{Root: root, fs: fs} }

// NewID returns a new entry id: the time, then random hex (quarantine entries and journal
// entries are named alike).
func NewID(now time.Time) string {
	return now.UTC().Format("20060102T150405Z") + "-" + fsio.RandHex(4)
}

// EntryDir is the directory Put (or PutFrom) at now will store m in, giving m its id if it
// has none: a journal names an entry before it is written.
func (q Quarantine) EntryDir(m *Manifest, now time.Time) string {
	if m.ID == "" {
		m.ID = NewID(now)
	}
	return filepath.Join(q.Root, now.UTC().Format("2006-01-02"), m.ID)
}

// Put stores data and its manifest durably and returns the entry's directory.
func (q Quarantine) Put(m *Manifest, data []byte, now time.Time) (string, error) {
	dir := q.EntryDir(m, now)
	m.Created = now.UTC()
	m.Size = int64(len(data))
	m.SHA256 = sha(data)
	m.File = filepath.Base(m.Path)
	if err := q.fs.MkdirAllSync(dir); err != nil {
		return "", fmt.Errorf("quarantine: %w", err)
	}
	if err := q.fs.WriteDurable(filepath.Join(dir, m.File), data, 0o600); err != nil {
		os.RemoveAll(dir)
		return "", fmt.Errorf("quarantine: %w", err)
	}
	return q.writeManifest(m, dir)
}

// PutFrom is Put for bytes too big to hold: c writes them out of src (size bytes). known is
// their sha256 when the caller has it (from the read its plan was made in): a copy the kernel
// made (see fsio.FileContent) computes none, and known is what the manifest records; without
// it the entry is read back and hashed. check, when set, is asked with the sha256 the copy
// computed ("" when the kernel made it) before the manifest is written; an error it returns
// removes the entry and is returned as it is (the caller checks the bytes are the version it
// planned from).
func (q Quarantine) PutFrom(m *Manifest, size int64, c fsio.Content, src io.ReaderAt, known string, check func(sum string) error, now time.Time) (string, error) {
	m.Prefix, m.PrefixSHA256 = 0, ""
	return q.putFrom(m, size, c, src, known, check, now)
}

// PutTail stores what a tail cut removes from a file of size bytes whose sha256 is sum: the
// bytes of src from prefix on. The first prefix bytes (whose sha256 is prefixSHA) stay in
// the file, which the cut leaves holding exactly them: every byte of the original is then
// either in the file, untouched, or in the entry, and a restore puts the two together (see
// [Manifest.Join]). A cut's cost then follows what it removes, not the file's size. check is
// as PutFrom's, asked with "" (the sum of the tail alone tells nothing of the whole).
func (q Quarantine) PutTail(m *Manifest, size, prefix int64, src io.ReaderAt, sum, prefixSHA string, check func(sum string) error, now time.Time) (string, error) {
	if prefix <= 0 || prefix > size || sum == "" || prefixSHA == "" {
		return "", fmt.Errorf("quarantine: a tail entry needs a prefix within the file and both sums (prefix %d of %d)", prefix, size)
	}
	m.Prefix, m.PrefixSHA256 = prefix, prefixSHA
	return q.putFrom(m, size, fsio.Range{Off: prefix, N: size - prefix}, src, sum, check, now)
}

// PutLinked is PutFrom without a copy: link gives the original's inode a second name at
// the path it is given (the entry's file), and returns it open, checked to be the version
// planned from (size bytes, whose sha256, computed when the plan was made, is sum). The
// inode's data is fsynced (what the app wrote and never synced is durable before any file
// is touched, as a copy's would be), then the entry's directory and its manifest. The entry
// then holds the original's bytes for as long as nobody writes into that inode: the heal
// that links it renames another file over the original's name, and an app that held it open
// and wrote after that rename wrote past size (see Bytes), bytes the heal puts back in place.
// Any error leaves no entry; a link refused (fsio.ErrNotLinked) is the caller's to copy
// instead.
func (q Quarantine) PutLinked(m *Manifest, size int64, sum string, link func(dst string) (*os.File, error), now time.Time) (string, error) {
	if sum == "" {
		return "", fmt.Errorf("quarantine: a linked entry needs the original's sum")
	}
	dir := q.EntryDir(m, now)
	m.Created = now.UTC()
	m.Size, m.SHA256 = size, sum
	m.Prefix, m.PrefixSHA256 = 0, ""
	m.File = filepath.Base(m.Path)
	if err := q.fs.MkdirAllSync(dir); err != nil {
		return "", fmt.Errorf("quarantine: %w", err)
	}
	dst := filepath.Join(dir, m.File)
	f, err := link(dst)
	if err != nil {
		os.RemoveAll(dir)
		return "", err
	}
	err = q.fs.Do("fsync", dst, f.Sync)
	f.Close()
	if err == nil {
		err = q.fs.SyncDir(dir)
	}
	if err != nil {
		os.RemoveAll(dir)
		return "", fmt.Errorf("quarantine: %w", err)
	}
	return q.writeManifest(m, dir)
}

func (q Quarantine) putFrom(m *Manifest, size int64, c fsio.Content, src io.ReaderAt, known string, check func(sum string) error, now time.Time) (string, error) {
	dir := q.EntryDir(m, now)
	m.Created = now.UTC()
	m.Size = size
	m.File = filepath.Base(m.Path)
	if err := q.fs.MkdirAllSync(dir); err != nil {
		return "", fmt.Errorf("quarantine: %w", err)
	}
	sum, err := q.fs.WriteDurableFrom(filepath.Join(dir, m.File), c, src, 0o600)
	if err != nil {
		os.RemoveAll(dir)
		return "", fmt.Errorf("quarantine: %w", err)
	}
	if m.Prefix > 0 {
		sum = "" // the tail's own: the manifest records the whole original's, known
	}
	if check != nil {
		if err := check(sum); err != nil {
			os.RemoveAll(dir)
			return "", err
		}
	}
	if sum == "" {
		if sum = known; sum == "" {
			if sum, err = fsio.SHAFile(filepath.Join(dir, m.File)); err != nil {
				os.RemoveAll(dir)
				return "", fmt.Errorf("quarantine: %w", err)
			}
		}
	}
	m.SHA256 = sum
	return q.writeManifest(m, dir)
}

// List returns every entry, oldest first.
func (q Quarantine) List() ([]*Manifest, error) {
	days, err := os.ReadDir(q.Root)
	if errors.Is(err, os.ErrNotExist) || errors.Is(err, syscall.ENOTDIR) {
		return nil, nil // no quarantine yet (below a file: none ever, and no heal could make one)
	}
	if err != nil {
		return nil, err
	}
	var out []*Manifest
	for _, d := range days {
		if !d.IsDir() {
			continue
		}
		ents, _ := os.ReadDir(filepath.Join(q.Root, d.Name()))
		for _, e := range ents {
			m, err := readManifest(filepath.Join(q.Root, d.Name(), e.Name()))
			if err == nil {
				out = append(out, m)
			}
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].ID < out[j].ID })
	return out, nil
}

func readManifest(dir string) (*Manifest, error) {
	b, err := os.ReadFile(filepath.Join(dir, "manifest.json"))
	if err != nil {
		return nil, err
	}
	var m Manifest
	if err := json.Unmarshal(b, &m); err != nil {
		return nil, fmt.Errorf("manifest %s: %w", dir, err)
	}
	m.decodeNames()
	m.Dir = dir
	if m.Status == "" {
		m.Status = StatusHealed
	}
	return &m, nil
}

// mark records status in the entry at dir (an entry of q a journal named) unless it has one
// already: the first to resolve a heal saw its file closest to the crash. The manifest is
// rewritten whole — a temp beside it, fsync, rename, directory fsync — so a crash leaves the
// old manifest or the new one, never a torn one. An entry whose manifest was never written
// is a heal's that never reached its file (the manifest is durable before any file is
// touched): it holds nothing of use and is removed.
func (q Quarantine) mark(dir, status string) error {
	if rel, ok := pathx.Rel(q.Root, dir); !ok || strings.Count(rel, "/") != 1 || strings.HasPrefix(rel, ".") {
		return nil // not an entry (a day's directory, then its id) of this quarantine: never touched
	}
	b, err := os.ReadFile(filepath.Join(dir, "manifest.json"))
	if errors.Is(err, os.ErrNotExist) {
		return os.RemoveAll(dir)
	}
	if err != nil {
		return fmt.Errorf("quarantine %s: %w", dir, err)
	}
	var m Manifest
	if err := json.Unmarshal(b, &m); err != nil {
		// A manifest a cut left short (created, not yet written and fsynced): its heal
		// never got past the quarantine, so the file was never touched, and the entry
		// holds nothing a restore could use.
		return os.RemoveAll(dir)
	}
	if m.Status != "" {
		return nil
	}
	m.decodeNames()
	if sharesInode(filepath.Join(dir, m.File), m.Path) {
		// A linked entry (see PutLinked) whose heal never replaced the file: the entry is a
		// second name of the file there now, whose bytes it holds, and would go on sharing
		// them (and every write the app makes). Removed, manifest first, as a heal that
		// stops before its rename removes it.
		if err := os.Remove(filepath.Join(dir, "manifest.json")); err != nil {
			return fmt.Errorf("quarantine %s: %w", dir, err)
		}
		return os.RemoveAll(dir)
	}
	m.Status = status
	m.encodeNames()
	mj, _ := json.MarshalIndent(&m, "", "  ")
	tmp := filepath.Join(dir, ".manifest."+fsio.RandHex(4)+".json.tmp")
	if err := q.fs.WriteNew(tmp, append(mj, '\n'), 0o600, true); err != nil {
		return fmt.Errorf("quarantine %s: %w", dir, err)
	}
	name := filepath.Join(dir, "manifest.json")
	if err := q.fs.Do("rename", name, func() error { return os.Rename(tmp, name) }); err != nil {
		os.Remove(tmp)
		return fmt.Errorf("quarantine %s: %w", dir, err)
	}
	if err := q.fs.SyncDir(dir); err != nil {
		return fmt.Errorf("quarantine %s: %w", dir, err)
	}
	return nil
}

// writeManifest makes the entry at dir, whose bytes are written, whole: its manifest,
// durably. An entry without one is of no use (nothing was touched yet): removed.
func (q Quarantine) writeManifest(m *Manifest, dir string) (string, error) {
	m.encodeNames()
	mj, _ := json.MarshalIndent(m, "", "  ")
	if err := q.fs.WriteDurable(filepath.Join(dir, "manifest.json"), append(mj, '\n'), 0o600); err != nil {
		os.RemoveAll(dir)
		return "", fmt.Errorf("quarantine manifest: %w", err)
	}
	m.Dir = dir
	return dir, nil
}

// sharesInode reports whether a and b name one file.
func sharesInode(a, b string) bool {
	fa, err := os.Lstat(a)
	if err != nil {
		return false
	}
	fb, err := os.Lstat(b)
	return err == nil && os.SameFile(fa, fb)
}

// Get finds an entry by id (or a unique prefix of one).
func (q Quarantine) Get(id string) (*Manifest, error) {
	all, err := q.List()
	if err != nil {
		return nil, err
	}
	var hit *Manifest
	for _, m := range all {
		if m.ID == id {
			return m, nil
		}
		if strings.HasPrefix(m.ID, id) {
			if hit != nil {
				return nil, idError{fmt.Sprintf("quarantine id %q is ambiguous", id)}
			}
			hit = m
		}
	}
	if hit == nil {
		return nil, idError{fmt.Sprintf("no quarantine entry %q", id)}
	}
	return hit, nil
}

// ErrUnknownID is what Get's error is (errors.Is) for an ID that names no entry, or several.
var ErrUnknownID = errors.New("unknown quarantine id")

type idError struct{ msg string }

func (e idError) Error() string        { return e.msg }
func (e idError) Is(target error) bool { return target == ErrUnknownID }

// Bytes reads an entry's original bytes and checks them against the manifest. The entry of
// a tail cut holds only the bytes the cut removed: see Join.
func (m *Manifest) Bytes() ([]byte, error) {
	if m.Prefix > 0 {
		return nil, fmt.Errorf("quarantine %s holds the original's bytes from offset %d on (a tail cut); its first %d bytes are the file's: %w", m.ID, m.Prefix, m.Prefix, ErrTail)
	}
	// The original's Size bytes: a linked entry (see PutLinked) may hold more after them,
	// what an app that held the original open wrote into it after the heal's rename.
	if m.Size < 0 {
		return nil, fmt.Errorf("quarantine %s: the manifest's size is %d", m.ID, m.Size)
	}
	f, err := os.Open(filepath.Join(m.Dir, m.File))
	if err != nil {
		return nil, err
	}
	defer f.Close()
	b := make([]byte, m.Size)
	if _, err := io.ReadFull(f, b); err != nil || sha(b) != m.SHA256 {
		return nil, fmt.Errorf("quarantine %s: bytes do not match the manifest's sha256", m.ID)
	}
	return b, nil
}

// Holds is the number of the original's bytes the entry holds: all of them, or, of a tail
// cut's entry, those from Prefix on.
func (m *Manifest) Holds() int64 { return m.Size - m.Prefix }

// ErrTail is what Bytes' error is (errors.Is) for the entry of a tail cut.
var ErrTail = errors.New("the entry holds the tail a cut removed")

// Join rebuilds the original of a tail cut's entry from cur, the file's bytes now: the cut
// left its prefix there, and what the app appended since follows it. It fails, saying why,
// when cur no longer starts with that prefix (the app or an operator rewrote the file since:
// the tail is still in the entry, File). For any other entry it is Bytes.
func (m *Manifest) Join(cur []byte) ([]byte, error) {
	if m.Prefix <= 0 {
		return m.Bytes()
	}
	if int64(len(cur)) < m.Prefix || sha(cur[:m.Prefix]) != m.PrefixSHA256 {
		return nil, fmt.Errorf("quarantine %s holds the original's bytes from offset %d on (a tail cut), and the file no longer starts with the %d bytes the cut left (rewritten since): nothing restored; the removed bytes are in %s", m.ID, m.Prefix, m.Prefix, filepath.Join(m.Dir, m.File))
	}
	tail, err := os.ReadFile(filepath.Join(m.Dir, m.File))
	if err != nil {
		return nil, err
	}
	b := make([]byte, 0, m.Prefix+int64(len(tail)))
	b = append(append(b, cur[:m.Prefix]...), tail...)
	if sha(b) != m.SHA256 {
		return nil, fmt.Errorf("quarantine %s: the file's prefix and the entry's bytes do not make the original the manifest's sha256 names", m.ID)
	}
	return b, nil
}

// Prune removes entries older than maxAge, then the oldest ones while the total is over
// maxBytes. Zero disables a bound. An entry counts what it occupies on disk (its blocks:
// see DiskUsage), never less than it holds.
func (q Quarantine) Prune(now time.Time, maxAge time.Duration, maxBytes int64) (removed int, err error) {
	removed, _, err = q.PruneBytes(now, maxAge, maxBytes)
	return removed, err
}

// PruneBytes is Prune, also returning the bytes on disk it freed.
func (q Quarantine) PruneBytes(now time.Time, maxAge time.Duration, maxBytes int64) (removed int, freed int64, err error) {
	all, err := q.List()
	if err != nil {
		return 0, 0, err
	}
	size := make([]int64, len(all))
	var total int64
	for i, m := range all {
		size[i] = max(DiskUsage(m.Dir), m.Holds())
		total += size[i]
	}
	for i, m := range all {
		old := maxAge > 0 && now.Sub(m.Created) > maxAge
		over := maxBytes > 0 && total > maxBytes
		if !old && !over {
			continue
		}
		if err := os.RemoveAll(m.Dir); err != nil {
			return removed, freed, err
		}
		total -= size[i]
		freed += size[i]
		removed++
	}
	return removed, freed, nil
}

// Usage is what the quarantine occupies on disk now.
func (q Quarantine) Usage() int64 { return DiskUsage(q.Root) }

// MarkRolledBack records, in the entry id names, that the change it was kept for never
// happened (a SQLite store's heal that SQLite refused: the store holds what the entry does).
func (q Quarantine) MarkRolledBack(id string) error {
	m, err := q.Get(id)
	if err != nil {
		return err
	}
	return q.mark(m.Dir, StatusRolledBack)
}
