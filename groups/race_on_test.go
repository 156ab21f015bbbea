//go:build race

package groups_test

// raceEnabled: the race detector slows the writer ~10×; long churn runs use
// fewer cycles under it (make test also runs them without it).
const raceEnabled = true
