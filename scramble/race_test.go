//go:build race

package scramble

const raceEnabled = true
