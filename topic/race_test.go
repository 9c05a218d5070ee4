//go:build race

package topic

const raceEnabled = true
