// Package proccpu reads a process's CPU time from /proc, for the
// benchmark commands that compare servers by CPU per request.
package proccpu

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// Reader returns a reader of pid's CPU time: the sum of its threads'
// run time (the first field of /proc/PID/task/TID/schedstat, in
// nanoseconds; a thread that exits takes its time with it), or user +
// system time from /proc/PID/stat (10 ms ticks) where there is no
// schedstat.
func Reader(pid int) (func() (time.Duration, error), string, error) {
	dir := fmt.Sprintf("/proc/%d/task", pid)
	sched := func() (time.Duration, error) {
		ents, err := os.ReadDir(dir)
		if err != nil {
			return 0, err
		}
		var sum time.Duration
		for _, e := range ents {
			data, err := os.ReadFile(filepath.Join(dir, e.Name(), "schedstat"))
			if err != nil {
				if errors.Is(err, os.ErrNotExist) || errors.Is(err, syscall.ESRCH) {
					continue // the thread exited
				}
				return 0, err
			}
			f := strings.Fields(string(data))
			if len(f) == 0 {
				return 0, fmt.Errorf("%s/%s/schedstat: empty", dir, e.Name())
			}
			ns, err := strconv.ParseInt(f[0], 10, 64)
			if err != nil {
				return 0, fmt.Errorf("%s/%s/schedstat: %w", dir, e.Name(), err)
			}
			sum += time.Duration(ns)
		}
		return sum, nil
	}
	if _, err := sched(); err == nil {
		return sched, "/proc/PID/task/*/schedstat", nil
	}
	stat := func() (time.Duration, error) {
		data, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
		if err != nil {
			return 0, err
		}
		// The command name (field 2) may hold spaces; fields count from its ")".
		f := strings.Fields(string(data[strings.LastIndexByte(string(data), ')')+1:]))
		if len(f) < 13 {
			return 0, fmt.Errorf("/proc/%d/stat: %d fields", pid, len(f))
		}
		utime, err1 := strconv.ParseInt(f[11], 10, 64)
		stime, err2 := strconv.ParseInt(f[12], 10, 64)
		if err := errors.Join(err1, err2); err != nil {
			return 0, fmt.Errorf("/proc/%d/stat: %w", pid, err)
		}
		return time.Duration(utime+stime) * 10 * time.Millisecond, nil
	}
	if _, err := stat(); err != nil {
		return nil, "", err
	}
	return stat, "/proc/PID/stat, 10 ms ticks", nil
}

// Self returns this process's user and system CPU time so far
// (getrusage, which keeps the time of threads that exited), for Go
// benchmarks that run the server in-process. getrusage of RUSAGE_SELF
// fails only on a bad buffer: Self panics if it does.
func Self() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		panic(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
