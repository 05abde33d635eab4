package state

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"time"
)

// A file that was deleted (and that nothing brings back) keeps its last-good copy for the
// retention window only: the user deleted it, and its words are not kept for ever in the
// state dir. The deletion is marked beside the copy (<key>.gone, holding the time); a copy
// whose mark is older than the window goes with its mark, and a file that comes back (a
// new copy is written) loses its mark.

const goneSuffix = ".gone"

func (l LastGood) goneFile(path string) string { return l.file(path) + goneSuffix }

// MarkGone records that path was deleted at now, when it has a copy (an existing mark is
// kept: the window runs from the first deletion seen).
func (l LastGood) MarkGone(path string, now time.Time) error {
	if l.Root == "" {
		return nil
	}
	if _, err := os.Lstat(l.file(path)); err != nil {
		return nil // no copy: nothing to forget
	}
	if _, err := os.Lstat(l.goneFile(path)); err == nil {
		return nil
	}
	return l.fs.ReplaceAtomic(l.goneFile(path), []byte(now.UTC().Format(time.RFC3339Nano)+"\n"), 0o600)
}

// clearGone drops path's deletion mark: it is there again.
func (l LastGood) clearGone(path string) {
	if l.Root != "" {
		os.Remove(l.goneFile(path))
	}
}

// PruneGone removes the copies of files deleted more than window before now, with their
// marks. A zero window keeps them.
func (l LastGood) PruneGone(now time.Time, window time.Duration) (removed int, err error) {
	if l.Root == "" || window <= 0 {
		return 0, nil
	}
	ents, err := os.ReadDir(l.Root)
	if errors.Is(err, fs.ErrNotExist) {
		return 0, nil
	}
	if err != nil {
		return 0, err
	}
	for _, e := range ents {
		name, ok := strings.CutSuffix(e.Name(), goneSuffix)
		if !ok {
			continue
		}
		mark := filepath.Join(l.Root, e.Name())
		b, err := os.ReadFile(mark)
		if err != nil {
			continue
		}
		at, err := time.Parse(time.RFC3339Nano, strings.TrimSpace(string(b)))
		if err == nil && now.Sub(at) <= window {
			continue
		}
		// Past the window (or an unreadable mark): the copy goes, then the mark.
		if err := os.Remove(filepath.Join(l.Root, name)); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return removed, err
		}
		if l.idx != nil {
			l.idx.load(l.Root, l.ownTemp)
			if k, ok := keyOf(name); ok {
				l.idx.del(k)
			}
		}
		os.Remove(mark)
		removed++
	}
	return removed, nil
}
