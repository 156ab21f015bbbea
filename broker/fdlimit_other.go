//go:build !unix

package broker

// openFilesLimit is unknown off Unix.
func openFilesLimit() uint64 { return 0 }
