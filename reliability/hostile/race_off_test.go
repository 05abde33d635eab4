//go:build linux && !race

package hostile

const raceEnabled = false
