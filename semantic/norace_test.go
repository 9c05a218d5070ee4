//go:build !race

package semantic_test

const raceEnabled = false
