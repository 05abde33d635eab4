//go:build !linux

package heal

import "context"

// Elsewhere than Linux there are no open file description locks: processes sharing a state
// directory do not coordinate their heals (each still takes the app's own lock).
type pathLock struct{}

func (e *Engine) lockPath(ctx context.Context, path string) (*pathLock, error) { return nil, nil }

func (l *pathLock) release() {}
