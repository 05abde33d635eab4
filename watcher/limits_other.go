//go:build !linux

package watcher

import "fmt"

func explainAdd(dir string, err error) error { return fmt.Errorf("watch %s: %w", dir, err) }

func explainInit(err error) error { return fmt.Errorf("watcher: %w", err) }
