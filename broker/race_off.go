//go:build !race

package broker

// raceEnabled reports a build with the race detector (rawio_linux.go).
const raceEnabled = false
