//go:build !race

package groups_test

const raceEnabled = false
