//go:build !race

package scramble

const raceEnabled = false
