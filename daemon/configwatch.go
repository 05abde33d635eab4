package daemon

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"time"

	"github.com/fsnotify/fsnotify"
	"github.com/sessionmedic/sessionmedic/daemon/events"
)

// configWatch notices changes of the policy file on disk. It watches the file's directory,
// not the file: editors replace the file by a rename, and Kubernetes updates a mounted
// ConfigMap by swapping the directory's ..data symlink, which the file resolves through.
type configWatch struct {
	path, base string
	w          *fsnotify.Watcher
	last       string // what the file held when last looked at (see state)
}

func newConfigWatch(path string) (*configWatch, error) {
	w, err := fsnotify.NewWatcher()
	if err != nil {
		return nil, fmt.Errorf("watch policy %s: %w", path, err)
	}
	if err := w.Add(filepath.Dir(path)); err != nil {
		w.Close()
		return nil, fmt.Errorf("watch policy %s: %w", path, err)
	}
	c := &configWatch{path: path, base: filepath.Base(path), w: w}
	c.last = c.state()
	return c, nil
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

// run sends on out when the file changed, once events about it (or ..data) have been quiet
// for debounce, until ctx is done.
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
			if n := filepath.Base(ev.Name); n == c.base || n == "..data" {
				timer.Reset(debounce)
			}
		case err, ok := <-c.w.Errors:
			if !ok {
				return
			}
			log.Error(events.WatchError, "err", fmt.Errorf("watch policy %s: %w", c.path, err))
			timer.Reset(debounce) // an overflow may have lost the event: look anyway
		case <-timer.C:
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
