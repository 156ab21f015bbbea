//go:build unix

package broker

import "syscall"

// openFilesLimit returns the process's limit on open files (RLIMIT_NOFILE,
// soft; Go raises it to the hard limit at start-up), or 0 when unknown.
func openFilesLimit() uint64 {
	var r syscall.Rlimit
	if syscall.Getrlimit(syscall.RLIMIT_NOFILE, &r) != nil {
		return 0
	}
	return r.Cur
}
