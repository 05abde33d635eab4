//go:build race

package race

const raceEnabled = true
