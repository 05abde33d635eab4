package lock

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"strconv"
)

// LockFile takes a generic O_EXCL token lock file for custom rules
// (`lock: {lockfile: PATH, stale: D}`). The file is created
// O_WRONLY|O_CREAT|O_EXCL|O_CLOEXEC 0644 with the body "<pid>\n". An existing
// file is stale when its mtime is older than o.Stale (o.Stale == 0: never
// stale) and is then broken by compare-and-remove. Release unlinks the file
// only if it is still the inode we created and holds our bytes; otherwise it
// leaves it and returns ErrLost.
func LockFile(ctx context.Context, path string, o Options) (Held, error) {
	return acquire(ctx, o, path, func() (Held, error) {
		if o.Probe {
			s, err := readSnapshot(path)
			switch {
			case errors.Is(err, fs.ErrNotExist):
				return nothingHeld{}, nil
			case err != nil:
				return nil, fmt.Errorf("read %s: %w", path, err)
			}
			if age := o.now().Sub(s.mtime); o.Stale <= 0 || age <= o.Stale {
				return nil, busy(path, fmt.Sprintf("held by %q, age %s", truncate(s.data, 64), age.Round(1e6)))
			}
			return nothingHeld{}, nil // stale: a heal would break it
		}
		body := []byte(strconv.Itoa(os.Getpid()) + "\n")
		snap, err := createExcl(path, 0o644, body, o.Faults)
		if err == nil {
			return &tokenHeld{path: path, snap: snap}, nil
		}
		if !errors.Is(err, fs.ErrExist) {
			return nil, fmt.Errorf("create %s: %w", path, err)
		}
		s, err := readSnapshot(path)
		if err != nil {
			if errors.Is(err, fs.ErrNotExist) {
				return nil, errRetry
			}
			return nil, fmt.Errorf("read %s: %w", path, err)
		}
		age := o.now().Sub(s.mtime)
		if o.Stale <= 0 || age <= o.Stale {
			return nil, busy(path, fmt.Sprintf("held by %q, age %s", truncate(s.data, 64), age.Round(1e6)))
		}
		if _, err := removeIfSame(path, s); err != nil {
			return nil, fmt.Errorf("break stale %s: %w", path, err)
		}
		return nil, errRetry
	})
}

func truncate(b []byte, n int) string {
	if len(b) > n {
		b = b[:n]
	}
	return string(b)
}
