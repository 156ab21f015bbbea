//go:build race

package rzset_test

// raceEnabled: the race detector slows Pebble ~25×; the rank-block model
// walk runs without it (make test runs it so).
const raceEnabled = true
