//go:build unix

package broker

import (
	"fmt"
	"syscall"
)

// cpuTimes returns INFO cpu's used_cpu_sys, used_cpu_user and their
// _children forms: CPU seconds with 6 decimals, from getrusage.
func cpuTimes() ([4]string, bool) {
	var self, children syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &self) != nil || syscall.Getrusage(syscall.RUSAGE_CHILDREN, &children) != nil {
		return [4]string{}, false
	}
	sec := func(tv syscall.Timeval) string { return fmt.Sprintf("%d.%06d", tv.Sec, tv.Usec) }
	return [4]string{sec(self.Stime), sec(self.Utime), sec(children.Stime), sec(children.Utime)}, true
}
