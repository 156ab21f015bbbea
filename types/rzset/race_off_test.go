//go:build !race

package rzset_test

const raceEnabled = false
