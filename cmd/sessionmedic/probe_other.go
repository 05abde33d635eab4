//go:build !linux

package main

// probeWrite proves dir writable with a named probe file.
func probeWrite(dir string) error { return probeNamed(dir) }
