//go:build !race

package race

const raceEnabled = false
