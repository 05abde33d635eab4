package watcher

import "github.com/fsnotify/fsnotify"

// fsSource is the real Source: an fsnotify watcher (inotify on Linux).
type fsSource struct{ w *fsnotify.Watcher }

func newFSSource() (Source, error) {
	w, err := fsnotify.NewWatcher()
	if err != nil {
		return nil, explainInit(err)
	}
	return fsSource{w}, nil
}

func (s fsSource) Add(dir string) error          { return s.w.Add(dir) }
func (s fsSource) Remove(dir string) error       { return s.w.Remove(dir) }
func (s fsSource) Events() <-chan fsnotify.Event { return s.w.Events }
func (s fsSource) Errors() <-chan error          { return s.w.Errors }
func (s fsSource) Close() error                  { return s.w.Close() }
