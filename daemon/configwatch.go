package daemon

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/fsnotify/fsnotify"
	"github.com/sessionmedic/sessionmedic/daemon/events"
)

// configWatch notices changes of the policy file on disk. It watches directories, not the
// file: editors replace the file by a rename, and Kubernetes updates a mounted ConfigMap by
// swapping the directory's ..data symlink, which the file resolves through. Where the path
// resolves through symlinks (the file itself a link, a chain of links, a linked directory on
// the way), the directory of every link met and of the file it ends at are watched too, so an
// in-place write or a replace of the target in another directory is seen; the resolution is
// made again after every event, since any link of it may be pointed elsewhere.
//
// The watch and its state belong to the goroutine running run.
type configWatch struct {
	path  string              // absolute
	w     *fsnotify.Watcher   //
	dirs  map[string]bool     // the directories watched now
	names map[string]struct{} // the paths whose events matter: path, each link met, the end
	last  string              // what the file held when last looked at (see state)
}

func newConfigWatch(path string) (*configWatch, error) {
	abs, err := filepath.Abs(path)
	if err != nil {
		return nil, fmt.Errorf("watch policy %s: %w", path, err)
	}
	w, err := fsnotify.NewWatcher()
	if err != nil {
		return nil, fmt.Errorf("watch policy %s: %w", path, err)
	}
	// The file's own directory is watched from the start and always: it holds the name
	// the operator gave.
	if err := w.Add(filepath.Dir(abs)); err != nil {
		w.Close()
		return nil, fmt.Errorf("watch policy %s: %w", path, err)
	}
	c := &configWatch{path: abs, w: w, dirs: map[string]bool{filepath.Dir(abs): true}}
	c.follow()
	c.last = c.state()
	return c, nil
}

// maxLinks bounds a resolution, as the kernel's ELOOP does.
const maxLinks = 40

// resolve walks path one component at a time, as the kernel resolves it, and returns every
// path it goes through whose change would change what path names: each symlink met (a link
// in a directory component, like ..data, as well as the file's own), the file it ends at,
// and, where it ends early because a component is missing, that component (its creation
// matters too).
func resolve(path string) []string {
	out := []string{path}
	cur := "/"
	rest := strings.Split(strings.TrimPrefix(path, "/"), "/")
	for links := 0; len(rest) > 0; {
		c := rest[0]
		rest = rest[1:]
		switch c {
		case "", ".":
			continue
		case "..":
			cur = filepath.Dir(cur)
			continue
		}
		next := filepath.Join(cur, c)
		fi, err := os.Lstat(next)
		if err != nil {
			return append(out, next)
		}
		if fi.Mode()&os.ModeSymlink == 0 {
			cur = next
			continue
		}
		out = append(out, next)
		if links++; links > maxLinks {
			return out
		}
		target, err := os.Readlink(next)
		if err != nil {
			return out
		}
		if filepath.IsAbs(target) {
			cur = "/"
		}
		rest = append(strings.Split(target, "/"), rest...)
	}
	return append(out, cur)
}

// follow resolves the path again and watches the directories of what it goes through now,
// dropping the watches no longer needed (the file's own directory stays). It reports
// whether the resolution changed.
func (c *configWatch) follow() bool {
	names := map[string]struct{}{}
	want := map[string]bool{filepath.Dir(c.path): true}
	for _, p := range resolve(c.path) {
		names[p] = struct{}{}
		want[filepath.Dir(p)] = true
	}
	changed := len(names) != len(c.names)
	for p := range names {
		if _, ok := c.names[p]; !ok {
			changed = true
		}
	}
	c.names = names
	for d := range want {
		if !c.dirs[d] && c.w.Add(d) == nil {
			c.dirs[d] = true
		}
	}
	for d := range c.dirs {
		if !want[d] {
			_ = c.w.Remove(d) // fails harmlessly for a directory already gone
			delete(c.dirs, d)
		}
	}
	return changed
}

// matters reports whether an event on name can change what the file holds.
func (c *configWatch) matters(name string) bool {
	_, ok := c.names[filepath.Clean(name)]
	return ok
}

// state is the file's content, or why it has none that can be read: a FIFO or a device
// swapped in is never read (a reload then says what is wrong with it).
func (c *configWatch) state() string {
	fi, err := os.Stat(c.path)
	if err != nil {
		return "error: " + err.Error()
	}
	if !fi.Mode().IsRegular() {
		return "mode: " + fi.Mode().String()
	}
	f, err := os.Open(c.path)
	if err != nil {
		return "error: " + err.Error()
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, 1<<20+1))
	if err != nil {
		return "error: " + err.Error()
	}
	return "content: " + string(b)
}

// run sends on out when the file changed, once events about it (or about a link it resolves
// through) have been quiet for debounce, until ctx is done.
func (c *configWatch) run(ctx context.Context, out chan<- struct{}, debounce time.Duration, log *slog.Logger) {
	defer c.w.Close()
	timer := time.NewTimer(time.Hour)
	timer.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case ev, ok := <-c.w.Events:
			if !ok {
				return
			}
			// Judged by the resolution before the event and after it: a link pointed
			// elsewhere is an event on the old resolution's names, a link or file that
			// appears one on the new resolution's.
			hit := c.matters(ev.Name)
			if c.follow() || hit || c.matters(ev.Name) {
				timer.Reset(debounce)
			}
		case err, ok := <-c.w.Errors:
			if !ok {
				return
			}
			log.Error(events.WatchError, "err", fmt.Errorf("watch policy %s: %w", c.path, err))
			c.follow()
			timer.Reset(debounce) // an overflow may have lost the event: look anyway
		case <-timer.C:
			c.follow() // a directory created since the last event is watched before the read
			if s := c.state(); s != c.last {
				c.last = s
				select {
				case out <- struct{}{}:
				default: // a reload is already pending
				}
			}
		}
	}
}
